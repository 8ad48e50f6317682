#!/usr/bin/env bash
# Plugins belong to the builds they are for ([[triton.plugin]]), through
# kjitd and its --check-config:
# - a plugin a named build cannot load is refused at start and by
#   --check-config, naming the plugin and the build (uTLX's library, built
#   for Triton 3.8, named for 3.9: loading it would crash 3.9; a package
#   the build does not have and a build that is not there are refused the
#   same way, tested in tests/unit/backends/triton_plugin_settings_test.cpp);
# - a configured library is listed under its build only and enters the key
#   of that build's compiles as a component of its own;
# - a plugin package's variable (uTLX's UTLX_NO_LAYOUT_PROPAGATION) comes
#   from the configuration: the compile equals Triton 3.8 + uTLX in a fresh
#   process with that variable set, the key differs from the one without it,
#   and `kjit cache explain` names the plugin;
# - a request switches a plugin off for one kernel (--triton-plugin-off):
#   the compile equals a fresh process without the plugin's stages hook, the
#   key says so, and a TLX kernel that needs the plugin's stages is the
#   input's error while the daemon serves on;
# - a build's targets beyond its bundled ptxas: Triton 3.8 assembles
#   cuda:107 with Triton 3.9's newer ptxas-blackwell, named in the key and
#   the listing; with no such ptxas, FAILED_PRECONDITION.
#
# Needs scripts/install-deps.sh's Triton 3.9.0 and 3.8.0 (+ uTLX) builds;
# skips without them (exit 77), except under CI. No GPU needed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${KJIT_BUILD_DIR:-$repo/build}
builds=${KJIT_TRITON_BUILDS_DIR:-$repo/.deps/triton-builds}
upstream=$builds/triton-3.9.0/bin/python
utlx=$builds/triton-3.8.0/bin/python
if [[ ! -x "$upstream" || ! -x "$utlx" ]]; then
  echo "SKIP: no Triton 3.9.0 and 3.8.0 builds in $builds (scripts/install-deps.sh installs them)"
  [[ -n "${CI:-}" ]] && { echo "FAIL: CI must run the Triton tests"; exit 1; }
  exit 77
fi
test_plugin=$("$upstream" -I -c 'import os, triton; print(os.path.join(os.path.dirname(triton.__file__), "plugins", "libTritonPluginsTestLib.so"))')
utlx_library=$("$utlx" -I -c 'import os, utlx_plugin; print(os.path.join(os.path.dirname(utlx_plugin.__file__), "libutlx.so"))')
[[ -f $test_plugin && -f $utlx_library ]] || { echo "FAIL: missing $test_plugin or $utlx_library"; exit 1; }

work=$(mktemp -d /tmp/kjit-build-plugins-test.XXXXXX)
# shellcheck source=kjitd_script_helpers.sh
source "$here/kjitd_script_helpers.sh"
trap 'stop_daemon; rm -rf "$work"' EXIT
component() { json "$1" "next((c['value'] for c in d['key_components'] if c['name'] == '$2'), '')"; }

# --check-config CONFIG: its exit status and output in $work/check.out.
check_config() {
  local status=0
  "$build/bin/kjitd" --config "$1" --check-config --triton-descriptions-dir "$descriptions_dir" >"$work/check.out" 2>&1 ||
    status=$?
  return $status
}

# 1. Refusals at --check-config and at start.
cat >"$work/wrong-release.toml" <<TOML
[[triton.plugin]]
builds = ["triton-3.9.0"]
library = "$utlx_library"
TOML
only_triton_builds "$work/wrong-release.toml" "$upstream"
if ! check_config "$work/wrong-release.toml" && grep -q "triton-3.9.0" "$work/check.out" &&
    grep -q "libutlx.so" "$work/check.out"; then
  ok "--check-config refuses uTLX's 3.8 library named for triton-3.9.0, naming both"
else
  fail "--check-config with a 3.8 library for 3.9: $(head -c 1500 "$work/check.out")"
fi
"$build/bin/kjitd" --socket "$work/refused.sock" --cache-dir "$work/refused-cache" --config "$work/wrong-release.toml" \
  --triton-descriptions-dir "$descriptions_dir" \
  --log-level warn >"$work/refused.log" 2>&1 &
