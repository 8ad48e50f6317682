#!/usr/bin/env bash
# One request for four targets against what users do today, on the same
# kernels (bench/kernels/fatbin_bench.cu), all cold, in one run:
#   kjit fatbin      kjit compile --target cuda:80,cuda:90,cuda:100,cuda:107
#   kjit fatbin/3    the same for the three targets nvcc 13.0 supports
#   nvcc -fatbin     -gencode for sm_80, sm_90, sm_100 plus compute_100 PTX
#   kjit 4 x single  four single-target kjit compiles, one after the other
# Every kjit run gets a fresh daemon and an empty cache. Prints medians of
# --reps runs (default 3) and ratios to nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=3
[[ "${1:-}" == "--reps" ]] && reps=$2
cmake --build build --target kjitd kjit kjit_bench_discovery >/dev/null
kjitd=build/bin/kjitd
kjit=build/bin/kjit
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
kernel=bench/kernels/fatbin_bench.cu
work=$(mktemp -d)
daemon_pid=
cleanup() { [[ -n "$daemon_pid" ]] && kill "$daemon_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

now_ms() { date +%s%N | awk '{ printf "%.1f", $1 / 1e6 }'; }

start_daemon() {
  rm -rf "$work/cache" "$work/k.sock"
  XDG_CACHE_HOME="$work/cache" "$kjitd" --socket "$work/k.sock" >"$work/kjitd.log" 2>&1 &
  daemon_pid=$!
  # Polled for 30 s at most: a loaded machine may take seconds to start it.
  local deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)) && kill -0 "$daemon_pid" 2>/dev/null; do
    "$kjit" health -s "$work/k.sock" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "kjitd did not start" >&2; cat "$work/kjitd.log" >&2; exit 1
}
stop_daemon() { kill "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=; }

# Milliseconds one command takes.
timed() {
  local start end
  start=$(now_ms)
  "$@" >/dev/null
  end=$(now_ms)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }'
}

median() { tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A samples
for ((r = 0; r < reps; ++r)); do
  start_daemon
  samples[fatbin4]+="$(timed "$kjit" compile "$kernel" -s "$work/k.sock" --target cuda:80,cuda:90,cuda:100,cuda:107 -o "$work/k4.fatbin") "
  stop_daemon
  start_daemon
  samples[fatbin3]+="$(timed "$kjit" compile "$kernel" -s "$work/k.sock" --target cuda:80,cuda:90,cuda:100 -o "$work/k3.fatbin") "
  stop_daemon
  samples[nvcc]+="$(timed "$nvcc" -fatbin -o "$work/nvcc.fatbin" "$kernel" \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
    -gencode arch=compute_100,code=sm_100 -gencode arch=compute_100,code=compute_100) "
  start_daemon
  seq_start=$(now_ms)
  for t in cuda:80 cuda:90 cuda:100 cuda:107; do
    "$kjit" compile "$kernel" -s "$work/k.sock" --target "$t" -o "$work/single.cubin" >/dev/null
  done
  seq_end=$(now_ms)
  samples[single4]+="$(awk -v a="$seq_start" -v b="$seq_end" 'BEGIN { printf "%.1f", b - a }') "
  stop_daemon
done

nvcc_ms=$(echo "${samples[nvcc]}" | median)
printf "%-44s %10s %10s\n" "cold, $reps runs each (median)" "ms" "vs nvcc"
row() { printf "%-44s %10s %10s\n" "$1" "$2" "$(awk -v a="$2" -v b="$nvcc_ms" 'BEGIN { printf "%.2fx", a / b }')"; }
row "nvcc -fatbin sm_80,90,100 + compute_100" "$nvcc_ms"
row "kjit fatbin cuda:80,90,100 (+PTX)" "$(echo "${samples[fatbin3]}" | median)"
row "kjit fatbin cuda:80,90,100,107 (+PTX)" "$(echo "${samples[fatbin4]}" | median)"
row "kjit 4 single-target compiles in a row" "$(echo "${samples[single4]}" | median)"
discovery() { for ((r = 0; r < reps; ++r)); do build/bin/kjit_bench_discovery --only "$1" | cut -d' ' -f1; done | median; }
echo "toolkit discovery at start (median of $reps processes): system toolkit alone $(discovery system) ms," \
  "system + wheels $(discovery all) ms"
echo "fatbin sizes: kjit 4 targets $(stat -c %s "$work/k4.fatbin") B, kjit 3 targets $(stat -c %s "$work/k3.fatbin") B, nvcc $(stat -c %s "$work/nvcc.fatbin") B"
