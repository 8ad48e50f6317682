#!/usr/bin/env bash
# Installs, from Debian's packages, whatever kjit needs to build and test that
# is not already installed. Idempotent: a second run installs nothing.
set -euo pipefail

# Each sizable step prints how long it took: step_started before it,
# step_took WHAT after.
step_started() { step_start=$SECONDS; }
step_took() { echo "install-deps: $1 took $((SECONDS - step_start)) s"; }

# The pip steps after the Debian packages install into places of their own
# (a prefix or a virtual environment each) and mostly wait on the network
# and the disk: they run side by side. side_by_side WHAT COMMAND... starts
# one, its output kept apart; all_side_by_side_done waits for them all and
# prints each one's output and time, in the order they were started.
side_by_side_pids=()
side_by_side_logs=()
side_by_side() {
  local what=$1 log
  shift
  log=$(mktemp -d "${TMPDIR:-/tmp}/kjit-install-deps.XXXXXX")
  ( step_started; "$@" || true; step_took "$what" ) >"$log/out" 2>"$log/err" &
  side_by_side_pids+=($!)
  side_by_side_logs+=("$log")
}
all_side_by_side_done() {
  local i
  echo "install-deps: ${#side_by_side_pids[@]} pip steps running side by side; their output follows when they end"
  for i in "${!side_by_side_pids[@]}"; do
    wait "${side_by_side_pids[$i]}" || true
    cat "${side_by_side_logs[$i]}/out"
    cat "${side_by_side_logs[$i]}/err" >&2
    rm -rf "${side_by_side_logs[$i]}"
  done
  side_by_side_pids=()
  side_by_side_logs=()
}

packages=(
  cmake g++ make ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libspdlog-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  libssl-dev openssl libgtest-dev libgmock-dev
  llvm-19-dev libhiredis-dev libxxhash-dev redis-server
  clang-19 libclang-rt-19-dev libseccomp-dev prometheus-cpp-dev
  libamdhip64-dev libamd-comgr-dev rocm-device-libs libmsgpack-cxx-dev
  liblld-19-dev lld-19 clang-tools-19
  libsystemd-dev
  # A real Prometheus server for tests/metrics (kjitd scraped over TLS with a
  # token); the test is skipped without it.
  prometheus
)

step_started
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
step_took "apt install"

# The CUDA toolkit is optional: without it kjit builds, and CUDA requests fail
# with FAILED_PRECONDITION naming what is missing.
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [[ ! -e "$cuda_home/lib64/libnvrtc.so" && ! -e "$cuda_home/lib64/libnvrtc.so.13" ]]; then
  echo "install-deps: no CUDA toolkit at $cuda_home; kjit will build in compile-disabled mode"
fi

# NVIDIA's Python wheels: NVRTC, nvJitLink and nvFatbin newer than most
# installed toolkits (they compile for architectures the system CUDA may not
# know), with the headers kernels include (crt/, cuda_fp16.h and the rest of
# the runtime's headers, CCCL's cuda/std, cub, thrust). pip's --target puts
# them in a prefix of this checkout, so no root is needed and nothing outside
# the repository changes; kjitd finds them there (KJIT_LOCAL_TOOLKIT_PREFIX).
# A stamp naming the requested set makes a second run a no-op; set
# KJIT_REFRESH_CUDA_WHEELS=1 to fetch the newest again. KJIT_CUDA_WHEELS_PREFIX
# installs elsewhere (configure with -DKJIT_LOCAL_TOOLKIT_PREFIX= to match).
# kjit builds without them, so any failure here is a warning.
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wheels_prefix=${KJIT_CUDA_WHEELS_PREFIX:-$repo_root/.deps/cuda-wheels}
wheels=(nvidia-cuda-nvrtc nvidia-nvjitlink nvidia-nvfatbin nvidia-cuda-crt nvidia-cuda-cccl nvidia-cuda-runtime)
wheels_stamp="$wheels_prefix/.kjit-wheels"

wheels_present() {
  [[ -f "$wheels_stamp" && "$(cat "$wheels_stamp")" == "${wheels[*]}" ]] || return 1
  local lib
  for lib in libnvrtc.so libnvJitLink.so libnvfatbin.so; do
    compgen -G "$wheels_prefix/nvidia/cu*/lib/$lib.*" >/dev/null || return 1
  done
}

