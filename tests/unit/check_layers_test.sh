#!/usr/bin/env bash
# check_layers.sh catches what it forbids: on a copy of the folders it reads,
# it passes as the tree is, then fails on each planted violation, naming the
# planted line, and passes again once the plant is gone.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
check=$root/tests/unit/check_layers.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/tree
mkdir -p "$tree/proto" "$tree/tests"
for folder in include src cache server client bench; do
  [[ -d $root/$folder ]] && cp -R "$root/$folder" "$tree/"
done
cp -R "$root/proto/convert" "$tree/proto/"
[[ -d $root/tests/unit ]] && mkdir -p "$tree/tests/unit" && cp -R "$root/tests/unit/server" "$tree/tests/unit/"
failures=0
say() { echo "check_layers_test: $*"; }

expect_pass() {  # expect_pass WHEN
  local out
  if ! out=$(bash "$check" "$tree" 2>&1); then
    say "FAIL: the check fails $1:"
    echo "$out"
    failures=$((failures + 1))
  fi
}
# expect_fail WHAT FILE LINE [NAMED]: plants LINE as the only line of FILE (a
# new file), runs the check, and expects it to fail with a line of its own
# that is NAMED (by default FILE:1:LINE, as grep -n names it).
expect_fail() {
  local what=$1 file=$2 line=$3 named=${4:-$2:1:$3} out rc
  mkdir -p "$(dirname "$tree/$file")"
  printf '%s\n' "$line" >"$tree/$file"
  out=$(bash "$check" "$tree" 2>&1)
  rc=$?
  rm -f "$tree/$file"
  if ((rc == 0)); then
    say "FAIL: the check passes $what ($file: $line)"
    failures=$((failures + 1))
  elif ! grep -qxF "$named" <<<"$out"; then
    say "FAIL: the check fails on $what but has no line $named:"
    echo "$out"
    failures=$((failures + 1))
  else
    say "ok: caught $what"
  fi
}

expect_pass 'on the tree as it is'
expect_fail 'observe including a service (rpc)' \
  server/observe/planted_violation.h '#include "server/rpc/call_gate.h"'
expect_fail 'a worker including a gRPC service header (rpc)' \
  server/workers/planted_violation.cpp '#include "server/rpc/compiler_service.h"'
expect_fail 'a worker including generated gRPC service code' \
  server/workers/planted_violation.cpp '#include "kjit/v1/compiler.grpc.pb.h"'
expect_fail 'a worker including grpcpp' \
  server/workers/planted_violation.cpp '#include <grpcpp/grpcpp.h>'
expect_fail 'the configuration including a room above it' \
  server/config/planted_violation.cpp '#include "server/compile/cached_compiler.h"'
expect_fail 'compile including the daemon' \
  server/compile/planted_violation.cpp '#include "server/daemon/daemon.h"'
expect_fail 'rpc including a worker internal, not the pool' \
  server/rpc/planted_violation.cpp '#include "server/workers/worker_protocol.h"'
expect_fail 'an include of a kjitd file without its room' \
  server/daemon/planted_violation.cpp '#include "server/daemon_config.h"'
expect_fail 'a flat file at the top of server/' \
  server/planted_violation.cpp '// a file outside every room' server/planted_violation.cpp
expect_fail 'a folder of server/ missing from the table' \
  server/planted/planted_violation.h '// a room nobody declared' server/planted/
rmdir "$tree/server/planted" 2>/dev/null
expect_fail 'a bare include' \
  server/edge/planted_violation.cpp '#include "status_mapping.h"'
expect_fail 'the cache including the daemon' \
  cache/planted_violation.cpp '#include "server/compile/blob_store.h"'
expect_fail 'a service picking a namespace of the cache itself' \
  server/rpc/planted_violation.cpp 'auto entries = cache->compiles_in(request->tenant());'
expect_fail 'a service spelling a namespaced key itself' \
  server/rpc/planted_violation.cpp 'cache_remove(namespaced_key(key, ""));'
expect_pass 'once every plant is gone'

if ((failures)); then
  say "$failures expectation(s) failed"
  exit 1
fi
say "the layer check passes the tree and fails every planted violation, naming it"
