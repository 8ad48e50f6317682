#!/usr/bin/env bash
# Tests the Python client against a real kjitd (build/bin/kjitd, or $KJITD).
# Installs the package, pytest, triton and cuda-core (and cuda-tile, where a
# tileiras is present) into a virtual environment under build/python-venv (or
# $KJIT_PYTHON_VENV), and reinstalls only when the package's sources or the
# protos changed. Arguments go to pytest, which runs the tests in one process
# per CPU (pytest-xdist; KJIT_PYTEST_PROCESSES, or -n 0, for another count).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${KJIT_PYTHON_VENV:-$repo/build/python-venv}
python=${PYTHON:-python3}

if ! "$venv/bin/python" -c "" 2>/dev/null; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi

# What the installed package is built from: its sources, its build files,
# the protos its stubs are generated from, and the interpreter.
stamp_of() {
  {
    "$venv/bin/python" -c 'import sys; print(sys.version)'
    cd "$repo"
    { find client/python/src -name '*.py' -not -path '*/kjit/v1/*' -not -path '*/kjit/internal/*' -not -name '_health_descriptor.py'
      find proto -name '*.proto'
      echo client/python/pyproject.toml; echo client/python/setup.py; echo client/python/README.md
    } | LC_ALL=C sort | xargs sha256sum
  } | sha256sum | cut -d' ' -f1
}

stamp_file="$venv/.kjit-client-stamp"
stamp=$(stamp_of)

# The client as a wheel (pure Python), built once for the three installs
# below that may need it rather than by each of them from the tree.
client_wheel_dir=$(mktemp -d "${TMPDIR:-/tmp}/kjit-client-wheel.XXXXXX")
trap 'rm -rf "$client_wheel_dir"' EXIT

# Processes of install-deps' other Triton builds run their tests with the
# client and its wheels (grpcio, protobuf) installed beside the build in a
# directory of their own (on PYTHONPATH), so the daemon's build stays as
# installed. Where a build is missing, its tests skip (fail under CI).
# These installs run beside the virtual environment's (each pip its own
# directory). client_current PYTHON DIR: DIR holds this client for PYTHON, or
# PYTHON is not there (nothing to install). install_client_beside NAME
# PYTHON DIR: reinstalled only when it changed.
client_current() { [[ -z "$1" || ! -x "$1" || "$(cat "$2/.kjit-client-stamp" 2>/dev/null)" == "$stamp" ]]; }
install_client_beside() {
  local name=$1 build_python=$2 dir=$3
  client_current "$build_python" "$dir" && return 0
  rm -rf "$dir"
  if "$build_python" -m pip install --quiet --disable-pip-version-check --target "$dir" "$client_wheel"; then
    echo "$stamp" > "$dir/.kjit-client-stamp"
  else
    echo "run-tests.sh: could not install the client for $name into $dir; its tests will skip" >&2
  fi
}

client_wheel=
fbtriton_python=$(ls -d "$repo"/.deps/triton-builds/fbtriton-*/bin/python 2>/dev/null | head -n 1 || true)
fbtriton_path=${KJIT_FBTRITON_PATH:-$repo/build/python-fbtriton-path}
triton38_python=$repo/.deps/triton-builds/triton-3.8.0/bin/python
triton38_path=${KJIT_TRITON38_PATH:-$repo/build/python-triton-3.8.0-path}
if ! client_current "$venv/bin/python" "$venv" || ! client_current "$fbtriton_python" "$fbtriton_path" ||
    ! client_current "$triton38_python" "$triton38_path"; then
  "$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$client_wheel_dir" "$here"
  client_wheel=$(ls "$client_wheel_dir"/kjit-*.whl)
fi

beside_installs=()
# fbtriton processes for tests/test_triton_remote.py ($KJIT_FBTRITON_PATH).
install_client_beside fbtriton "$fbtriton_python" "$fbtriton_path" &
beside_installs+=($!)
export KJIT_FBTRITON_PATH=$fbtriton_path
# Triton 3.8 + uTLX processes for tests/test_triton_utlx.py
# ($KJIT_TRITON38_PATH): install-deps' triton-3.8.0 build, with triton-utlx.
install_client_beside triton-3.8.0 "$triton38_python" "$triton38_path" &
beside_installs+=($!)
export KJIT_TRITON38_PATH=$triton38_path

