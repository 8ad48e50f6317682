# First draft: builds kjit on Debian 12 with Debian's packages. The CUDA
# toolkit is not in Debian 12's main archive: mount one at /usr/local/cuda (or
# set CUDA_HOME) for NVRTC/nvJitLink; without it kjitd runs and CUDA requests
# fail with FAILED_PRECONDITION.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh
COPY . .
RUN cmake --preset default -DBUILD_TESTING=OFF && cmake --build build -j"$(nproc)" --target kjitd kjit

FROM debian:12
RUN apt-get update && apt-get install -y --no-install-recommends \
      libgrpc++1.51 libprotobuf32 libspdlog1.10 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/bin/kjitd /src/build/bin/kjit /usr/local/bin/
ENV KJIT_SOCKET=/run/kjit/kjitd.sock
ENTRYPOINT ["/usr/local/bin/kjitd", "--socket", "/run/kjit/kjitd.sock"]
