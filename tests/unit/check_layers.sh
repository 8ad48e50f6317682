#!/usr/bin/env bash
# The layers follow the folders, one direction: include/ <- src/ <- cache/ <-
# server/, client/. Fails, naming the lines, when a file includes a layer
# above its own, or when the compiler core sees gRPC or the wire protos.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 2
status=0
check() {  # check FOLDER PATTERN WHY
  local found
  found=$(grep -rnE --include='*.h' --include='*.cpp' "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]($2)" "$1" || true)
  if [[ -n "$found" ]]; then
    echo "layering: $1 must not include $2 ($3):"
    echo "$found"
    status=1
  fi
}
check src 'cache/|server/|client/' 'src/ is the core every other folder builds on'
check src 'grpc|grpcpp/|kjit/v1/|google/protobuf' 'the core has no gRPC and no wire types'
check include 'cache/|server/|client/|core/|pipeline/|backends/' 'public headers stand alone'
check cache 'server/|client/' 'the cache knows nothing of who serves it'
check server 'client/' 'the daemon and the client are peers that share only the wire'
check client 'server/' 'the daemon and the client are peers that share only the wire'
# Project includes name their folder, from one root: the file an include
# names is found at that path, by a reader as by grep.
bare=$(grep -rnE --include='*.h' --include='*.cpp' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^/"]+"' \
  src cache server client proto/convert || true)
if [[ -n "$bare" ]]; then
  echo "layering: project includes must name their folder (\"server/daemon.h\", not \"daemon.h\"):"
  echo "$bare"
  status=1
fi
if ((status == 0)); then echo "layering: every folder includes only the layers below it, by folder-qualified paths"; fi
exit $status
