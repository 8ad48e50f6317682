#!/usr/bin/env bash
# One compile per kernel across a cold fleet of clients that compile for
# themselves (claims on blob groups), as figures measured in one run
# (bench/claims_bench.py): Triton fleets of 4 and 8 processes on one node
# (12 kernels x sm_80/90/100, assembler runs, wall time against one process
# alone, CPU against the same fleet without claims), two daemons sharing
# Redis, a holder SIGKILLed and a holder whose compile raises (the waiters'
# delay), and a cuda.core fleet (NVRTC runs per program).
#
#   bench/claims_bench.sh [--fleets 4,8] [--json FILE]
#
# Needs build/bin/kjitd (built; this does not build it) and the Python
# environment build/python-venv with triton and cuda-core (made by
# client/python/run-tests.sh, which this runs when either is missing);
# redis-server for the two-daemon row. No GPU. About 5 min on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
kjitd=${KJITD:-build/bin/kjitd}
[[ -x "$kjitd" ]] || { echo "no $kjitd: build it first (cmake --build build --target kjitd)" >&2; exit 1; }
venv=${KJIT_PYTHON_VENV:-build/python-venv}
if ! "$venv/bin/python" -c 'import kjit.triton, kjit.cuda_core' 2>/dev/null; then
  client/python/run-tests.sh -q -k test_the_cache_api >/dev/null
fi
exec "$venv/bin/python" bench/claims_bench.py --kjitd "$kjitd" "$@"
