#!/usr/bin/env bash
# A new node type: recipes recorded for one target, then `kjit warm
# --target` for another. N distinct kernels (vector_add with -DVARIANT=i, so
# each is its own recipe) are compiled for cuda:90 on a fresh kjitd with a
# fresh cache; `kjit warm --target cuda:100` then builds every recipe for
# cuda:100 and is timed (the time per recipe is the figure); a second warm
# finds all of them cached; and every recorded request, asked for cuda:100,
# is then a hit.
#
#   bench/warm_target_bench.sh [N] [FROM] [TO]     (defaults: 20 cuda:90 cuda:100)
#
# Needs build/bin/kjit and kjitd (built; this does not build them) and the
# CUDA toolkit; no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
from=${2:-cuda:90}
to=${3:-cuda:100}
kjit=${KJIT:-build/bin/kjit}
kjitd=${KJITD:-build/bin/kjitd}
for b in "$kjit" "$kjitd"; do
  [[ -x "$b" ]] || { echo "no $b: build it first (cmake --build build --target kjitd kjit)" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
sock=$dir/kjitd.sock
"$kjitd" --socket "$sock" --cache-dir "$dir/cache" --log-level warn 2>"$dir/kjitd.log" &
pid=$!
for _ in $(seq 100); do "$kjit" health --socket "$sock" >/dev/null 2>&1 && break; sleep 0.1; done
"$kjit" health --socket "$sock" >/dev/null 2>&1 || { echo "kjitd did not serve within 10 s:" >&2; cat "$dir/kjitd.log" >&2; exit 1; }

now() { date +%s.%N; }
start=$(now)
for i in $(seq "$n"); do
  "$kjit" compile examples/vector_add.cu --target "$from" -D "VARIANT=$i" -o /dev/null --socket "$sock" >/dev/null
done
record_s=$(echo "$(now) - $start" | bc)
# Recording is asynchronous: wait until every recipe is listed.
for _ in $(seq 300); do
  [[ $("$kjit" recipes ls --socket "$sock" | wc -l) -ge $n ]] && break
  sleep 0.1
done
recipes=$("$kjit" recipes ls --socket "$sock" | wc -l)
(( recipes >= n )) || { echo "only $recipes of $n recipes recorded within 30 s" >&2; exit 1; }

start=$(now)
first=$("$kjit" warm --target "$to" --json --socket "$sock")
warm_s=$(echo "$(now) - $start" | bc)
start=$(now)
second=$("$kjit" warm --target "$to" --json --socket "$sock")
again_s=$(echo "$(now) - $start" | bc)

hits=0
for i in $(seq "$n"); do
  cache=$("$kjit" compile examples/vector_add.cu --target "$to" -D "VARIANT=$i" -o /dev/null --json --socket "$sock" |
          python3 -c 'import json,sys; print(json.load(sys.stdin)["cache"])')
  [[ $cache != compiled ]] && hits=$((hits + 1))
done

field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
printf 'kernels compiled for %s: %d in %.2f s; recipes recorded: %d\n' "$from" "$n" "$record_s" "$recipes"
printf 'kjit warm --target %s: %s compiled, %s already cached, %s failed in %.2f s: %.1f ms per recipe\n' \
  "$to" "$(field "$first" compiled)" "$(field "$first" already_cached)" "$(field "$first" failed)" "$warm_s" \
  "$(echo "1000 * $warm_s / $recipes" | bc -l)"
printf 'again: %s compiled, %s already cached in %.2f s: %.1f ms per recipe\n' \
  "$(field "$second" compiled)" "$(field "$second" already_cached)" "$again_s" \
  "$(echo "1000 * $again_s / $recipes" | bc -l)"
printf 'recorded requests asked for %s afterwards: %d of %d hits\n' "$to" "$hits" "$n"
