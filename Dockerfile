# kjit's image: kjitd and the kjit CLI on Debian 12, with NVIDIA's NVRTC,
# nvJitLink and nvFatbin (and the headers kernels include) from NVIDIA's
# Python wheels, so it compiles CUDA with no toolkit mounted, and the default
# Triton build (Debian's Python 3.11 and triton from PyPI) for Triton IR. It runs as the
# unprivileged user kjit (uid 10001) and serves on /run/kjit/kjitd.sock:
#
#   podman build --format docker --target runtime -t kjit .            # compiles kjitd and kjit here
#   podman build --format docker --target runtime-prebuilt -t kjit .   # takes build/bin/kjitd and kjit
#                                                                      # (make build, on Debian 12)
#   install -d -o 10001 -g 10001 -m 0750 /run/kjit
#   podman run -d -v /run/kjit:/run/kjit kjit
#   KJIT_SOCKET=/run/kjit/kjitd.sock kjit health
#
# --format docker keeps the HEALTHCHECK (an OCI image config has no field for
# it). Stages a target does not use are skipped (BuildKit does; podman's
# --skip-unused-stages is on by default), so runtime-prebuilt never builds
# from source and runtime never needs build/bin.

# The CUDA pieces kjitd loads with dlopen, as scripts/install-deps.sh installs
# them for a checkout. Override with --build-arg CUDA_WHEELS="...".
ARG CUDA_WHEELS="nvidia-cuda-nvrtc==13.5.* nvidia-nvjitlink==13.5.* nvidia-nvfatbin==13.5.* nvidia-cuda-crt==13.5.* nvidia-cuda-runtime==13.5.* nvidia-cuda-cccl>=13,<14"
# Only for the build stage: CMake finds the CUDA headers through nvcc.
ARG CUDA_NVCC_WHEEL="nvidia-cuda-nvcc==13.5.*"
ARG KJIT_UID=10001
ARG TRITON_BUILD="triton==3.9.0"

# --- NVIDIA's wheels, installed with pip into a plain prefix (no Python at run time)
FROM debian:12 AS cuda-wheels
ARG CUDA_WHEELS
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-pip ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# set -f: the version patterns are for pip, not for the shell.
RUN set -f \
 && PIP_ROOT_USER_ACTION=ignore pip install --no-cache-dir --no-compile --no-deps --disable-pip-version-check \
      --target /opt/kjit/cuda-wheels $CUDA_WHEELS \
 && set +f \
 && ls /opt/kjit/cuda-wheels/nvidia/cu13/lib/libnvrtc.so.* /opt/kjit/cuda-wheels/nvidia/cu13/lib/libnvJitLink.so.* \
      /opt/kjit/cuda-wheels/nvidia/cu13/lib/libnvfatbin.so.*

# --- the default Triton build (upstream Triton), in a virtual environment
# of Debian's Python: kjitd runs Triton IR through it (its own LLVM and
# ptxas). Override with --build-arg TRITON_BUILD="triton==X.Y.Z".
FROM debian:12 AS triton-build
ARG TRITON_BUILD
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/kjit/triton-builds/triton \
 && PIP_ROOT_USER_ACTION=ignore /opt/kjit/triton-builds/triton/bin/pip install --no-cache-dir \
      --disable-pip-version-check "$TRITON_BUILD" \
 && /opt/kjit/triton-builds/triton/bin/python -I -c "import triton; print('triton', triton.__version__)"

# --- what every runtime image has: the shared libraries kjitd and kjit link
# (`ldd build/bin/kjitd`), the wheels, the user, the configuration
FROM debian:12 AS runtime-base
ARG KJIT_UID
# No manuals, documentation (but the copyright files) or translations for
# what is installed here; no .deb files or apt caches left behind.
RUN printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
      'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/locale/*' 'path-exclude=/usr/share/info/*' \
      >/etc/dpkg/dpkg.cfg.d/kjit-slim \
 && apt-get update \
 && apt-get install -y --no-install-recommends \
      libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 libc-ares2 libre2-9 \
      libspdlog1.10 libfmt9 libtomlplusplus3 \
      libllvm19 libhiredis0.14 libxxhash0 libssl3 libseccomp2 libsystemd0 \
      libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
      python3 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt /var/log/dpkg.log
RUN groupadd --system --gid "$KJIT_UID" kjit \
 && useradd --system --uid "$KJIT_UID" --gid kjit --home-dir /var/cache/kjit --no-create-home \
      --shell /usr/sbin/nologin kjit \
 && install -d -o kjit -g kjit -m 0750 /run/kjit /var/cache/kjit
