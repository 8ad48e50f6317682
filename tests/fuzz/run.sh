#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time on a copy of its committed
# corpus, prints each one's executions and findings, and fails on any finding.
#
#   tests/fuzz/run.sh [BUILD_DIR]     (default build-fuzz; build kjit_fuzz_targets first)
#   FUZZ_SECONDS=20  time per target     FUZZ_JOBS=nproc  targets run at once
#
# A finding's reproducer and log are kept under BUILD_DIR/fuzz-findings/TARGET/;
# add the reproducer to tests/fuzz/corpus/TARGET/ once fixed, so that the
# ctest replay (label "fuzz") keeps it fixed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build-fuzz}
build=$(cd "$build" && pwd) || exit 2
seconds=${FUZZ_SECONDS:-20}
jobs=${FUZZ_JOBS:-$(nproc)}
targets=(cubin_reader hsaco_reader ptx_reader cache_entry worker_protocol daemon_config compile_request include_lexer)

work=$(mktemp -d "${TMPDIR:-/tmp}/kjit-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
findings=$build/fuzz-findings

# Fuzzes one target; leaves its verdict in $work/NAME/result as
# "pass|fail EXECUTIONS WHAT".
run_one() {
  local name=$1 binary=$build/bin/kjit_fuzz_$1 dir=$work/$1
  mkdir -p "$dir/corpus"
  if [[ ! -x $binary ]]; then
    echo "fail 0 no binary at $binary" >"$dir/result"
    return
  fi
  # A copy, so that what libFuzzer adds never lands in the repository.
  cp -R "$here/corpus/$name/." "$dir/corpus/"
  # A dictionary of the format's keywords, where the target has one.
  local dict=()
  [[ -f $here/dicts/$name.dict ]] && dict=(-dict="$here/dicts/$name.dict")
  # The outer timeout only guards against a fuzzer that stops answering;
  # libFuzzer itself stops at max_total_time and reports slow inputs.
  timeout --kill-after=10 $((seconds + 120)) "$binary" "$dir/corpus" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/" "${dict[@]}" >"$dir/log" 2>&1
  local rc=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$dir/log" | tail -n 1)
  local artifacts
  artifacts=$(cd "$dir" && ls -d crash-* leak-* timeout-* oom-* slow-unit-* 2>/dev/null | grep -v '^slow-unit-' || true)
  if [[ $rc -eq 0 && -z $artifacts ]]; then
    echo "pass ${execs:-0} no findings" >"$dir/result"
    return
  fi
  mkdir -p "$findings/$name"
  cp "$dir/log" "$findings/$name/log"
  local what="exit status $rc"
  if [[ -n $artifacts ]]; then
    for a in $artifacts; do cp "$dir/$a" "$findings/$name/"; done
    what="$(echo $artifacts | tr '\n' ' ')(kept in $findings/$name)"
  fi
  echo "fail ${execs:-0} $what" >"$dir/result"
}

running=0
for name in "${targets[@]}"; do
  run_one "$name" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
done
wait

passed=0
failed=0
for name in "${targets[@]}"; do
  [[ -f $work/$name/result ]] || echo "fail 0 the run left no verdict" >"$work/$name/result"
  read -r verdict execs what <"$work/$name/result"
  if [[ $verdict == pass ]]; then
    passed=$((passed + 1))
    printf '%-16s %10s executions  %s\n' "$name" "$execs" "$what"
  else
    failed=$((failed + 1))
    printf '%-16s %10s executions  FAILED: %s\n' "$name" "$execs" "$what"
    if [[ -f $work/$name/log ]]; then
      # The sanitizer's report and stack, without libFuzzer's progress lines.
      grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse|INITED)' "$work/$name/log" | tail -n 60 | sed 's/^/    /'
    fi
  fi
done
echo "$passed passed, $failed failed"
((failed == 0))
