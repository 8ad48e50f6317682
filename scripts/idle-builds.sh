#!/usr/bin/env bash
# The sanitizer and fuzz builds of `make test`, started in the background at
# idle CPU priority (SCHED_IDLE) while the default build's tests run: they
# use the CPU those tests leave idle (a test waiting on a daemon, a bound, a
# child process) and give it back the moment a test wants it. The stages
# that need a build wait for it (`wait`), then build what is left in the
# foreground, which also reports any error the background build met.
#
#   scripts/idle-builds.sh start JOBS
#       Starts, one after the other: build-asan's targets (ASAN_TARGETS),
#       then build-fuzz's (FUZZ_TARGETS), both directories configured.
#       Each is a stage of scripts/timed-stage.sh named "at idle priority >
#       build-...", so the stage table shows it without adding it to the
#       total (the time overlaps the tests'). Its output goes to
#       DIR/idle-build.log.
#   scripts/idle-builds.sh wait DIR
#       Returns once no background build of DIR runs (at once when none
#       was started).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ASAN_TARGETS=(kjitd kjit kjit_integration_tests kjit_load_driver)
FUZZ_TARGETS=(kjit_fuzz_targets)

# Held by the background job while it builds DIR; taken by `wait`.
lock_of() { echo "$1/.idle-build.lock"; }

usage() {
  echo "usage: $0 start JOBS | wait DIR" >&2
  exit 2
}

case "${1:-}" in
  start)
    [[ $# -eq 2 && "$2" =~ ^[0-9]+$ ]] || usage
    jobs=$2
    cd "$repo" || exit 1
    mkdir -p build-asan build-fuzz
    # Both locks are taken here, before the job starts, so that a stage that
    # waits right after this returns never finds them free too early.
    exec 8>"$(lock_of build-asan)" 9>"$(lock_of build-fuzz)"
    # One already running (another make test here) goes on; `wait` waits
    # for it, and the foreground builds what it left.
    if ! flock -n 8 || ! flock -n 9; then
      echo "idle-builds: a background build already runs here" >&2
      exit 0
    fi
    stage_parent="${KJIT_STAGE_PARENT:+$KJIT_STAGE_PARENT > }at idle priority"
    (
      # Not make's jobserver: ninja runs its own -j.
      unset MAKEFLAGS MFLAGS MAKELEVEL
      export KJIT_STAGE_PARENT=$stage_parent
      # Failed or interrupted (a Ctrl-C reaches ninja, not this subshell,
      # which ignores it as a background job): no fuzz build after it; the
      # foreground stages build, or report, what is left.
      chrt --idle 0 scripts/timed-stage.sh build-asan -- \
        cmake --build build-asan -j "$jobs" --target "${ASAN_TARGETS[@]}" >build-asan/idle-build.log 2>&1 || exit
      exec 8>&-  # build-asan is done: its tests may start
      chrt --idle 0 scripts/timed-stage.sh build-fuzz -- \
        cmake --build build-fuzz -j "$jobs" --target "${FUZZ_TARGETS[@]}" >build-fuzz/idle-build.log 2>&1
    ) </dev/null &
    # The job holds the locks now; this shell lets go of its copies.
    exec 8>&- 9>&-
    echo "idle-builds: build-asan, then build-fuzz, building in the background at idle priority (pid $!)" >&2
    ;;
  wait)
    [[ $# -eq 2 ]] || usage
    [[ -e "$(lock_of "$2")" ]] || exit 0
    flock "$(lock_of "$2")" true
    ;;
  *) usage ;;
esac