refused=$!
for _ in $(seq 1800); do kill -0 "$refused" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$refused" 2>/dev/null; then
  kill "$refused"; wait "$refused" || true
  fail "kjitd started with a plugin its build cannot load"
elif wait "$refused"; then
  fail "kjitd exited 0 with a plugin its build cannot load: $(head -c 1000 "$work/refused.log")"
elif grep -q "triton-3.9.0" "$work/refused.log" && grep -q "libutlx.so" "$work/refused.log"; then
  ok "kjitd refuses to start with it, naming the plugin and the build"
else
  fail "kjitd's refusal: $(head -c 1500 "$work/refused.log")"
fi
cat >"$work/plugins.toml" <<TOML
[[triton.plugin]]
builds = ["triton-3.9.0"]
library = "$test_plugin"

[[triton.plugin]]
builds = ["triton-3.8.0"]
package = "triton-utlx"
environment = { UTLX_NO_LAYOUT_PROPAGATION = "1" }
TOML
# --check-config needs the two builds the plugins name; the daemon below
# knows fbtriton too, to show that it gets neither.
cp "$work/plugins.toml" "$work/plugins-check.toml"
only_triton_builds "$work/plugins-check.toml" "$upstream" "$utlx"
if check_config "$work/plugins-check.toml" && grep -q "triton plugin $test_plugin for triton-3.9.0: loads" "$work/check.out" &&
    grep -q "triton plugin triton-utlx for triton-3.8.0: loads" "$work/check.out"; then
  ok "--check-config loads each plugin in the build it names"
else
  fail "--check-config of good plugins: $(head -c 1500 "$work/check.out")"
fi

# 2. Without the settings: the keys to compare with.
plain=$here/data/softmax.ttir
tlx_kernel=$here/data/utlx/utlx_async_load_matmul.sm_90.ttir
: >"$work/plain.toml"
only_triton_builds "$work/plain.toml" "$upstream" "$utlx"
start_daemon "$work/plain.toml" 180
kjit compile "$plain" -t cuda:90 -o "$work/plain-39.cubin" --json >"$work/plain-39.json"
kjit compile "$tlx_kernel" -t cuda:90 --triton triton-3.8.0 --triton-option num_warps=4 -o "$work/tlx.cubin" \
  --json >"$work/tlx.json"

# 3. With them.
start_daemon "$work/plugins.toml" 180
kjit toolkits --json >"$work/toolkits.json"
listed=$(json "$work/toolkits.json" '{b["name"]: [p.get("library") or p.get("distribution") for p in b.get("plugins", []) if p.get("configured") or p.get("environment")] for b in d["triton"] if "name" in b}')
if [[ $listed == "{'triton-3.9.0': ['$test_plugin'], 'fbtriton-3.7.4': [], 'triton-3.8.0': ['triton-utlx']}" ]] &&
    [[ $(json "$work/toolkits.json" '[p["environment"] for b in d["triton"] if b.get("name") == "triton-3.8.0" for p in b["plugins"] if p.get("distribution") == "triton-utlx"]') == "[{'UTLX_NO_LAYOUT_PROPAGATION': '1'}]" ]]; then
  ok "kjit toolkits --json lists each configured plugin under its build only, with its variables"
else
  fail "kjit toolkits --json: $listed"
fi
kjit compile "$plain" -t cuda:90 -o "$work/with-39.cubin" --json >"$work/with-39.json"
if [[ $(component "$work/with-39.json" "toolchain.triton.plugin $test_plugin") =~ ^sha256:[0-9a-f]{64}$ ]] &&
    [[ $(json "$work/with-39.json" 'd["key"]') != $(json "$work/plain-39.json" 'd["key"]') ]] &&
    cmp -s "$work/plain-39.cubin" "$work/with-39.cubin"; then
  ok "triton-3.9.0's configured library is a key component of its own (its digest); no edit uses it, the bytes are the same"
else
  fail "3.9 with its plugin: $(json "$work/with-39.json" 'd["key_components"]')"
fi
kjit compile "$plain" -t cuda:90 --triton-plugin-off "$test_plugin" -o "$work/off-39.cubin" --json >"$work/off-39.json"
if [[ $(component "$work/off-39.json" "triton.plugins_off") == "$test_plugin" ]] &&
    [[ $(json "$work/off-39.json" 'd["key"]') != $(json "$work/with-39.json" 'd["key"]') ]] &&
    cmp -s "$work/plain-39.cubin" "$work/off-39.cubin"; then
  ok "--triton-plugin-off LIBRARY: the key says it was off"
