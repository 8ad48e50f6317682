#!/usr/bin/env bash
# Triton IR through kjitd against Triton itself: each TTIR of the corpus
# (tests/triton/data, exported by export_ttir.py) is compiled through a
# confined kjitd with `kjit compile` and, in a fresh process of the same
# build, by plain triton.compile (reference_compile.py); the cubins and code
# objects must be byte-identical and the metadata equal. Then the daemon's
# own contract: hits, keys, the builds it lists, TLX routing, bad input.
#
# The builds: scripts/install-deps.sh's .deps/triton-builds. Without them
# this skips (exit 77), saying so, except under CI, where it fails: CI
# installs them. No GPU needed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${KJIT_BUILD_DIR:-$repo/build}
builds=${KJIT_TRITON_BUILDS_DIR:-$repo/.deps/triton-builds}
upstream=$builds/triton-3.9.0/bin/python
fb=$builds/fbtriton-3.7.4/bin/python
utlx=$builds/triton-3.8.0/bin/python
targets=${KJIT_TRITON_TARGETS:-"cuda:90 cuda:107 hip:gfx942 hip:gfx950"}

if [[ ! -x "$upstream" || ! -x "$fb" || ! -x "$utlx" ]]; then
  echo "SKIP: no Triton builds in $builds (scripts/install-deps.sh installs triton 3.9.0, fbtriton 3.7.4 and triton 3.8.0 with triton-utlx)"
  [[ -n "${CI:-}" ]] && { echo "FAIL: CI must run the Triton tests"; exit 1; }
  exit 77
fi

work=$(mktemp -d /tmp/kjit-triton-test.XXXXXX)
# shellcheck source=kjitd_script_helpers.sh
source "$here/kjitd_script_helpers.sh"
other=
cleanup() {
  for pid in $daemon $other; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  [[ -n "${KJIT_KEEP_WORK:-}" ]] || rm -rf "$work"
}
trap cleanup EXIT

"$build/bin/kjitd" --socket "$work/kjitd.sock" --cache-dir "$work/cache" --compile-workers 2 --log-level warn \
  --triton-descriptions-dir "$descriptions_dir" \
  >"$work/kjitd.log" 2>&1 &
daemon=$!
for _ in $(seq 600); do
  kjit health >/dev/null 2>&1 && break
  kill -0 "$daemon" 2>/dev/null || { cat "$work/kjitd.log"; exit 1; }
  sleep 0.1
done
kjit health >/dev/null || { echo "FAIL: kjitd did not serve within 60 s"; cat "$work/kjitd.log"; exit 1; }

# A Triton worker is started with the daemon (triton.prestart), before any
# Triton request: the builds found in the background, the default one warm.
prestarted=
# Live and ready (every running worker ready, none compiling): started and
# warmed, at idle priority (a loaded machine makes that slow).
for _ in $(seq 3000); do
  kjit health --verbose >"$work/health.txt" 2>/dev/null || true
  if grep -q "by class:.*[0-9] triton" "$work/health.txt" && grep -Eq "([0-9]+) running \(\1 ready" "$work/health.txt"; then
    prestarted=yes
    break
  fi
  sleep 0.1
done
if [[ -n $prestarted ]]; then
  ok "a Triton worker is live before the first Triton request ($(kjit health --verbose | grep "by class:" | sed 's/^ *//'))"
  start_ns=$(date +%s%N)
  kjit compile "$here/data/softmax.ttir" -t cuda:90 -o "$work/first.cubin" --json >"$work/first.json"
  echo "   the daemon's first Triton compile (softmax, cuda:90): $(( ($(date +%s%N) - start_ns) / 1000000 )) ms"
else
  fail "no Triton worker within 300 s of the daemon's start: $(kjit health --verbose | grep "by class:")"
fi

# The builds, as `kjit toolkits --json` lists them.
kjit toolkits --json >"$work/toolkits.json"
if [[ $(json "$work/toolkits.json" '" ".join(b.get("name","?")+("*" if b.get("default") else "")+("+tlx" if b.get("tlx") else "") for b in d["triton"])') == "triton-3.9.0* fbtriton-3.7.4+tlx triton-3.8.0+tlx" ]]; then
  ok "kjit toolkits lists triton-3.9.0 (default), fbtriton-3.7.4 (TLX) and triton-3.8.0 (TLX)"
