#!/usr/bin/env bash
# Tile IR through kjitd against tileiras run directly: exports a vector add,
# an fp16 matmul and a matmul with occupancy hints with cuTile (or takes tests/tileir/data's copies when
# cuTile is not installed), compiles each through a confined kjitd for
# several targets, and compares the cubins byte for byte with tileiras' own.
#
# tileiras: $KJIT_TILEIRAS, else build/cutile-venv's (python -m venv
# build/cutile-venv && build/cutile-venv/bin/pip install
# "cuda-tile[tileiras]"), else scripts/install-deps.sh's .deps/tileiras.
# Without one it skips (exit 77), saying so. No GPU needed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${KJIT_BUILD_DIR:-$repo/build}
venv=${KJIT_CUTILE_VENV:-$build/cutile-venv}
targets=${KJIT_TILEIR_TARGETS:-"90 100 107 120"}

tileiras=${KJIT_TILEIRAS:-}
if [[ -z "$tileiras" ]]; then
  for candidate in "$venv"/lib/python3*/site-packages/nvidia/cu*/bin/tileiras "$repo"/.deps/tileiras/nvidia/cu*/bin/tileiras; do
    if [[ -x "$candidate" ]]; then tileiras=$candidate; break; fi
  done
fi
if [[ -z "$tileiras" || ! -x "$tileiras" ]]; then
  echo "SKIP: no tileiras (set KJIT_TILEIRAS, run scripts/install-deps.sh with KJIT_INSTALL_TILEIRAS=1, or pip install" \
    "\"cuda-tile[tileiras]\" into $venv)"
  exit 77
fi

work=$(mktemp -d /tmp/kjit-tileir-test.XXXXXX)
daemon=
cleanup() {
  if [[ -n "$daemon" ]]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

data=$here/data
# cuTile: this venv's, else the one client/python/run-tests.sh installs it in.
python=$venv/bin/python
"$python" -c "import cuda.tile" 2>/dev/null || python=$build/python-venv/bin/python
if "$python" -c "import cuda.tile" 2>/dev/null; then
  # cuTile asks a tileiras on PATH which bytecode versions it reads, even to export.
  env -u CUDA_HOME PATH="$(dirname "$tileiras"):$PATH" "$python" "$here/export_kernels.py" "$work/data"
  data=$work/data
  echo "exported with cuTile $("$python" -c 'import cuda.tile; print(cuda.tile.__version__)')"
else
  echo "cuTile not installed in $venv nor $build/python-venv: using the bytecode in $data"
fi

"$build/bin/kjitd" --socket "$work/kjitd.sock" --tileiras "$tileiras" --cache-dir "$work/cache" \
  --compile-workers 2 --log-level warn >"$work/kjitd.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do
  "$build/bin/kjit" -s "$work/kjitd.sock" health >/dev/null 2>&1 && break
  kill -0 "$daemon" 2>/dev/null || { cat "$work/kjitd.log"; exit 1; }
  sleep 0.1
done
# Read whole before grep: grep -q stops at the first match, and kjit
# writing the rest into a closed pipe would fail the pipeline.
status=$("$build/bin/kjit" -s "$work/kjitd.sock" health --verbose)
grep -q "for Tile IR they may run exactly $tileiras" <<<"$status" || {
  echo "FAIL: kjit health --verbose does not say workers may run $tileiras"
  exit 1
}

failures=0
for kernel in vector_add matmul hinted_matmul; do
  for sm in $targets; do
    out=$work/$kernel.sm_$sm
    "$build/bin/kjit" -s "$work/kjitd.sock" compile -t "cuda:$sm" -o "$out.kjit.cubin" "$data/$kernel.tileirbc"
    # tileiras does not always write the same bytes for the same input
    # (seen: the matmul for sm_107, two variants): a cubin any direct run
    # writes is the right one.
    same=no
    for attempt in $(seq 8); do
      env -u CUDA_HOME "$tileiras" "--gpu-name=sm_$sm" -o "$out.direct.cubin" "$data/$kernel.tileirbc"
      if cmp -s "$out.kjit.cubin" "$out.direct.cubin"; then same=yes; break; fi
    done
    if [[ $same == yes ]]; then
      echo "ok: $kernel sm_$sm: $(stat -c %s "$out.kjit.cubin") bytes, identical to tileiras'$([[ $attempt -gt 1 ]] && echo " (direct run $attempt; tileiras varies)")"
    else
      echo "FAIL: $kernel sm_$sm: kjit's cubin differs from 8 direct tileiras runs"
      failures=$((failures + 1))
    fi
  done
done

# What the edge refuses, and how.
printf 'not bytecode' >"$work/bad.tileirbc"
if msg=$("$build/bin/kjit" -s "$work/kjitd.sock" compile -o "$work/x" "$work/bad.tileirbc" 2>&1); then
  echo "FAIL: a file without Tile IR's header compiled"; failures=$((failures + 1))
else
  [[ $msg == *"invalid argument"* ]] || { echo "FAIL: bad header: $msg"; failures=$((failures + 1)); }
fi
if msg=$("$build/bin/kjit" -s "$work/kjitd.sock" compile -t cuda:75 -o "$work/x" "$data/vector_add.tileirbc" 2>&1); then
  echo "FAIL: sm_75 compiled"; failures=$((failures + 1))
else
  [[ $msg == *"invalid argument"*"sm_80"* ]] || { echo "FAIL: sm_75: $msg"; failures=$((failures + 1)); }
fi
exit $((failures > 0))
