#!/usr/bin/env bash
# The layers follow the folders, one direction: include/ <- src/ <- cache/ <-
# server/, client/; inside server/, the daemon's rooms follow the table
# below. Fails, naming the lines, when a file includes a layer or a room
# above its own, or when the compiler core sees gRPC or the wire protos.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 2
status=0
includes='^[[:space:]]*#[[:space:]]*include[[:space:]]*'
check() {  # check FOLDER PATTERN WHY
  local found
  [[ -d $1 ]] || return 0
  found=$(grep -rnE --include='*.h' --include='*.cpp' "${includes}[\"<]($2)" "$1" || true)
  if [[ -n "$found" ]]; then
    echo "layering: $1 must not include $2 ($3):"
    echo "$found"
    status=1
  fi
}
fail() {  # fail WHAT FOUND
  if [[ -n "$2" ]]; then
    echo "layering: $1:"
    echo "$2"
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
bare=$(grep -rnE --include='*.h' --include='*.cpp' "${includes}\"[^/\"]+\"" \
  src cache server client proto/convert 2>/dev/null || true)
fail 'project includes must name their folder ("server/daemon/daemon.h", not "daemon.h")' "$bare"

# The daemon's rooms (docs/ARCHITECTURE.md, "The daemon's rooms"), lowest
# first: a room includes itself and the rooms it names here, nothing else.
rooms=(config access edge workers compile observe rpc daemon)
declare -A may_include=(
  [config]=''
  [access]='config'
  [edge]='config'
  [workers]='config edge'
  [compile]='config access edge workers'
  [observe]='config compile workers'
  [rpc]='config access edge workers compile observe'
  [daemon]='config access edge workers compile observe rpc'
)
declare -A why=(
  [config]='the configuration is what every room reads, so it reads none'
  [access]='who may call depends on nothing but the configuration'
  [edge]='translating the wire needs only the configuration and the core'
  [workers]='a worker compiles what it is sent; it knows no cache, no service, no tenant'
  [compile]='compiling knows no service, no gate and no metrics'
  [observe]='metrics read the rooms below; the services and the daemon record into them'
  [rpc]='the services use the rooms below and know nothing of the process around them'
  [daemon]='the daemon assembles every room'
)
# server/ holds the rooms and main.cpp, nothing else.
flat=$(find server -maxdepth 1 -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.proto' \) \
  ! -name main.cpp 2>/dev/null | sort)
fail 'every file of kjitd lives in a room (server/<room>/), only server/main.cpp stays at the top' "$flat"
for dir in server/*/; do
  [[ -d $dir ]] || continue
  room=${dir#server/}
  room=${room%/}
  [[ -v "may_include[$room]" ]] ||
    fail "server/$room/ is not a room of tests/unit/check_layers.sh's table; add it there with the rooms it may include" "$dir"
done
for room in "${rooms[@]}"; do
  forbidden=()
  for other in "${rooms[@]}"; do
    [[ $other == "$room" || " ${may_include[$room]} " == *" $other "* ]] || forbidden+=("$other")
  done
  if ((${#forbidden[@]})); then
    pattern=$(IFS='|'; echo "server/(${forbidden[*]})/")
    check "server/$room" "$pattern" "${why[$room]}"
  fi
done
# An include of server/ names its room: "server/rpc/call_gate.h", never "server/call_gate.h".
unroomed=$(grep -rnE --include='*.h' --include='*.cpp' "${includes}\"server/[^/\"]+\"" \
  server tests bench client src cache 2>/dev/null || true)
fail 'an include of a kjitd file names its room ("server/<room>/file.h")' "$unroomed"
# Below the daemon, the workers are seen only through their pool: the worker
# program, its protocol, output, bounds and confinement are the workers' own.
for room in compile observe rpc; do
  [[ -d server/$room ]] || continue
  inside=$(grep -rnE --include='*.h' --include='*.cpp' "${includes}\"server/workers/" "server/$room" |
    grep -vE ':[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*"server/workers/compile_workers\.h"' || true)
  fail "server/$room sees the workers only through server/workers/compile_workers.h (the pool)" "$inside"
done
# The services reach the cache only through the caller's views, which
# server/rpc/caller_cache.h binds to the caller's namespace: no other file
# of rpc picks a namespace or spells a namespaced key itself.
if [[ -d server/rpc ]]; then
  unbound=$(grep -rnE --include='*.h' --include='*.cpp' '(compiles_in|blobs_in|namespaced_key|split_namespaced_key)[[:space:]]*\(' \
    server/rpc | grep -v '^server/rpc/caller_cache\.h:' || true)
  fail 'server/rpc takes its views of the cache from compiles_of/blobs_of (server/rpc/caller_cache.h), bound to the caller' "$unbound"
fi
# gRPC stays at the edge, the gate, the services and the daemon: the rooms
# that compile, confine and count never see a service or a gRPC header.
for room in config workers compile observe; do
  check "server/$room" 'grpc|grpcpp/|kjit/v1/[a-z_]+\.grpc\.pb\.h' 'gRPC is for the edge, the services and the daemon'
done
if ((status == 0)); then
  echo "layering: every folder includes only the layers below it, and every room of server/ only the rooms below it, by folder-qualified paths"
fi
exit $status