else
  fail "kjit toolkits --json lists: $(json "$work/toolkits.json" 'd["triton"]')"
fi

# The builds as described are kept in the descriptions directory: another
# daemon there finds them unchanged, asks no interpreter, and lists them the
# same (each description's inputs are the same files, unchanged).
"$build/bin/kjitd" --socket "$work/recall.sock" --cache-dir "$work/recall-cache" --compile-workers 1 --log-level info \
  --triton-descriptions-dir "$descriptions_dir" --no-triton-prestart >"$work/recall.log" 2>&1 &
recall=$!
for _ in $(seq 600); do "$build/bin/kjit" -s "$work/recall.sock" health >/dev/null 2>&1 && break; sleep 0.1; done
"$build/bin/kjit" -s "$work/recall.sock" toolkits --json >"$work/recall-toolkits.json" 2>&1 || true
kill "$recall" 2>/dev/null || true
wait "$recall" 2>/dev/null || true
if grep -q "Triton builds unchanged since they were described: 3 build(s)" "$work/recall.log" &&
    [[ $(json "$work/recall-toolkits.json" 'json.dumps(d["triton"], sort_keys=True)') == \
       "$(json "$work/toolkits.json" 'json.dumps(d["triton"], sort_keys=True)')" ]]; then
  ok "a second daemon on the same descriptions directory lists the same three builds without describing them"
else
  fail "a second daemon on $descriptions_dir: $(grep -i "triton build" "$work/recall.log" | head -5)"
fi

