#!/usr/bin/env bash
# Installs, from Debian's packages, whatever kjit needs to build and test that
# is not already installed. Idempotent: a second run installs nothing.
set -euo pipefail

packages=(
  cmake g++ make ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libspdlog-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  libssl-dev libgtest-dev libgmock-dev
  llvm-19-dev libhiredis-dev libxxhash-dev redis-server
  clang-19 libclang-rt-19-dev libseccomp-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# The CUDA toolkit is optional: without it kjit builds, and CUDA requests fail
# with FAILED_PRECONDITION naming what is missing.
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [[ ! -e "$cuda_home/lib64/libnvrtc.so" && ! -e "$cuda_home/lib64/libnvrtc.so.13" ]]; then
  echo "install-deps: no CUDA toolkit at $cuda_home; kjit will build in compile-disabled mode"
fi
