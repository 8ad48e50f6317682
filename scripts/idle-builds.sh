#!/usr/bin/env bash
# Builds started in the background at idle CPU priority (SCHED_IDLE) while
# other work runs (`make test`: the sanitizer and fuzz builds beside the
# default build's tests): they use the CPU that work leaves idle (a test
# waiting on a daemon, a bound, a child process) and give it back the moment
# it wants it. Whoever needs a build waits for it (`wait`), then builds what
# is left in the foreground, which also reports any error the background
# build met.
#
#   scripts/idle-builds.sh start JOBS DIR "TARGET..." [DIR "TARGET..."]...
#       Builds each configured DIR's targets, one DIR after the other, with
#       `cmake --build DIR -j JOBS`. Each is a stage of scripts/timed-stage.sh
#       named "at idle priority > DIR", so the stage table shows it without
#       adding it to the total (the time overlaps the foreground's). Its
#       output goes to DIR/idle-build.log. One that fails or is interrupted
#       ends the job: the DIRs after it are left to the foreground.
#   scripts/idle-builds.sh wait DIR
#       Returns once no background build of DIR runs (at once when none
#       was started); fails, naming the log, if one still runs after
#       KJIT_IDLE_BUILD_WAIT seconds (default 5400).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Held by the background job while it builds DIR; taken by `wait`.
lock_of() { echo "$1/.idle-build.lock"; }

usage() {
  echo "usage: $0 start JOBS DIR \"TARGET...\" [DIR \"TARGET...\"]... | wait DIR" >&2
  exit 2
}

case "${1:-}" in
  start)
    [[ $# -ge 4 && $(($# % 2)) -eq 0 && "$2" =~ ^[0-9]+$ ]] || usage
    jobs=$2
    shift 2
    cd "$repo" || exit 1
    dirs=() targets=() locks=()
    while (($#)); do
      dirs+=("$1") targets+=("$2")
      shift 2
    done
    # Every lock is taken here, before the job starts, so that a stage that
    # waits right after this returns never finds one free too early.
    for dir in "${dirs[@]}"; do
      mkdir -p "$dir"
      exec {fd}>"$(lock_of "$dir")"
      locks+=("$fd")
      # One already running (another make test here) goes on; `wait` waits
      # for it, and the foreground builds what it left.
      if ! flock -n "$fd"; then
        echo "idle-builds: a background build already runs in $dir" >&2
        exit 0
      fi
    done
    stage_parent="${KJIT_STAGE_PARENT:+$KJIT_STAGE_PARENT > }at idle priority"
    (
      # Not make's jobserver: ninja runs its own -j.
      unset MAKEFLAGS MFLAGS MAKELEVEL
      export KJIT_STAGE_PARENT=$stage_parent
      for i in "${!dirs[@]}"; do
        dir=${dirs[i]}
        # Failed or interrupted (a Ctrl-C reaches ninja, not this subshell,
        # which ignores it as a background job): nothing after it; the
        # foreground builds, or reports, what is left.
        # shellcheck disable=SC2086 # the targets are words
        chrt --idle 0 scripts/timed-stage.sh "$dir" -- \
          cmake --build "$dir" -j "$jobs" --target ${targets[i]} >"$dir/idle-build.log" 2>&1 || exit
        fd=${locks[i]}
        exec {fd}>&-  # DIR is built: whoever waits for it may go on
      done
    ) </dev/null &
    # The job holds the locks now; this shell lets go of its copies.
    for fd in "${locks[@]}"; do exec {fd}>&-; done
    echo "idle-builds: ${dirs[*]}, one after the other, building in the background at idle priority (pid $!)" >&2
    ;;
  wait)
    [[ $# -eq 2 ]] || usage
    [[ -e "$(lock_of "$2")" ]] || exit 0
    # Bounded: a build that hangs must not hold the run until CI's own limit.
    bound=${KJIT_IDLE_BUILD_WAIT:-5400}
    if ! flock -w "$bound" "$(lock_of "$2")" true; then
      echo "idle-builds: the background build of $2 still runs after $bound s; see $2/idle-build.log" >&2
      exit 1
    fi
    ;;
  *) usage ;;
esac