# compile_and_compare PYTHON FILE TARGET OPTION... : kjitd against Triton.
compile_and_compare() {
  local python=$1 file=$2 target=$3
  shift 3
  local name kopts=() ropts=() build_flag=()
  name=$(basename "$file" .ttir).${target/:/_}
  for option in "$@"; do kopts+=(--triton-option "$option"); ropts+=(--option "$option"); done
  [[ $python == "$fb" ]] && build_flag=(--triton fbtriton-3.7.4)
  [[ $python == "$utlx" ]] && build_flag=(--triton triton-3.8.0)
  mkdir -p "$work/$name.ref"
  local reference=ok
  "$python" "$here/reference_compile.py" "$file" --target "$target" "${ropts[@]}" --out "$work/$name.ref" \
      >"$work/$name.ref.log" 2>&1 || reference=failed
  if ! kjit compile "$file" -t "$target" "${build_flag[@]}" "${kopts[@]}" -o "$work/$name.kjit" --json \
      >"$work/$name.json" 2>"$work/$name.err"; then
    # Triton itself cannot build some kernels for some targets (LLVM aborts
    # on the persistent TMA matmul for gfx942): kjitd must refuse them as the
    # input's fault, and carry on.
    if [[ $reference == failed ]] && grep -q "invalid argument" "$work/$name.err"; then
      ok "$name: triton.compile fails on it too, and kjitd refuses it as invalid argument"
    else
      fail "$name: kjit compile: $(head -c 2000 "$work/$name.err")"
    fi
    return
  fi
  if [[ $reference == failed ]]; then
    fail "$name: kjitd compiled what triton.compile could not: $(tail -5 "$work/$name.ref.log")"
    return
  fi
  local binary metadata
  binary=$(ls "$work/$name.ref"/*.cubin "$work/$name.ref"/*.hsaco 2>/dev/null | head -1 || true)
  metadata=$(ls "$work/$name.ref"/*.json | grep -v '/result.json$' | head -1)
  if ! cmp -s "$work/$name.kjit" "$binary"; then
    fail "$name: the binary differs from triton.compile's ($(stat -c %s "$work/$name.kjit") vs $(stat -c %s "$binary") bytes)"
    return
  fi
  if [[ $(python3 - "$work/$name.json" "$metadata" <<'PY'
import json, sys
ours = json.load(open(sys.argv[1]))["triton_metadata"]
theirs = json.load(open(sys.argv[2]))
print("same" if ours == theirs else "differs: " + ", ".join(sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))))
PY
) != same ]]; then
    fail "$name: the metadata differs from Triton's"
    return
  fi
  ok "$name: identical to triton.compile ($(stat -c %s "$binary") bytes, $(json "$work/$name.json" 'd["triton_build"]'))"
}

corpus=$here/data/corpus.json
for file in "$here"/data/*.ttir; do
  mapfile -t options < <(python3 -c "import json,sys; [print(f'{k}={str(v).lower() if isinstance(v,bool) else v}') for k,v in json.load(open(sys.argv[1]))['kernels'].get(sys.argv[2],{}).items()]" "$corpus" "$(basename "$file")")
  for target in $targets; do compile_and_compare "$upstream" "$file" "$target" "${options[@]}"; done
done
for file in "$here"/data/tlx/*.ttir; do
  [[ -e $file ]] || continue
  mapfile -t options < <(python3 -c "import json,sys; [print(f'{k}={str(v).lower() if isinstance(v,bool) else v}') for k,v in json.load(open(sys.argv[1]))['kernels'].get(sys.argv[2],{}).items()]" "$here/data/tlx/corpus.json" "$(basename "$file")")
  for target in cuda:90 cuda:100; do compile_and_compare "$fb" "$file" "$target" "${options[@]}"; done
done

# A hit: the same request again answers from the cache with the same bytes.
first=$(ls "$here"/data/*.ttir | head -1)
kjit compile "$first" -t cuda:90 -o "$work/hit.cubin" --json >"$work/hit1.json"
kjit compile "$first" -t cuda:90 -o "$work/hit2.cubin" --json >"$work/hit2.json"
if [[ $(json "$work/hit2.json" 'd["cache"]') =~ ^(memory|disk)$ ]] && cmp -s "$work/hit.cubin" "$work/hit2.cubin"; then
  ok "a second compile is a $(json "$work/hit2.json" 'd["cache"]') hit with the same cubin"
else
  fail "a second compile answered from '$(json "$work/hit2.json" 'd["cache"]')'"
fi
# The key: an option and the build change it; the build's identity is in it.
kjit compile "$first" -t cuda:90 --triton-option num_warps=8 -o "$work/w8.cubin" --json >"$work/w8.json"
kjit compile "$first" -t cuda:90 --triton fbtriton-3.7.4 -o "$work/fb.cubin" --json >"$work/fb.json"
keys=$(for f in hit1 w8 fb; do json "$work/$f.json" 'd["key"]'; done | sort -u | wc -l)
if [[ $keys == 3 ]] && json "$work/hit1.json" '[c["value"] for c in d["key_components"] if c["name"]=="toolchain.triton"][0]' |
    grep -q "libtriton.so:[0-9a-f]\{64\}"; then
  ok "num_warps and the build change the key; the key holds libtriton.so's digest"
else
  fail "keys: $keys distinct of 3; components: $(json "$work/hit1.json" 'd["key_components"]')"
fi

# expect_refusal WHAT PATTERN ARGS...: kjit compile fails with PATTERN in its message.
expect_refusal() {
  local what=$1 pattern=$2
  shift 2
  local msg
  if msg=$(kjit compile "$@" -o "$work/refused" 2>&1); then
    fail "$what compiled"
  elif [[ $msg == *$pattern* ]]; then
    ok "$what: refused ($(echo "$msg" | head -1 | cut -c1-150))"
  else
    fail "$what: $msg"
  fi
}
printf 'this is not MLIR\n' >"$work/bad.ttir"
expect_refusal "text that is not MLIR" "invalid argument" "$work/bad.ttir" -t cuda:90
sed 's/tt.get_program_id/tt.no_such_op/' "$first" >"$work/unknown_op.ttir"
expect_refusal "an unknown op" "invalid argument" "$work/unknown_op.ttir" -t cuda:90
expect_refusal "an unknown option" "known:" "$first" -t cuda:90 --triton-option no_such_option=1

# A request's own edits: another key, and the pass gone from what ran.
kjit compile "$first" -t cuda:90 --triton-edit disable:ttgir/tritongpu-coalesce -o "$work/edit.cubin" --json \
  >"$work/edit.json"
edited_ttgir=$(json "$work/edit.json" 'd["log"]' | grep "^ttgir passes:" | tr ' ' '\n' || true)
if [[ $(json "$work/edit.json" 'd["key"]') != $(json "$work/hit1.json" 'd["key"]') ]] &&
    grep -qx tritongpu-remove-layout-conversions <<<"$edited_ttgir" && ! grep -qx tritongpu-coalesce <<<"$edited_ttgir"; then
  ok "--triton-edit disable:ttgir/tritongpu-coalesce: another key, and ttgir ran without the pass"
else
  fail "--triton-edit: $(head -c 400 "$work/edit.json")"
fi
expect_refusal "an edit whose anchor never runs" "invalid argument*no-such-pass" "$first" -t cuda:90 --triton-edit disable:no-such-pass
expect_refusal "a malformed --triton-edit" "--triton-edit wants" "$first" -t cuda:90 --triton-edit disable
expect_refusal "num_warps of the wrong type" "integer" "$first" -t cuda:90 --triton-option num_warps=many
expect_refusal "num_warps=3" "invalid argument" "$first" -t cuda:90 --triton-option num_warps=3
expect_refusal "ir_override" "not taken by kjit" "$first" -t cuda:90 --triton-option ir_override=/etc/passwd
expect_refusal "a build that is not there" "builds present" "$first" -t cuda:90 --triton triton-0.1
expect_refusal "compiler flags on Triton input" "Triton's own options" "$first" -t cuda:90 -X=-lineinfo
tlx=$(ls "$here"/data/tlx/*.ttir 2>/dev/null | head -1 || true)
if [[ -n $tlx ]]; then
  expect_refusal "TLX on upstream Triton" "TLX" "$tlx" -t cuda:90 --triton triton-3.9.0
  if kjit compile "$tlx" -t cuda:90 -o "$work/tlx.cubin" --json >"$work/tlx.json" 2>&1 &&
      [[ $(json "$work/tlx.json" 'd["triton_build"]') == fbtriton-3.7.4 ]]; then
    ok "a TLX module without --triton goes to fbtriton-3.7.4"
  else
    fail "a TLX module without --triton: $(head -c 500 "$work/tlx.json")"
  fi
fi
# Recipes: everything compiled so far, rebuilt for a target none of it was
# compiled for; the same request for that target is then a hit.
kjit warm --target cuda:120 --json >"$work/warm.json"
kjit compile "$first" -t cuda:120 -o "$work/warm.cubin" --json >"$work/warm-hit.json"
if [[ $(json "$work/warm.json" 'd["compiled"] > 0 and d["failed"] == 0') == True &&
    $(json "$work/warm-hit.json" 'd["cache"]') =~ ^(memory|disk)$ ]]; then
  ok "kjit warm --target cuda:120 built $(json "$work/warm.json" 'd["compiled"]') Triton recipes; the same request is then a hit"
else
  fail "warm: $(cat "$work/warm.json"); then $(json "$work/warm-hit.json" 'd["cache"]')"
fi

# The launch plan of a Triton kernel comes from its metadata: the block from
# num_warps, the dynamic shared memory from "shared"; over 228 KiB on sm_107
# is the oversized mode with SPREAD scheduling, as Triton's own launcher sets.
plan_json() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["block"][0], d["dynamic_shared_bytes"], d["oversized_shared_memory"], " ".join(a["name"] for a in d["launch_attributes"]))'; }
kjit compile "$first" -t cuda:90 --triton-option num_warps=8 -o "$work/p.cubin" --json >"$work/p.json"
expected="$(( $(json "$work/p.json" 'd["triton_metadata"]["num_warps"]') * 32 )) $(json "$work/p.json" 'd["triton_metadata"]["shared"]') False"
got=$(kjit plan "$first" -t cuda:90 -k "$(json "$work/p.json" 'd["triton_metadata"]["name"]')" --grid 4 --triton-option num_warps=8 --json | plan_json)
if [[ $got == "$expected"* ]]; then ok "kjit plan of a Triton kernel: block and shared memory from its metadata ($got)"; else fail "plan: got '$got', metadata says '$expected'"; fi
tma=$here/data/persistent_matmul_tma.ttir
got=$(kjit plan "$tma" -t cuda:107 -k persistent_matmul_tma --grid 4 --triton-option num_stages=7 --json | plan_json || true)
if [[ $got == *" True "*CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE*CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE* ]] &&
    (( $(echo "$got" | cut -d' ' -f2) > 233472 )); then
  ok "a Triton matmul with num_stages=7 on sm_107 ($(echo "$got" | cut -d' ' -f2) bytes): oversized shared memory, SPREAD"
else
  fail "sm_107 oversized plan: '$got'"
fi
if msg=$(kjit plan "$tma" -t cuda:100 -k persistent_matmul_tma --grid 4 --triton-option num_stages=7 2>&1); then
  fail "the same kernel on sm_100 planned: $msg"
elif [[ $msg == *"out of resource: shared memory"* ]]; then
  ok "the same kernel on sm_100 is out of resource, with the numbers"
else
  fail "sm_100: $msg"
fi

# A bundle carries Triton kernels to another node: exported here, imported
# into a second kjitd with an empty cache, the same request is a hit there.
# The other daemons below serve triton-3.9.0's kernels alone: they know that
# build only, and start no Triton worker ahead.
: >"$work/upstream-only.toml"
only_triton_builds "$work/upstream-only.toml" "$upstream"
kjit cache export -o "$work/triton.bundle" --json >"$work/export.json"
"$build/bin/kjitd" --socket "$work/other.sock" --cache-dir "$work/other-cache" --compile-workers 1 --log-level warn \
  --triton-descriptions-dir "$descriptions_dir" \
  --config "$work/upstream-only.toml" --no-triton-prestart >"$work/other.log" 2>&1 &
other=$!
for _ in $(seq 600); do "$build/bin/kjit" -s "$work/other.sock" health >/dev/null 2>&1 && break; sleep 0.1; done
if "$build/bin/kjit" -s "$work/other.sock" cache import "$work/triton.bundle" >/dev/null &&
    "$build/bin/kjit" -s "$work/other.sock" compile "$first" -t cuda:90 -o "$work/imported.cubin" --json >"$work/imported.json" &&
    [[ $(json "$work/imported.json" 'd["cache"]') =~ ^(memory|disk)$ ]] && cmp -s "$work/hit.cubin" "$work/imported.cubin"; then
  ok "a bundle carries Triton kernels: imported into another kjitd, the request is a hit with the same cubin"
else
  fail "bundle: $(head -c 300 "$work/imported.json")"
fi
kill "$other"; wait "$other" 2>/dev/null || true
other=
# Tenants: each tenant's Triton kernels live in its own namespace (a miss
# for the other), counted in its own stats; no token, no compile.
printf %s alpha-token >"$work/alpha.token"
printf %s beta-token >"$work/beta.token"
cat >"$work/tenants.toml" <<TOML
[[tenants]]
name = "alpha"
token_sha256 = "$(printf %s alpha-token | sha256sum | cut -d' ' -f1)"

[[tenants]]
name = "beta"
token_sha256 = "$(printf %s beta-token | sha256sum | cut -d' ' -f1)"
TOML
"$build/bin/kjitd" --socket "$work/tenants.sock" --cache-dir "$work/tenants-cache" --tenants "$work/tenants.toml" \
  --triton-descriptions-dir "$descriptions_dir" \
  --socket-requires-token --compile-workers 1 --log-level warn --config "$work/upstream-only.toml" \
  --no-triton-prestart >"$work/tenants.log" 2>&1 &
other=$!
for _ in $(seq 600); do "$build/bin/kjit" -s "$work/tenants.sock" health >/dev/null 2>&1 && break; sleep 0.1; done
as() { local who=$1; shift; "$build/bin/kjit" -s "$work/tenants.sock" --token-file "$work/$who.token" "$@"; }
as alpha compile "$first" -t cuda:90 -o "$work/alpha.cubin" --json >"$work/alpha1.json" 2>&1 || true
as alpha compile "$first" -t cuda:90 -o "$work/alpha.cubin" --json >"$work/alpha2.json" 2>&1 || true
as beta compile "$first" -t cuda:90 -o "$work/beta.cubin" --json >"$work/beta.json" 2>&1 || true
anonymous=$("$build/bin/kjit" -s "$work/tenants.sock" compile "$first" -t cuda:90 -o "$work/anon.cubin" 2>&1 || true)
if [[ $(json "$work/alpha1.json" 'd["cache"]') == compiled && $(json "$work/alpha2.json" 'd["cache"]') =~ ^(memory|disk)$ &&
      $(json "$work/beta.json" 'd["cache"]') == compiled && $anonymous == *nauthenticated* ]] &&
    cmp -s "$work/alpha.cubin" "$work/beta.cubin"; then
  ok "tenants: a Triton kernel alpha compiled is alpha's hit and beta's miss (the same cubin); no token, no compile"
else
  fail "tenants: alpha $(head -c 200 "$work/alpha1.json") / $(head -c 200 "$work/alpha2.json"); beta $(head -c 200 "$work/beta.json"); $anonymous"
fi
as beta cache stats --json >"$work/beta-stats.json"
if [[ $(json "$work/beta-stats.json" 'd.get("namespace_only")') == True && $(json "$work/beta-stats.json" 'd["compiles"]') == 1 ]]; then
  ok "tenants: beta's stats count its own Triton compile alone"
else
  fail "tenants: beta's stats $(head -c 300 "$work/beta-stats.json")"
fi
kill "$other"; wait "$other" 2>/dev/null || true
other=
# Sealed with refuse: a Triton hit is served, a Triton miss is refused naming the seal.
kjit warm --seal --after-warmup refuse >/dev/null
if kjit compile "$first" -t cuda:90 -o "$work/sealed-hit.cubin" >/dev/null 2>&1 &&
    msg=$(kjit compile "$first" -t cuda:90 --triton-option num_warps=2 -o "$work/sealed-miss.cubin" 2>&1); then
  fail "a Triton miss after the seal compiled"
elif [[ ${msg:-} == *"failed precondition"*seal* ]]; then
  ok "after the seal a Triton hit is served and a miss refused: $(echo "$msg" | head -1 | cut -c1-120)"
else
  fail "sealed: ${msg:-the hit was not served}"
fi
kjit warm --unseal >/dev/null

# Triton 3.8 + uTLX: the plugin package is listed with its version and
# digests, and its TLX kernels (one file per target) compile through kjitd
# byte-identical to a fresh 3.8 process that imports the plugin. Last: the
# gfx950 files are TTIR for AMD that `kjit warm --target cuda:120` above
# could not rebuild (the NVIDIA ones name their target, and are no recipe).
if [[ $(json "$work/toolkits.json" '[p["distribution"]+" "+p["version"]+" "+str(len(p["libraries"][0]["sha256"])) for b in d["triton"] if b.get("name")=="triton-3.8.0" for p in b["plugins"] if "distribution" in p]') == "['triton-utlx 3.8.0.post16 64']" ]]; then
  ok "kjit toolkits --json lists triton-3.8.0's plugin triton-utlx 3.8.0.post16 with its library's digest"
else
  fail "triton-3.8.0's plugins: $(json "$work/toolkits.json" '[b.get("plugins") for b in d["triton"] if b.get("name")=="triton-3.8.0"]')"
fi
for file in "$here"/data/utlx/*.ttir; do
  mapfile -t options < <(python3 -c "import json,sys; [print(f'{k}={v}') for k,v in json.load(open(sys.argv[1]))['kernels'].get(sys.argv[2],{}).items()]" "$here/data/utlx/corpus.json" "$(basename "$file")")
  target=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['targets'][sys.argv[2]])" "$here/data/utlx/corpus.json" "$(basename "$file")")
  compile_and_compare "$utlx" "$file" "$target" "${options[@]}"
done

# The daemon and its workers survived all of it.
if kjit compile "$first" -t cuda:90 -o "$work/after.cubin" >/dev/null 2>&1; then ok "kjitd still compiles"; else fail "kjitd no longer compiles"; fi

echo "$passed passed, $failures failed"
exit $((failures > 0))