# install_wheel_set WHAT PREFIX SIZE_NOTE WHEEL...: pip-installs the wheels
# into PREFIX (stamped with the set), replacing what was there only on
# success; any failure is a warning naming WHAT.
install_wheel_set() {
  local what=$1 prefix=$2 size_note=$3
  shift 3
  local stamp="$prefix/.kjit-wheels"
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "install-deps: WARNING: python3 -m pip is not available (Debian: python3-pip); skipping $what" >&2
    return 1
  fi
  # The prefix is replaced whole below; never a directory this script did
  # not make.
  if [[ -d "$prefix" && ! -f "$stamp" && -n "$(ls -A "$prefix")" ]]; then
    echo "install-deps: WARNING: $prefix exists and was not made by install-deps; skipping $what" >&2
    return 1
  fi
  # Into a fresh directory, then swapped in: pip --target does not replace
  # a package directory (nvidia/) that is already there, and a failed
  # download must leave the previous set usable.
  local staging
  if ! mkdir -p "$(dirname "$prefix")" || ! staging=$(mktemp -d "$prefix.new.XXXXXX"); then
    echo "install-deps: WARNING: cannot create $prefix; skipping $what" >&2
    return 1
  fi
  # mktemp's 0700 would keep a kjitd running as another user out.
  chmod u=rwx,go=rx "$staging"
  echo "install-deps: installing $* into $prefix$size_note"
  if PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-input --upgrade \
       --target "$staging" "$@"; then
    printf '%s\n' "$*" >"$staging/.kjit-wheels"
    rm -rf "$prefix"
    mv "$staging" "$prefix"
  else
    rm -rf "$staging"
    echo "install-deps: WARNING: pip could not install $what (offline?)" >&2
    return 1
  fi
}

install_wheels() {
  if install_wheel_set "the CUDA wheels" "$wheels_prefix" "" "${wheels[@]}"; then
    echo "install-deps: CUDA wheels in $wheels_prefix:" \
      "$(cd "$wheels_prefix" && ls -d nvidia_*.dist-info 2>/dev/null | sed 's/\.dist-info$//' | tr '\n' ' ')"
  else
    echo "install-deps: kjit builds without the CUDA wheels, and targets newer than the system toolkit stay" \
      "unavailable" >&2
  fi
}

cuda_wheels_step() {
  if [[ "${KJIT_REFRESH_CUDA_WHEELS:-0}" != 1 ]] && wheels_present; then
    echo "install-deps: CUDA wheels present in $wheels_prefix"
  else
    install_wheels
  fi
}
step_started  # the pip steps, side by side
side_by_side "CUDA wheels" cuda_wheels_step

# tileiras, NVIDIA's Tile IR assembler, for Tile IR input (cuTile's
# bytecode): opt-in with KJIT_INSTALL_TILEIRAS=1, since it is large. The
# cuda-tile[tileiras] set brings tileiras with the ptxas and libnvvm it runs
# (nvidia/cu13/bin, lib, nvvm) and cuTile itself (tests/tileir exports its
# kernels with it): about 530 MB installed. pip reads its index from its own
# configuration. Into .deps/tileiras, beside the CUDA wheels, where kjitd
# looks for it (default_local_tileiras_prefix), and apart from them: its
# CUDA runtime and crt wheels are of tileiras' release, not the newer ones
# NVRTC compiles against. Same stamp and swap as the CUDA wheels; any
# failure is a warning, and Tile IR requests then fail with
# FAILED_PRECONDITION saying where tileiras was looked for.
tileiras_prefix=$(dirname "$wheels_prefix")/tileiras
tileiras_wheels=("cuda-tile[tileiras]")
tileiras_stamp="$tileiras_prefix/.kjit-wheels"

tileiras_present() {
  [[ -f "$tileiras_stamp" && "$(cat "$tileiras_stamp")" == "${tileiras_wheels[*]}" ]] || return 1
  compgen -G "$tileiras_prefix/nvidia/cu*/bin/tileiras" >/dev/null
}

install_tileiras() {
  if install_wheel_set tileiras "$tileiras_prefix" " (about 530 MB)" "${tileiras_wheels[@]}"; then
    echo "install-deps: tileiras in $tileiras_prefix:" \
      "$(env -u CUDA_HOME "$tileiras_prefix"/nvidia/cu*/bin/tileiras --version 2>/dev/null | tail -n 2 | head -n 1)"
  else
    echo "install-deps: Tile IR input stays unavailable" >&2
  fi
}

tileiras_step() {
  if [[ "${KJIT_REFRESH_CUDA_WHEELS:-0}" != 1 ]] && tileiras_present; then
    echo "install-deps: tileiras present in $tileiras_prefix"
  else
    install_tileiras
  fi
}
if [[ "${KJIT_INSTALL_TILEIRAS:-0}" == 1 ]]; then
  side_by_side tileiras tileiras_step
fi