COPY --from=cuda-wheels /opt/kjit/cuda-wheels /opt/kjit/cuda-wheels
COPY --from=triton-build /opt/kjit/triton-builds /opt/kjit/triton-builds
COPY deploy/container/kjitd.toml /etc/kjit/kjitd.toml
ENV KJIT_SOCKET=/run/kjit/kjitd.sock
VOLUME /run/kjit
USER kjit
WORKDIR /var/cache/kjit
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["/usr/local/bin/kjit", "health"]
ENTRYPOINT ["/usr/local/bin/kjitd"]
CMD ["--config", "/etc/kjit/kjitd.toml"]

# --- the host's binaries, from the build context (make build on Debian 12),
# without their debug sections
FROM debian:12 AS prebuilt-bin
RUN apt-get update && apt-get install -y --no-install-recommends binutils && rm -rf /var/lib/apt/lists/*
# scripts/container-test.sh removes this stage's images of earlier runs.
LABEL org.kjit.stage=prebuilt-bin
COPY build/bin/kjitd build/bin/kjit /out/
RUN strip --strip-debug /out/kjitd /out/kjit

FROM runtime-base AS runtime-prebuilt
COPY --from=prebuilt-bin /out/kjitd /out/kjit /usr/local/bin/
# Every library is there, the configuration is valid and the toolkits load
# (without the Landlock check, which is the build host's, not the image's).
RUN ["/usr/local/bin/kjitd", "--check-config", "--config", "/etc/kjit/kjitd.toml", "--compile-workers", "0"]

# --- the wheels as a toolkit CMake can find (FindCUDAToolkit wants nvcc and
# an unversioned libcudart), for the build stage's headers only
FROM cuda-wheels AS cuda-build-toolkit
ARG CUDA_NVCC_WHEEL
RUN set -f \
 && PIP_ROOT_USER_ACTION=ignore pip install --no-cache-dir --no-compile --no-deps --disable-pip-version-check \
      --target /tmp/nvcc $CUDA_NVCC_WHEEL \
 && cp -a /tmp/nvcc/nvidia/cu13/bin /opt/kjit/cuda-wheels/nvidia/cu13/ \
 && ln -s libcudart.so.13 /opt/kjit/cuda-wheels/nvidia/cu13/lib/libcudart.so \
 && rm -rf /tmp/nvcc

# --- kjitd and kjit built from source with Debian's packages, against the
# wheels' headers (nvrtc.h, nvJitLink.h, nvFatbin.h); the toolkit they find
# by default is the runtime image's /opt/kjit/cuda-wheels
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
# Debian 12's CMake (3.25.1) stops in FindCUDAToolkit when a CUDA toolkit of
# version 10 or later has no nvToolsExt, as CUDA 12 and later have none;
# CMake 3.25.2 checks for the target first, as this line then does.
RUN sed -i 's/^\( *\)if(CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)$/\1if(TARGET CUDA::nvToolsExt AND CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)/' \
      /usr/share/cmake-3.25/Modules/FindCUDAToolkit.cmake
COPY --from=cuda-build-toolkit /opt/kjit/cuda-wheels /opt/kjit/cuda-wheels
COPY . .
RUN if ! cmake --preset default -DBUILD_TESTING=OFF -DKJIT_LOCAL_TOOLKIT_PREFIX=/opt/kjit/cuda-wheels \
          -DCUDAToolkit_ROOT=/opt/kjit/cuda-wheels/nvidia/cu13 >/tmp/configure.log 2>&1; then \
      cat /tmp/configure.log; exit 1; \
    fi \
 && cat /tmp/configure.log \
 && if ! grep -q "kjit: CUDA toolkit headers from /opt/kjit/cuda-wheels" /tmp/configure.log; then \
      echo "CMake did not find the wheels' CUDA headers: kjitd would not compile CUDA" >&2; exit 1; \
    fi \
 && cmake --build build -j"$(nproc)" --target kjitd kjit \
 && mkdir /out && cp build/bin/kjitd build/bin/kjit /out/ && strip --strip-debug /out/kjitd /out/kjit

FROM runtime-base AS runtime
COPY --from=build /out/kjitd /out/kjit /usr/local/bin/
# Every library is there, the configuration is valid and the toolkits load
# (without the Landlock check, which is the build host's, not the image's).
RUN ["/usr/local/bin/kjitd", "--check-config", "--config", "/etc/kjit/kjitd.toml", "--compile-workers", "0"]
