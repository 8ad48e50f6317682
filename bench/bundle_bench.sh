#!/usr/bin/env bash
# Cache bundles end to end: a daemon compiles N distinct small kernels (real
# NVRTC + nvJitLink compiles, one cache entry and one recipe each), `kjit
# cache export` writes them to a bundle, and a second daemon with an empty
# cache imports it. Prints the export time, the bundle's size, the import
# time, what a second import of the same bundle skips, that the imported
# kernels are hits in the second daemon, and the refusal of a bundle whose
# header states another entry format (what a daemon of another kjit version
# answers; the bytes are otherwise this bundle's).
#
#   bench/bundle_bench.sh [--entries N]     (default 1000)
#
# Needs the CUDA toolkit kjit was built with; no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
entries=1000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --entries) entries=$2; shift 2 ;;
    *) echo "usage: $0 [--entries N]" >&2; exit 2 ;;
  esac
done
kjit=$(realpath "${KJIT:-build/bin/kjit}")
kjitd=$(realpath "${KJITD:-build/bin/kjitd}")
work=$(mktemp -d /tmp/bundlebench.XXXXXX)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# A daemon of its own on $work/<name>.sock, with its own empty cache directory.
start_daemon() {
  local name=$1
  "$kjitd" --socket "$work/$name.sock" --cache-dir "$work/$name-cache" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do "$kjit" health -s "$work/$name.sock" >/dev/null 2>&1 && return 0; sleep 0.05; done
  cat "$work/$name.log" >&2
  echo "kjitd ($name) does not serve" >&2
  exit 1
}
now_ms() { date +%s%3N; }

start_daemon source
mkdir "$work/kernels"
for i in $(seq 1 "$entries"); do
  printf '__global__ void scale_%d(float* x, float a) { x[threadIdx.x] *= a + %d.0f; }\n' "$i" "$i" \
    >"$work/kernels/k$i.cu"
done
t0=$(now_ms)
ls "$work"/kernels/*.cu | xargs -P "$(( $(nproc) * 2 ))" -I{} \
  "$kjit" compile {} --target cuda:90 -o /dev/null -s "$work/source.sock"
t1=$(now_ms)
echo "compiled $entries kernels in $(( t1 - t0 )) ms (to fill the first daemon)"

t0=$(now_ms)
"$kjit" cache export -o "$work/cache.kjb" --json -s "$work/source.sock" >"$work/export.json"
t1=$(now_ms)
export_ms=$(( t1 - t0 ))
bundle_bytes=$(stat -c %s "$work/cache.kjb")

start_daemon fresh
t0=$(now_ms)
"$kjit" cache import "$work/cache.kjb" --json -s "$work/fresh.sock" >"$work/import.json"
t1=$(now_ms)
import_ms=$(( t1 - t0 ))
t0=$(now_ms)
"$kjit" cache import "$work/cache.kjb" --json -s "$work/fresh.sock" >"$work/reimport.json"
t1=$(now_ms)
reimport_ms=$(( t1 - t0 ))

# A sample of the kernels, asked of the daemon that imported them.
hits=0
sample=20
for i in $(seq 1 $(( entries / sample > 0 ? entries / sample : 1 )) "$entries" | head -n "$sample"); do
  answer=$("$kjit" compile "$work/kernels/k$i.cu" --target cuda:90 -o /dev/null --json -s "$work/fresh.sock")
  [[ "$answer" == *'"cache":"compiled"'* ]] || hits=$(( hits + 1 ))
done

# The same bundle, its header saying entry format 2.
cp "$work/cache.kjb" "$work/other-format.kjb"
printf '\x02' | dd of="$work/other-format.kjb" bs=1 seek=12 conv=notrunc status=none
t0=$(now_ms)
set +e
refusal=$("$kjit" cache import "$work/other-format.kjb" -s "$work/fresh.sock" 2>&1)
refusal_code=$?
set -e
t1=$(now_ms)
refusal_ms=$(( t1 - t0 ))

export BENCH_WORK="$work" BENCH_EXPORT_MS="$export_ms" BENCH_IMPORT_MS="$import_ms" BENCH_REIMPORT_MS="$reimport_ms" \
  BENCH_BYTES="$bundle_bytes" BENCH_HITS="$hits" BENCH_SAMPLE="$sample" BENCH_REFUSAL="$refusal" \
  BENCH_REFUSAL_CODE="$refusal_code" BENCH_REFUSAL_MS="$refusal_ms"
python3 - <<'EOF'
import json, os
w = os.environ["BENCH_WORK"]
exported = json.load(open(w + "/export.json"))
imported = json.load(open(w + "/import.json"))
again = json.load(open(w + "/reimport.json"))
size = int(os.environ["BENCH_BYTES"])
print("export   %6d ms  %d entries, %d blobs, %d recipes" % (int(os.environ["BENCH_EXPORT_MS"]), exported["entries"],
                                                            exported["blobs"], exported["recipes"]))
print("bundle   %6.2f MiB (%d bytes, %.1f KiB an entry)" % (size / 2**20, size, size / 1024 / max(exported["entries"], 1)))
print("import   %6d ms  %d entries, %d recipes imported into an empty cache, %d skipped" % (
    int(os.environ["BENCH_IMPORT_MS"]), imported["entries_imported"], imported["recipes_imported"], imported["skipped"]))
print("again    %6d ms  %d imported, %d skipped: %s" % (
    int(os.environ["BENCH_REIMPORT_MS"]), again["entries_imported"] + again["recipes_imported"], again["skipped"],
    "; ".join("%d %s" % (s["count"], s["reason"]) for s in again["skips"])))
print("hits     %d of %s sampled kernels were cache hits in the importing daemon" % (
    int(os.environ["BENCH_HITS"]), os.environ["BENCH_SAMPLE"]))
print("refusal  %6d ms  exit %s: %s" % (int(os.environ["BENCH_REFUSAL_MS"]), os.environ["BENCH_REFUSAL_CODE"],
                                        os.environ["BENCH_REFUSAL"].strip()))
EOF
