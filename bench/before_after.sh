#!/usr/bin/env bash
# Builds kjitd at an earlier revision (default: the first argument, a commit)
# in a worktree of its own, then runs kjit_bench_ab: that kjitd against this
# build's, memory hits, disk hits and cold compiles in interleaved pairs.
#   bench/before_after.sh REVISION [kjit_bench_ab options, e.g. --pairs 200]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/before_after.sh REVISION [--pairs N]}
shift
commit=$(git rev-parse --short "$rev^{commit}")
tree=${KJIT_BEFORE_TREE:-$PWD/build/before-$commit}
if [[ ! -d $tree ]]; then
  git worktree add --detach "$tree" "$commit" >/dev/null
fi
(cd "$tree" && { [[ -f build/build.ninja ]] || cmake --preset default >/dev/null; } && cmake --build build --target kjitd)
[[ -f build/build.ninja ]] || cmake --preset default
cmake --build build --target kjitd kjit_bench_ab
echo "before: $commit ($tree/build/bin/kjitd); after: $(git rev-parse --short HEAD) with the working tree's changes"
# The same kjitd on both sides first: how far from 1.00x noise alone takes a
# ratio on this machine now.
echo "-- control: before against itself --"
build/bin/kjit_bench_ab --before "$tree/build/bin/kjitd" --after "$tree/build/bin/kjitd" "$@"
echo "-- after against before --"
build/bin/kjit_bench_ab --before "$tree/build/bin/kjitd" "$@"