if ! client_current "$venv/bin/python" "$venv"; then
  rm -f "$stamp_file"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pytest "$client_wheel"
  # A wheel of the installed version would be taken as installed already.
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$client_wheel"
  echo "$stamp" > "$stamp_file"
fi

# pytest-xdist, once: the tests run in as many processes as there are CPUs
# (each with its own session daemon). Many of them wait on time, not CPU (a
# claim's keepalive, a daemon stopped with SIGSTOP, a Triton build's
# discovery), which one process would wait out one after another.
if ! "$venv/bin/python" -c 'import xdist' 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pytest-xdist ||
    echo "run-tests.sh: could not install pytest-xdist; the tests run in one process" >&2
fi

# Triton for tests/test_triton.py (kjit.triton), once: a ~290 MB wheel, so
# it is installed only when missing, at the version the tests were written
# against. KJIT_SKIP_TRITON=1 leaves it out (those tests then skip).
triton_version=3.9.0
if [ -z "${KJIT_SKIP_TRITON:-}" ] && ! "$venv/bin/python" -c \
    'import importlib.util, sys; sys.exit(importlib.util.find_spec("triton") is None)'; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "triton==$triton_version" ||
    echo "run-tests.sh: could not install triton $triton_version; tests/test_triton.py will skip" >&2
fi

# NVIDIA's cuda.core for tests/test_cuda_core.py (kjit.cuda_core), once, at
# the versions the tests were written against: small wheels (cuda-bindings
# without its [all] extra loads the host's NVRTC, which the toolkit kjit
# builds with provides). KJIT_SKIP_CUDA_CORE=1 leaves it out (those tests
# then skip).
cuda_core_version=1.2.2
cuda_bindings_version=13.5.0
if [ -z "${KJIT_SKIP_CUDA_CORE:-}" ] && ! "$venv/bin/python" -c 'import cuda.core' 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "cuda-core==$cuda_core_version" \
      "cuda-bindings==$cuda_bindings_version" ||
    echo "run-tests.sh: could not install cuda-core $cuda_core_version; tests/test_cuda_core.py will skip" >&2
fi

# cuTile for tests/test_cutile.py (kjit.cutile), only where a tileiras is
# present for those tests to use ($KJIT_TILEIRAS, build/cutile-venv's, or
# scripts/install-deps.sh's .deps/tileiras): elsewhere, as on CI, which
# leaves Tile IR out, they skip. cuda-tile without its [tileiras] extra is a
# small wheel; the version kjit.cutile was written for. KJIT_SKIP_CUTILE=1
# leaves it out.
cutile_version=1.7.0
have_tileiras() {
  [[ -n "${KJIT_TILEIRAS:-}" && -x "${KJIT_TILEIRAS:-}" ]] && return 0
  local candidate
  for candidate in "$repo"/build/cutile-venv/lib/python3*/site-packages/nvidia/cu*/bin/tileiras \
      "$repo"/.deps/tileiras/nvidia/cu*/bin/tileiras; do
    [[ -x "$candidate" ]] && return 0
  done
  return 1
}
if [ -z "${KJIT_SKIP_CUTILE:-}" ] && have_tileiras && ! "$venv/bin/python" -c \
    'import importlib.util, sys; sys.exit(importlib.util.find_spec("cuda.tile") is None)' 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "cuda-tile==$cutile_version" ||
    echo "run-tests.sh: could not install cuda-tile $cutile_version; tests/test_cutile.py will skip" >&2
fi

wait "${beside_installs[@]}"
rm -rf "$client_wheel_dir"

cd "$here"
parallel=()
"$venv/bin/python" -c 'import xdist' 2>/dev/null && parallel=(-n "${KJIT_PYTEST_PROCESSES:-auto}")
exec "$venv/bin/python" -m pytest -q "${parallel[@]}" "$@" tests
