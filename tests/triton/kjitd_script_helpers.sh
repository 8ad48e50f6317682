# Sourced by the Triton test scripts that drive kjitd (daemon-tests.sh,
# plugin-tests.sh, build-plugins-tests.sh): a daemon on $work's socket and
# cache, started from a configuration file and stopped again, the kjit CLI
# on it, a configuration that knows only the Triton builds a script names,
# and the ok/fail tally. Needs $repo, $build (the build directory) and
# $work (a scratch directory the script removes).
daemon=
# Where the scripts' daemons keep the builds' descriptions: the first daemon
# of a build directory describes the builds, the next ones find them
# unchanged (a daemon of its own cache directory would describe them again).
descriptions_dir=$build/triton-descriptions
stop_daemon() {
  if [[ -n "$daemon" ]]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  daemon=
}
kjit() { "$build/bin/kjit" -s "$work/kjitd.sock" "$@"; }

# start_daemon CONFIG [SECONDS]: kjitd on one cache directory with one
# compile worker, serving within SECONDS (default 60; a daemon with
# [[triton.plugin]] discovers and checks its builds before it serves).
start_daemon() {
  local seconds=${2:-60}
  stop_daemon
  "$build/bin/kjitd" --socket "$work/kjitd.sock" --cache-dir "$work/cache" --compile-workers 1 --log-level warn \
    --triton-descriptions-dir "$descriptions_dir" \
    --config "$1" >"$work/kjitd.log" 2>&1 &
  daemon=$!
  for _ in $(seq $((seconds * 10))); do
    kjit health >/dev/null 2>&1 && return 0
    kill -0 "$daemon" 2>/dev/null || { cat "$work/kjitd.log"; exit 1; }
    sleep 0.1
  done
  echo "FAIL: kjitd did not serve within $seconds s"; cat "$work/kjitd.log"; exit 1
}

# only_triton_builds CONFIG PYTHON...: rewrites CONFIG (TOML) so that the
# daemon knows these Triton builds alone (their interpreters), in [triton]
# builds. kjitd also looks for builds beside the CUDA wheels
# (.deps/triton-builds next to .deps/cuda-wheels): here it reaches the
# wheels through a link in $work, beside which there are none. Each build a
# daemon finds costs it seconds of CPU when it first needs them (a describe,
# a probe compile per target).
only_triton_builds() {
  local config=$1 list="" python
  shift
  for python in "$@"; do list+="${list:+, }\"$(dirname "$(dirname "$python")")\""; done
  ln -sfn "$repo/.deps/cuda-wheels" "$work/cuda-wheels"
  {
    echo "local_toolkit_prefix = \"$work/cuda-wheels\""
    if grep -q '^\[triton\]$' "$config"; then
      sed "s|^\[triton\]\$|[triton]\nbuilds = [$list]|" "$config"
    else
      cat "$config"
      printf '\n[triton]\nbuilds = [%s]\n' "$list"
    fi
  } >"$config.only" && mv "$config.only" "$config"
}

passed=0
failures=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