# Triton builds, for Triton IR input: each a virtual environment of its own
# under .deps/triton-builds (about 1 GB each), where kjitd looks by default
# (default_local_triton_prefix), holding one distribution of Triton at the
# version the tests were written against: upstream Triton, fbtriton (a
# Triton build with TLX) and Triton 3.8 with the uTLX plugin (TLX as a
# plugin library of stock Triton: the triton-utlx wheel, made for one Triton
# release). An entry is one requirement or several separated by spaces,
# installed together; the environment is named after the first.
# KJIT_SKIP_TRITON_BUILDS=1 leaves them out (Triton input then fails with
# FAILED_PRECONDITION naming the builds present, and the Triton tests skip
# outside CI). Built beside, then moved in whole, so a failed install leaves
# the previous environment usable; a stamp naming the requirements makes a
# second run a no-op.
triton_builds_prefix=$(dirname "$wheels_prefix")/triton-builds
triton_builds=("triton==3.9.0" "fbtriton==3.7.4" "triton==3.8.0 triton-utlx==3.8.0.post16")

install_triton_build() {
  local requirement=$1
  local -a requirements
  read -r -a requirements <<<"$requirement"
  local name=${requirements[0]/==/-}
  local env="$triton_builds_prefix/$name"
  if [[ "$(cat "$env/.kjit-triton-build" 2>/dev/null)" == "$requirement" ]] && "$env/bin/python" -c "" 2>/dev/null; then
    echo "install-deps: Triton build $name present in $env"
    return 0
  fi
  mkdir -p "$triton_builds_prefix"
  local staging="$env.new"
  rm -rf "$staging"
  echo "install-deps: installing $requirement into $env (about 1 GB)"
  # kjitd runs the environment's bin/python, which finds its environment
  # from where it is: one made beside and moved in works as made in place.
  if python3 -m venv "$staging" &&
     PIP_ROOT_USER_ACTION=ignore "$staging/bin/python" -m pip install --quiet --disable-pip-version-check \
       --no-input "${requirements[@]}"; then
    printf '%s\n' "$requirement" >"$staging/.kjit-triton-build"
    rm -rf "$env"
    mv "$staging" "$env"
    return 0
  fi
  rm -rf "$staging"
  echo "install-deps: WARNING: pip could not install $requirement; Triton input stays without it" >&2
  return 1
}

if [[ "${KJIT_SKIP_TRITON_BUILDS:-0}" != 1 ]]; then
  if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    echo "install-deps: WARNING: python3 cannot make virtual environments (Debian: python3-venv); no Triton builds" >&2
  else
    for requirement in "${triton_builds[@]}"; do
      side_by_side "Triton build $requirement" install_triton_build "$requirement"
    done
  fi
fi

# BuildGrid (PyPI, with its Redis extra for a durable ActionCache), the
# Remote Execution API server the REAPI tier's tests run against: a virtual environment of its own in .deps/buildgrid, found
# there by the tests (or at $KJIT_BGD). A stamp naming the requirement makes
# a second run a no-op; KJIT_SKIP_BUILDGRID=1 leaves it out (the REAPI tests
# then skip outside CI).
buildgrid_requirement="buildgrid[redis]==0.4.4"
buildgrid_env=$(dirname "$wheels_prefix")/buildgrid
install_buildgrid() {
  if [[ "$(cat "$buildgrid_env/.kjit-buildgrid" 2>/dev/null)" == "$buildgrid_requirement" ]] &&
     "$buildgrid_env/bin/python" -c "" 2>/dev/null; then
    echo "install-deps: BuildGrid present in $buildgrid_env"
  elif ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    echo "install-deps: WARNING: python3 cannot make virtual environments (Debian: python3-venv); no BuildGrid" >&2
  else
    echo "install-deps: installing $buildgrid_requirement into $buildgrid_env"
    rm -rf "$buildgrid_env.new"
    if python3 -m venv "$buildgrid_env.new" &&
       PIP_ROOT_USER_ACTION=ignore "$buildgrid_env.new/bin/python" -m pip install --quiet \
         --disable-pip-version-check --no-input "$buildgrid_requirement"; then
      printf '%s\n' "$buildgrid_requirement" >"$buildgrid_env.new/.kjit-buildgrid"
      rm -rf "$buildgrid_env"
      mv "$buildgrid_env.new" "$buildgrid_env"
    else
      rm -rf "$buildgrid_env.new"
      echo "install-deps: WARNING: pip could not install $buildgrid_requirement; the REAPI tests skip" >&2
    fi
  fi
}
if [[ "${KJIT_SKIP_BUILDGRID:-0}" != 1 ]]; then
  side_by_side BuildGrid install_buildgrid
fi
all_side_by_side_done
step_took "the pip steps, side by side,"
