#!/usr/bin/env bash
# Tile IR through kjit, as ratios measured in one run (bench/tileir_bench.py):
# a kjit miss against tileiras run directly (target <= 1.05x), a kjit hit
# against a hit in cuTile's SQLite cache, and a second cuTile process through
# kjit against cuTile's cold compile.
#
#   bench/tileir_bench.sh [--sm 100] [--reps 7] [--hit-reps 300] [--process-reps 3]
#
# Needs build/bin/kjitd (built; this does not build it), tileiras
# ($KJIT_TILEIRAS, build/cutile-venv's, or .deps/tileiras) and a Python with
# cuda-tile and kjit ($KJIT_BENCH_PYTHON, else build/python-venv's, which
# client/python/run-tests.sh makes). Without tileiras or cuda-tile it says
# what is missing and exits 0. No GPU. About 2.5 min on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
kjitd=$(realpath "${KJITD:-build/bin/kjitd}")
[[ -x "$kjitd" ]] || { echo "no $kjitd: build it first (cmake --build build --target kjitd)" >&2; exit 1; }

tileiras=${KJIT_TILEIRAS:-}
if [[ -z "$tileiras" ]]; then
  for candidate in build/cutile-venv/lib/python3*/site-packages/nvidia/cu*/bin/tileiras .deps/tileiras/nvidia/cu*/bin/tileiras; do
    if [[ -x "$candidate" ]]; then tileiras=$PWD/$candidate; break; fi
  done
fi
if [[ -z "$tileiras" || ! -x "$tileiras" ]]; then
  echo "tileir_bench: not run: no tileiras (set KJIT_TILEIRAS, or KJIT_INSTALL_TILEIRAS=1 scripts/install-deps.sh)"
  exit 0
fi
python=${KJIT_BENCH_PYTHON:-}
if [[ -z "$python" ]]; then
  for candidate in build/python-venv/bin/python build/cutile-venv/bin/python; do
    if "$candidate" -c "import cuda.tile, kjit" 2>/dev/null; then python=$candidate; break; fi
  done
fi
if [[ -z "$python" ]] || ! "$python" -c "import cuda.tile, kjit" 2>/dev/null; then
  echo "tileir_bench: not run: no Python with cuda-tile and kjit (client/python/run-tests.sh installs both into" \
    "build/python-venv where a tileiras is present; or set KJIT_BENCH_PYTHON)"
  exit 0
fi
exec "$python" bench/tileir_bench.py --tileiras "$tileiras" --kjitd "$kjitd" "$@"
