#!/usr/bin/env bash
# kjit against what its users do today, on the same kernels, in one run: the
# table in README.md's "How kjit compares".
#
#   bench/peer_comparison.sh [--reps N] [--quick] [--out DIR]
#
# CUDA C++ (saxpy, tiled_matmul, mixed_axpy of bench/bench_kernels.h, sm_90): NVRTC + nvJitLink in a fresh
# process (bench/peer_nvrtc.c, built here), nvcc -cubin, ccache nvcc -c (miss
# and hit), and `kjit compile` cold, missed, and hit from memory, disk and
# Redis. Triton (three kernels, client/python/tests/triton_child.py): its own compile,
# its own file-cache hit, and a process with an empty local dir served by
# kjit.triton.KjitCacheManager. Medians of --reps (default 5; --quick: 2)
# after a warm-up rep. Writes DIR/peer_comparison.{md,json,png} (default DIR:
# build/peer-comparison) and prints the table. About 4 min at the defaults on
# 2 cores. Needs build/bin/kjit and kjitd (built, this does not build them),
# the CUDA toolkit, a C compiler, and the Python environment
# build/python-venv (made by client/python/run-tests.sh, which this runs when
# it is missing); no GPU. ccache and redis-server are installed with apt-get
# when missing and running as root, else their rows are printed as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=5
out=build/peer-comparison
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --quick) reps=2; shift ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--reps N] [--quick] [--out DIR]" >&2; exit 2 ;;
  esac
done

for b in "${KJIT:-build/bin/kjit}" "${KJITD:-build/bin/kjitd}"; do
  [[ -x "$b" ]] || { echo "no $b: build it first (cmake --build build --target kjitd kjit)" >&2; exit 1; }
done
cuda=${CUDA_HOME:-/usr/local/cuda}
[[ -x "$cuda/bin/nvcc" && -e "$cuda/lib64/libnvrtc.so" ]] || { echo "no CUDA toolkit at $cuda" >&2; exit 1; }

missing=()
command -v ccache >/dev/null || missing+=(ccache)
command -v redis-server >/dev/null || missing+=(redis-server)
if [[ ${#missing[@]} -gt 0 ]]; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "peer_comparison: installing ${missing[*]}" >&2
    apt-get install -y "${missing[@]}" >/dev/null 2>&1 ||
      { apt-get update >/dev/null 2>&1 && apt-get install -y "${missing[@]}" >/dev/null 2>&1; } ||
      echo "peer_comparison: could not install ${missing[*]}; their rows are skipped" >&2
  else
    echo "peer_comparison: ${missing[*]} not installed (not root); their rows are skipped" >&2
  fi
fi

# The Python environment with triton and the kjit client: run-tests.sh makes
# it (venv, the client, pytest, triton 3.9); --help stops pytest at once.
venv=${KJIT_PYTHON_VENV:-build/python-venv}
if ! "$venv/bin/python" -c 'import kjit, triton' 2>/dev/null; then
  echo "peer_comparison: setting up $venv with client/python/run-tests.sh" >&2
  KJIT_PYTHON_VENV=$(realpath -m "$venv") client/python/run-tests.sh --help >/dev/null ||
    echo "peer_comparison: run-tests.sh failed; the Triton rows may be skipped" >&2
fi
python=$venv/bin/python
[[ -x "$python" ]] || python=python3
if ! "$python" -c 'import matplotlib' 2>/dev/null; then
  "$python" -m pip install --quiet --disable-pip-version-check matplotlib ||
    echo "peer_comparison: could not install matplotlib; no chart" >&2
fi

exec "$python" bench/peer_comparison.py --reps "$reps" --out "$out" --python "$(realpath -s "$python")" \
  --kjit "${KJIT:-build/bin/kjit}" --kjitd "${KJITD:-build/bin/kjitd}" --cuda-home "$cuda"
