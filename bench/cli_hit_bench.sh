#!/usr/bin/env bash
# What one `kjit compile` costs as a whole process when kjitd answers from its
# memory cache, against ccache answering `nvcc -c` from its cache, and against
# `kjit --help` (start-up alone). Then the node-start scenario: 8 processes
# started at once, each needing the same 12 kernels, through kjit (12
# `kjit compile` each) against each compiling all 12 itself with nvcc -cubin.
#
#   bench/cli_hit_bench.sh [--runs N] [--node-reps N] [--before OLD_KJIT] [--no-node]
#
# --before adds the same rows for another kjit binary (e.g. a copy kept from
# before a change), timed in the same rounds. All single-process rows are
# timed interleaved: each round runs every command once, in an order that
# rotates, so that drift on the host hits all of them alike. Prints medians
# (ms) and ratios to the ccache hit. Needs python3, ccache and the CUDA
# toolkit (nvcc); no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=60
node_reps=1
before=
node=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --node-reps) node_reps=$2; shift 2 ;;
    --before) before=$(realpath "$2"); shift 2 ;;
    --no-node) node=0; shift ;;
    *) echo "usage: $0 [--runs N] [--node-reps N] [--before OLD_KJIT] [--no-node]" >&2; exit 2 ;;
  esac
done
kjit=$(realpath "${KJIT:-build/bin/kjit}")
kjitd=$(realpath "${KJITD:-build/bin/kjitd}")
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
ccache=$(command -v ccache) || { echo "ccache is not installed" >&2; exit 1; }
source_file=$(realpath examples/vector_add.cu)
work=$(mktemp -d /tmp/clibench.XXXXXX)
daemon_pid=
cleanup() { [[ -n "$daemon_pid" ]] && kill "$daemon_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

XDG_CACHE_HOME="$work/xdg" "$kjitd" --socket "$work/k.sock" >"$work/kjitd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 200); do "$kjit" health -s "$work/k.sock" >/dev/null 2>&1 && break; sleep 0.05; done
"$kjit" health -s "$work/k.sock" >/dev/null || { cat "$work/kjitd.log" >&2; exit 1; }

export CCACHE_DIR="$work/ccache"
# Warm both caches: kjitd compiles once, ccache misses once then hits.
"$kjit" compile "$source_file" --target cuda:90 -o "$work/warm.cubin" -s "$work/k.sock"
"$ccache" "$nvcc" -c "$source_file" -o "$work/warm.o"
"$ccache" "$nvcc" -c "$source_file" -o "$work/warm.o"

export BENCH_WORK="$work" BENCH_RUNS="$runs" BENCH_KJIT="$kjit" BENCH_BEFORE="$before" BENCH_NVCC="$nvcc" \
  BENCH_CCACHE="$ccache" BENCH_SOURCE="$source_file"
python3 - <<'EOF'
import os, statistics, time
w = os.environ["BENCH_WORK"]
runs = int(os.environ["BENCH_RUNS"])
src = os.environ["BENCH_SOURCE"]
rows = []
def kjit_rows(binary, label):
    rows.append((f"kjit compile (hit){label}", [binary, "compile", src, "--target", "cuda:90", "-o", f"{w}/x.cubin", "-s", f"{w}/k.sock"]))
    rows.append((f"kjit --help{label}", [binary, "--help"]))
kjit_rows(os.environ["BENCH_KJIT"], "")
if os.environ["BENCH_BEFORE"]:
    kjit_rows(os.environ["BENCH_BEFORE"], " [before]")
rows.append(("ccache nvcc -c (hit)", [os.environ["BENCH_CCACHE"], os.environ["BENCH_NVCC"], "-c", src, "-o", f"{w}/x.o"]))
devnull = os.open(os.devnull, os.O_WRONLY)
def once(argv):
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
    _, status, usage = os.wait4(pid, 0)
    elapsed = (time.perf_counter() - start) * 1e3
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")
    return elapsed, (usage.ru_utime + usage.ru_stime) * 1e3
times = {name: [] for name, _ in rows}
cpu = {name: [] for name, _ in rows}
for r in range(runs + 3):
    order = rows[r % len(rows):] + rows[:r % len(rows)]
    for name, argv in order:
        t, c = once(argv)
        if r >= 3:  # the first rounds warm the page cache
            times[name].append(t)
            cpu[name].append(c)
base = statistics.median(times["ccache nvcc -c (hit)"])
cpu_base = statistics.median(cpu["ccache nvcc -c (hit)"])
# CPU time (user + system, all threads) is steadier than wall time on a
# shared host; it leaves out what the daemon spends answering.
print(f"\nOne process, {runs} interleaved rounds (ms; wall from spawn to exit, CPU of the process):")
print(f"{'command':32} {'wall':>8} {'p10':>8} {'p90':>8} {'vs ccache':>10} {'CPU':>8} {'vs ccache':>10}")
for name, _ in rows:
    t = sorted(times[name])
    med = statistics.median(t)
    c = statistics.median(cpu[name])
    print(f"{name:32} {med:8.2f} {t[len(t)//10]:8.2f} {t[(9*len(t))//10]:8.2f} {med/base:9.2f}x {c:8.2f} {c/cpu_base:9.2f}x")
EOF

[[ "$node" == 1 ]] || exit 0

# Node start: 12 kernels, 8 processes. Each repetition salts the sources so
# that the kjit side starts cold (the first process to ask compiles, the
# others join or hit); a second kjit run of the same sources is all hits.
mkdir -p "$work/node"
make_kernels() {  # $1: salt
  for k in $(seq 1 12); do
    sed "s/vector_add/vector_add_${k}/; 1s|^|// node-start kernel $k, salt $1\n|" "$source_file" >"$work/node/k$k.cu"
  done
}
kjit_process() {
  for k in $(seq 1 12); do
    "$kjit" compile "$work/node/k$k.cu" --target cuda:90 -o "$work/node/p$1_k$k.cubin" -s "$work/k.sock" >/dev/null
  done
}
nvcc_process() {
  for k in $(seq 1 12); do
    "$nvcc" -cubin -arch=sm_90 "$work/node/k$k.cu" -o "$work/node/n$1_k$k.cubin"
  done
}
eight() {  # $1: kjit_process or nvcc_process; prints wall ms for all 8
  local start end
  start=$(date +%s%N)
  for p in $(seq 1 8); do "$1" "$p" & done
  wait  # in the $(...) subshell: the 8 processes, not the daemon
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
cold=() warm=() nv=()
for rep in $(seq 1 "$node_reps"); do
  make_kernels "$$-$rep"
  cold+=("$(eight kjit_process)")
  warm+=("$(eight kjit_process)")
  nv+=("$(eight nvcc_process)")
  ls "$work"/node/p*_k*.cubin "$work"/node/n*_k*.cubin | wc -l | grep -qx 192 || { echo "missing outputs" >&2; exit 1; }
done
python3 - "${cold[*]}" "${warm[*]}" "${nv[*]}" <<'EOF'
import statistics, sys
cold, warm, nv = ([float(x) for x in a.split()] for a in sys.argv[1:4])
n = statistics.median(nv)
print(f"\nNode start: 8 processes at once x 12 kernels, {len(nv)} repetition(s) (wall ms until all 8 finish):")
print(f"{'scenario':44} {'median':>9} {'vs nvcc':>8}")
for name, t in (("kjit, cold daemon cache (12 compiles, 84 hits)", cold),
                ("kjit, warm daemon cache (96 hits)", warm),
                ("nvcc -cubin in every process (96 compiles)", nv)):
    print(f"{name:44} {statistics.median(t):9.0f} {statistics.median(t)/n:7.3f}x")
EOF