else
  fail "3.9 plugin off: $(json "$work/off-39.json" 'd["key_components"]')"
fi

mkdir -p "$work/ref-env"
"$utlx" "$here/reference_compile.py" "$tlx_kernel" --target cuda:90 --option num_warps=4 \
  --env UTLX_NO_LAYOUT_PROPAGATION=1 --out "$work/ref-env" >"$work/ref-env.log" 2>&1
kjit compile "$tlx_kernel" -t cuda:90 --triton triton-3.8.0 --triton-option num_warps=4 -o "$work/tlx-env.cubin" \
  --json >"$work/tlx-env.json"
if cmp -s "$work/tlx-env.cubin" "$(ls "$work"/ref-env/*.cubin)" &&
    [[ $(component "$work/tlx-env.json" "toolchain.triton.plugin triton-utlx") == *" UTLX_NO_LAYOUT_PROPAGATION=1" ]] &&
    [[ $(json "$work/tlx-env.json" 'd["key"]') != $(json "$work/tlx.json" 'd["key"]') ]]; then
  ok "UTLX_NO_LAYOUT_PROPAGATION=1 from the configuration: Triton 3.8 + uTLX's bytes with it set, in the plugin's key component"
else
  fail "uTLX with its variable: $(component "$work/tlx-env.json" "toolchain.triton.plugin triton-utlx"); $(tail -3 "$work/ref-env.log")"
fi
if kjit cache explain --json "$(json "$work/tlx.json" 'd["key"]')" "$(json "$work/tlx-env.json" 'd["key"]')" >"$work/explain.json" 2>&1 &&
    [[ $(json "$work/explain.json" '[(x["name"], x["b"].endswith(" UTLX_NO_LAYOUT_PROPAGATION=1"), "UTLX" in x["a"]) for x in d["differences"]]') == "[('toolchain.triton.plugin triton-utlx', True, False)]" ]]; then
  ok "kjit cache explain names the plugin (triton-utlx) and its variable as the difference"
else
  fail "kjit cache explain: $(head -c 1500 "$work/explain.json")"
fi

mkdir -p "$work/ref-off"
"$utlx" "$here/reference_compile.py" "$plain" --target cuda:90 --env UTLX_NO_LAYOUT_PROPAGATION=1 --plugin-hook-off \
  --out "$work/ref-off" >"$work/ref-off.log" 2>&1
kjit compile "$plain" -t cuda:90 --triton triton-3.8.0 --triton-plugin-off triton-utlx -o "$work/off-38.cubin" \
  --json >"$work/off-38.json"
kjit compile "$plain" -t cuda:90 --triton triton-3.8.0 -o "$work/on-38.cubin" --json >"$work/on-38.json"
if cmp -s "$work/off-38.cubin" "$(ls "$work"/ref-off/*.cubin)" &&
    cmp -s <(json "$work/off-38.json" 'd["triton_metadata"]["hash"]') <(json "$(ls "$work"/ref-off/*.json | grep -v result.json)" 'd["hash"]') &&
    [[ $(component "$work/off-38.json" "triton.plugins_off") == triton-utlx ]] &&
    [[ $(json "$work/off-38.json" 'd["key"]') != $(json "$work/on-38.json" 'd["key"]') ]]; then
  ok "--triton-plugin-off triton-utlx: a fresh 3.8 process's bytes and hash without uTLX's stages hook; the key says so"
else
  fail "3.8 with uTLX off: $(json "$work/off-38.json" 'd["key_components"]'); $(tail -3 "$work/ref-off.log")"
fi
# tlx.local_alias is lowered only by uTLX's llir stage, which its hook adds.
aliased=$here/data/utlx/utlx_aliased_epilogue_matmul.sm_90.ttir
if kjit compile "$aliased" -t cuda:90 --triton triton-3.8.0 --triton-option num_warps=4 --triton-plugin-off '*' \
    -o "$work/tlx-off.cubin" >"$work/tlx-off.out" 2>&1; then
  fail "a TLX kernel that needs uTLX's llir stage compiled with its plugin switched off"
elif grep -q "invalid argument" "$work/tlx-off.out" && grep -q "failed to translate module to LLVM IR" "$work/tlx-off.out" &&
    kjit health >/dev/null; then
  ok "a TLX kernel with its plugin switched off is the input's error (Triton's diagnostic), and the daemon serves on"
