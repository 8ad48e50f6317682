#!/usr/bin/env bash
# Triton's stages as kjit's pipeline, through kjitd: `kjit pipeline show`
# lists Triton's own stages and MLIR passes; [triton] plugins and [[edits]]
# of triton-nvidia put Triton's test plugin pass (it renames the kernel to
# "foo") into the ttgir stage; its digest and the edit change the key; taken
# out again, the original bytes and key come back; an edit in a stage Triton
# skips for a .ttir source is refused, never dropped.
#
# Needs scripts/install-deps.sh's Triton 3.9.0 build (it ships the plugin);
# skips without it (exit 77), except under CI. No GPU needed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${KJIT_BUILD_DIR:-$repo/build}
builds=${KJIT_TRITON_BUILDS_DIR:-$repo/.deps/triton-builds}
upstream=$builds/triton-3.9.0/bin/python
if [[ ! -x "$upstream" ]]; then
  echo "SKIP: no Triton 3.9.0 build in $builds (scripts/install-deps.sh installs it)"
  [[ -n "${CI:-}" ]] && { echo "FAIL: CI must run the Triton tests"; exit 1; }
  exit 77
fi
plugin=$("$upstream" -I -c 'import os, triton; print(os.path.join(os.path.dirname(triton.__file__), "plugins", "libTritonPluginsTestLib.so"))')
[[ -f $plugin ]] || { echo "FAIL: the Triton 3.9.0 build has no $plugin"; exit 1; }

work=$(mktemp -d /tmp/kjit-triton-plugin-test.XXXXXX)
# shellcheck source=kjitd_script_helpers.sh
source "$here/kjitd_script_helpers.sh"
trap 'stop_daemon; rm -rf "$work"' EXIT
# stage_passes TOML STAGE [N]: the (first N) passes of that stage, one per
# line. Readers take the whole output (grep without -q, no head): under
# pipefail a reader that stops early would fail the pipeline.
stage_passes() {
  python3 -c 'import sys, tomllib
d = tomllib.load(open(sys.argv[1], "rb"))
n = int(sys.argv[3]) if len(sys.argv) > 3 else None
for p in d["pipelines"].values():
    for s in p["stages"]:
        if s["name"] == sys.argv[2]: print("\n".join(s["passes"][:n]))' "$@"
}
kernel=$here/data/softmax.ttir

# 1. No plugin: Triton's stages, and the reference compile.
: >"$work/plain.toml"
only_triton_builds "$work/plain.toml" "$upstream"
start_daemon "$work/plain.toml"
kjit pipeline show --input triton --target cuda:107 >"$work/show-plain.toml"
stages=$(python3 -c 'import sys, tomllib; d = tomllib.load(open(sys.argv[1], "rb")); print(" ".join(s["name"] for p in d["pipelines"].values() for s in p["stages"]))' "$work/show-plain.toml")
if [[ $stages == "ttir ttgir llir ptx cubin" ]] && grep -q '^\[pipelines.triton-nvidia\]' "$work/show-plain.toml" &&
    stage_passes "$work/show-plain.toml" ttgir | grep -x convert-triton-to-tritongpu >/dev/null; then
  ok "pipeline show --input triton --target cuda:107: triton-nvidia, stages $stages, MLIR passes by name"
else
  fail "pipeline show: $(head -c 1500 "$work/show-plain.toml")"
fi
kjit pipeline show --input triton --target hip:gfx942 >"$work/show-amd.toml"
if grep -q '^\[pipelines.triton-amd\]' "$work/show-amd.toml" && stage_passes "$work/show-amd.toml" amdgcn >/dev/null; then
  ok "pipeline show --target hip:gfx942: triton-amd"
else
  fail "pipeline show hip:gfx942: $(head -c 800 "$work/show-amd.toml")"
fi
kjit compile "$kernel" -t cuda:90 -o "$work/plain.cubin" --json >"$work/plain.json"

# 2. The plugin configured, its pass inserted at the start of ttgir.
cat >"$work/plugin.toml" <<TOML
[triton]
plugins = ["$plugin"]

[[edits]]
pipeline = "triton-nvidia"
op = "insert-before"
anchor = "convert-triton-to-tritongpu"
pass = "tritongpu-plugin"
TOML
only_triton_builds "$work/plugin.toml" "$upstream"
start_daemon "$work/plugin.toml"
kjit pipeline show --input triton --target cuda:90 >"$work/show-plugin.toml"
if [[ $(stage_passes "$work/show-plugin.toml" ttgir 2 | tr '\n' ' ') == "tritongpu-plugin convert-triton-to-tritongpu " ]]; then
  ok "pipeline show puts the plugin's pass first in ttgir"
