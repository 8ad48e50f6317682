#!/usr/bin/env bash
# Triton IR through kjitd against Triton itself, on the corpus of
# tests/triton/data, for one target, all in one run (ratios within it):
#   fresh:  a new Python process running triton.compile on the TTIR
#           (tests/triton/reference_compile.py: import, compile, write)
#   warm:   triton.compile in a process that already compiled (Triton
#           imported, its LLVM warm), always compiling
#   miss:   `kjit compile` of the TTIR, a kjitd whose Triton worker is warm
#   hit:    the same request again (the memory tier)
# Usage: bench/triton_bench.sh [TARGET] (default cuda:90). Needs build/ and
# .deps/triton-builds (scripts/install-deps.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${KJIT_BUILD_DIR:-$repo/build}
python=${KJIT_TRITON_PYTHON:-$repo/.deps/triton-builds/triton-3.9.0/bin/python}
target=${1:-cuda:90}
work=$(mktemp -d /tmp/kjit-triton-bench.XXXXXX)
daemon=
cleanup() { [[ -n $daemon ]] && kill "$daemon" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
now() { date +%s.%N; }
files=("$repo"/tests/triton/data/*.ttir)

"$build/bin/kjitd" --socket "$work/s.sock" --cache-dir "$work/cache" --compile-workers 2 --log-level warn \
  >"$work/kjitd.log" 2>&1 &
daemon=$!
for _ in $(seq 600); do "$build/bin/kjit" -s "$work/s.sock" health >/dev/null 2>&1 && break; sleep 0.1; done
kjit() { "$build/bin/kjit" -s "$work/s.sock" "$@"; }
# Warm the daemon: its builds described, a Triton worker and its interpreter
# started (a compile no measured request repeats).
kjit compile "${files[0]}" -t "$target" --triton-option num_warps=2 -o "$work/warm.bin" >/dev/null 2>&1

# The warm in-process figures, one process for all.
"$python" - "$target" "${files[@]}" >"$work/warm.txt" 2>/dev/null <<'PY'
import os, sys, tempfile, time
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
import triton
from triton import knobs
from triton.backends.compiler import GPUTarget
backend, arch = sys.argv[1].split(":")
target = GPUTarget(backend.replace("cuda", "cuda"), int(arch) if arch.isdigit() else arch, 32 if backend == "cuda" else 64)
knobs.compilation.always_compile = True
triton.compile(sys.argv[2], target=target, options={"num_warps": 2})  # warm-up
for path in sys.argv[2:]:
    start = time.perf_counter()
    try:
        triton.compile(path, target=target)
        print("%s %.1f" % (os.path.basename(path), (time.perf_counter() - start) * 1000))
    except Exception:
        print("%s -" % os.path.basename(path))
PY

printf '%-26s %9s %9s %9s %9s %10s %10s %10s\n' kernel fresh_ms warm_ms miss_ms hit_ms miss/fresh miss/warm hit/fresh
sum_fresh=0 sum_warm=0 sum_miss=0 sum_hit=0
for file in "${files[@]}"; do
  name=$(basename "$file")
  start=$(now)
  "$python" "$repo/tests/triton/reference_compile.py" "$file" --target "$target" --out "$work/ref" >/dev/null 2>&1 || continue
  fresh=$(echo "($(now) - $start) * 1000" | bc)
  warm=$(awk -v n="$name" '$1 == n { print $2 }' "$work/warm.txt")
  [[ -z $warm || $warm == - ]] && continue
  start=$(now)
  kjit compile "$file" -t "$target" -o "$work/k.bin" >/dev/null 2>&1
  miss=$(echo "($(now) - $start) * 1000" | bc)
  start=$(now)
  kjit compile "$file" -t "$target" -o "$work/k.bin" >/dev/null 2>&1
  hit=$(echo "($(now) - $start) * 1000" | bc)
  printf '%-26s %9.0f %9.0f %9.0f %9.1f %10.2f %10.2f %10.3f\n' "$name" "$fresh" "$warm" "$miss" "$hit" \
    "$(echo "$miss / $fresh" | bc -l)" "$(echo "$miss / $warm" | bc -l)" "$(echo "$hit / $fresh" | bc -l)"
  sum_fresh=$(echo "$sum_fresh + $fresh" | bc); sum_warm=$(echo "$sum_warm + $warm" | bc)
  sum_miss=$(echo "$sum_miss + $miss" | bc); sum_hit=$(echo "$sum_hit + $hit" | bc)
done
printf '%-26s %9.0f %9.0f %9.0f %9.1f %10.2f %10.2f %10.3f\n' "all ($target)" "$sum_fresh" "$sum_warm" "$sum_miss" \
  "$sum_hit" "$(echo "$sum_miss / $sum_fresh" | bc -l)" "$(echo "$sum_miss / $sum_warm" | bc -l)" \
  "$(echo "$sum_hit / $sum_fresh" | bc -l)"
# A Triton worker's memory: the interpreters' resident sets after the run.
ps -o pid=,rss=,args= -p "$(pgrep -d, -f -- '-I -B -c' || echo 1)" 2>/dev/null | awk '$3 ~ /python/ { printf "interpreter %s: RSS %.0f MiB\n", $1, $2 / 1024 }' || true