else
  fail "TLX kernel, plugin off: $(head -c 1500 "$work/tlx-off.out")"
fi
if ! kjit compile "$plain" -t cuda:90 --triton triton-3.8.0 --triton-plugin-off no-such-plugin -o "$work/x.cubin" \
    >"$work/unknown.out" 2>&1 && grep -q "invalid argument" "$work/unknown.out" &&
    grep -q "its plugins: triton-utlx" "$work/unknown.out"; then
  ok "an unknown plugin name is refused as invalid argument, listing the build's plugins"
else
  fail "unknown plugin name: $(head -c 800 "$work/unknown.out")"
fi

# 4. A build's targets beyond its bundled ptxas: Triton 3.8's ptxas-blackwell
# (13.3) refuses sm_107a; 3.9's (13.4) is lent to it for cuda:107, its
# version and digest in the key and in kjit toolkits --json, and the result
# is Triton 3.8 + uTLX's in a process pointed at that ptxas.
lent=$("$upstream" -I -c 'import os, triton; print(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas-blackwell"))')
if [[ $(json "$work/toolkits.json" '[(b["borrowed_ptxas"]["path"], b["borrowed_ptxas"]["from_build"], 107 in b["borrowed_ptxas"]["cuda_archs"], 107 in b["cuda_archs"], len(b["borrowed_ptxas"]["sha256"])) for b in d["triton"] if b.get("name") == "triton-3.8.0"]') == "[('$lent', 'triton-3.9.0', True, True, 64)]" ]]; then
  ok "kjit toolkits --json: triton-3.8.0 builds cuda:107 with triton-3.9.0's ptxas-blackwell (path, version, digest)"
else
  fail "borrowed ptxas: $(json "$work/toolkits.json" '[b.get("borrowed_ptxas") for b in d["triton"] if b.get("name") == "triton-3.8.0"]')"
fi
mkdir -p "$work/ref-107"
"$utlx" "$here/reference_compile.py" "$plain" --target cuda:107 --env "TRITON_PTXAS_BLACKWELL_PATH=$lent" \
  --out "$work/ref-107" >"$work/ref-107.log" 2>&1
if kjit compile "$plain" -t cuda:107 --triton triton-3.8.0 -o "$work/38-107.cubin" --json >"$work/38-107.json" 2>"$work/38-107.err" &&
    cmp -s "$work/38-107.cubin" "$(ls "$work"/ref-107/*.cubin)" &&
    cmp -s <(json "$work/38-107.json" 'd["triton_metadata"]["hash"]') <(json "$(ls "$work"/ref-107/*.json | grep -v result.json)" 'd["hash"]') &&
    [[ $(component "$work/38-107.json" "toolchain.triton.ptxas") =~ ^ptxas-blackwell\ 13\.[0-9]+\ sha256:[0-9a-f]{64}\ \(triton-3\.9\.0 ]]; then
  ok "triton-3.8.0 for cuda:107: Triton 3.8's bytes and hash with TRITON_PTXAS_BLACKWELL_PATH at 3.9's ptxas, which the key names"
else
  fail "3.8 for cuda:107: $(head -c 600 "$work/38-107.err") $(component "$work/38-107.json" "toolchain.triton.ptxas") $(tail -3 "$work/ref-107.log")"
fi
# Without a build that has a newer ptxas: FAILED_PRECONDITION saying what is missing.
cat >"$work/only-38.toml" <<TOML
local_toolkit_prefix = ""
[triton]
builds = ["$(dirname "$(dirname "$utlx")")"]
TOML
start_daemon "$work/only-38.toml" 180
if ! kjit compile "$plain" -t cuda:107 --triton triton-3.8.0 -o "$work/x.cubin" >"$work/no-lender.out" 2>&1 &&
    grep -q "failed precondition" "$work/no-lender.out" && grep -q "ptxas-blackwell 13.3 does not know it" "$work/no-lender.out"; then
  ok "with no newer ptxas here, cuda:107 on triton-3.8.0 is FAILED_PRECONDITION naming its ptxas-blackwell 13.3"
else
  fail "no lender: $(head -c 800 "$work/no-lender.out")"
fi

echo "passed: $passed, failed: $failures"
[[ $failures -eq 0 ]]