else
  fail "ttgir with the plugin: $(stage_passes "$work/show-plugin.toml" ttgir 3 | tr '\n' ' ')"
fi
kjit compile "$kernel" -t cuda:90 -o "$work/plugin.cubin" --json >"$work/plugin.json"
name=$(json "$work/plugin.json" 'd["triton_metadata"]["name"]')
if [[ $name == foo ]] && ! cmp -s "$work/plain.cubin" "$work/plugin.cubin" &&
    [[ $(json "$work/plugin.json" 'd["key"]') != $(json "$work/plain.json" 'd["key"]') ]]; then
  ok "with the plugin the kernel is renamed to foo, the cubin and the key change"
else
  fail "with the plugin: name $name, key $(json "$work/plugin.json" 'd["key"]') vs $(json "$work/plain.json" 'd["key"]')"
fi
if json "$work/plugin.json" '" ".join(c["value"] for c in d["key_components"])' | grep -q "libTritonPluginsTestLib.so.*[0-9a-f]\{64\}"; then
  ok "the key components name the plugin library and its digest"
else
  fail "key components: $(json "$work/plugin.json" 'd["key_components"]')"
fi
if kjit compile "$kernel" -t cuda:90 -o "$work/plugin2.cubin" --json >"$work/plugin2.json" &&
    [[ $(json "$work/plugin2.json" 'd["cache"]') =~ ^(memory|disk)$ ]] && cmp -s "$work/plugin.cubin" "$work/plugin2.cubin"; then
  ok "the edited compile is cached like any other"
else
  fail "second edited compile: $(head -c 300 "$work/plugin2.json")"
fi

# 3. Taken out again: the original key, and its bytes from the cache.
start_daemon "$work/plain.toml"
kjit compile "$kernel" -t cuda:90 -o "$work/again.cubin" --json >"$work/again.json"
if cmp -s "$work/plain.cubin" "$work/again.cubin" && [[ $(json "$work/again.json" 'd["key"]') == $(json "$work/plain.json" 'd["key"]') ]]; then
  ok "without the plugin: the original bytes and key"
else
  fail "without the plugin: key $(json "$work/again.json" 'd["key"]')"
fi

# kjit cache explain puts the two keys side by side: the plugin and the edit differ.
if kjit cache explain --json "$(json "$work/plain.json" 'd["key"]')" "$(json "$work/plugin.json" 'd["key"]')" >"$work/explain.txt" 2>&1 &&
    grep -q "libTritonPluginsTestLib.so" "$work/explain.txt" && grep -q "tritongpu-plugin" "$work/explain.txt"; then
  ok "kjit cache explain names the plugin library and the edit as what differs"
else
  fail "kjit cache explain: $(cat "$work/explain.txt")"
fi

# 4. An edit in the stage Triton skips for a .ttir source: refused.
cat >"$work/skipped.toml" <<TOML
[[edits]]
pipeline = "triton-nvidia"
op = "disable"
anchor = "ttir/triton-combine"
TOML
only_triton_builds "$work/skipped.toml" "$upstream"
start_daemon "$work/skipped.toml"
if msg=$(kjit compile "$kernel" -t cuda:90 -o "$work/skipped.cubin" 2>&1); then
  fail "an edit in the skipped ttir stage compiled"
elif [[ $msg == *"failed precondition"*"skips for a .ttir source"* ]]; then
  ok "an edit in the skipped ttir stage is refused: $(echo "$msg" | head -1 | cut -c1-160)"
else
  fail "an edit in the skipped ttir stage: $msg"
fi
# Disabling a ttgir pass runs, and the pipeline shows it gone.
cat >"$work/disable.toml" <<TOML
[[edits]]
pipeline = "triton-nvidia"
op = "disable"
anchor = "ttgir/tritongpu-coalesce"
TOML
only_triton_builds "$work/disable.toml" "$upstream"
start_daemon "$work/disable.toml"
kjit pipeline show --input triton --target cuda:90 >"$work/show-disable.toml"
if kjit compile "$kernel" -t cuda:90 -o "$work/disable.cubin" --json >"$work/disable.json" &&
    ! stage_passes "$work/show-disable.toml" ttgir | grep -x tritongpu-coalesce >/dev/null &&
    [[ $(json "$work/disable.json" 'd["key"]') != $(json "$work/plain.json" 'd["key"]') ]]; then
  ok "disabling tritongpu-coalesce compiles under another key, and pipeline show has it gone"
else
  fail "disable tritongpu-coalesce: $(head -c 300 "$work/disable.json")"
fi

stop_daemon
echo "$passed passed, $failures failed"
exit $((failures > 0))
