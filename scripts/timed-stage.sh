#!/usr/bin/env bash
# Times one stage of a build or test run, so every log shows what each
# stage cost (make test, .ci/run).
#
#   scripts/timed-stage.sh NAME -- COMMAND [ARG...]
#       Runs COMMAND, with a start line and an end line
#       (`stage NAME: 123.4 s (exit 0)`) on stderr, appends
#       NAME<TAB>seconds<TAB>exit to the stage file, and exits with
#       COMMAND's status.
#   scripts/timed-stage.sh --summary
#       Prints the stages recorded so far and their total.
#   scripts/timed-stage.sh --reset
#       Empties the stage file.
#
#   KJIT_STAGE_TIMES   the stage file (default build/stage-times.tsv in the
#                      checkout; its directory is made when missing)
#   KJIT_STAGE_PARENT  set by this script for COMMAND: a stage run inside
#                      another is recorded as "OUTER > INNER", and --summary
#                      there lists only the stages inside OUTER. The total
#                      adds up the outermost stages listed, so time spent in
#                      nested stages is not counted twice.
set -uo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
times_file=${KJIT_STAGE_TIMES:-$repo_root/build/stage-times.tsv}
parent=${KJIT_STAGE_PARENT:-}
sep=' > '

usage() {
  echo "usage: $0 NAME -- COMMAND [ARG...] | --summary | --reset" >&2
  exit 2
}

now() { echo "${EPOCHREALTIME:-$(date +%s.%N)}"; }

# Whole seconds, plus minutes from a minute on: "812 s (13m 32s)".
human() {
  awk -v s="$1" 'BEGIN {
    r = int(s + 0.5)
    if (r >= 60) printf "%d s (%dm %02ds)", r, int(r / 60), r % 60
    else printf "%.1f s", s
  }'
}

summary() {
  local prefix=
  [[ -n "$parent" ]] && prefix="$parent$sep"
  local title="stage times${parent:+ in $parent} ($times_file)"
  if [[ ! -s "$times_file" ]]; then
    echo "$title: no stages recorded"
    return 0
  fi
  echo "$title:"
  awk -F '\t' -v prefix="$prefix" -v sep="$sep" '
    function human(s,   r) {
      r = int(s + 0.5)
      if (r >= 60) return sprintf("%d s (%dm %02ds)", r, int(r / 60), r % 60)
      return sprintf("%.1f s", s)
    }
    index($1, prefix) == 1 {
      name = substr($1, length(prefix) + 1)
      rows[++n] = name; secs[n] = $2; codes[n] = $3
      if (length(name) > width) width = length(name)
      if (index(name, sep) == 0) { total += $2; if ($3 != 0) failed++ }
    }
    END {
      if (width < 5) width = 5
      for (i = 1; i <= n; i++)
        printf "  %-*s %18s  exit %s%s\n", width, rows[i], human(secs[i]), codes[i], codes[i] != 0 ? "  FAILED" : ""
      printf "  %-*s %18s%s\n", width, "total", human(total), failed ? sprintf("  (%d failed)", failed) : ""
    }' "$times_file"
}

case "${1:-}" in
  --summary) [[ $# -eq 1 ]] || usage; summary; exit 0 ;;
  --reset)
    [[ $# -eq 1 ]] || usage
    mkdir -p "$(dirname "$times_file")" && : >"$times_file"
    exit
    ;;
  "" | -*) usage ;;
esac
[[ $# -ge 3 && "$2" == "--" ]] || usage
name=${1//[$'\t\n']/ }
shift 2
full_name=${parent:+$parent$sep}$name

start=$(now)
finished=
finish() {
  local status=$1
  [[ -n "$finished" ]] && return
  finished=1
  local secs
  secs=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  echo "stage $full_name: $(human "$secs") (exit $status)" >&2
  if mkdir -p "$(dirname "$times_file")" 2>/dev/null; then
    printf '%s\t%s\t%s\n' "$full_name" "$secs" "$status" >>"$times_file" ||
      echo "timed-stage: cannot write $times_file" >&2
  else
    echo "timed-stage: cannot create the directory of $times_file" >&2
  fi
}
# Interrupted: record the stage, then die of the same signal.
for sig in INT TERM HUP; do
  # shellcheck disable=SC2064
  trap "finish \$(( 128 + \$(kill -l $sig) )); trap - $sig; kill -$sig \$\$" "$sig"
done

# The command as typed: arguments with spaces or specials quoted.
shown=
for arg in "$@"; do
  [[ "$arg" =~ ^[][A-Za-z0-9_./:=@%+,-]+$ ]] || arg=${arg@Q}
  shown+="${shown:+ }$arg"
done
echo "stage $full_name: start: $shown" >&2
KJIT_STAGE_PARENT=$full_name "$@"
status=$?
finish "$status"
exit "$status"
