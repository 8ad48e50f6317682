// What of the daemon's cache a caller reaches: its own namespace's compile
// entries and its own namespace's blobs. The services take their views of
// the cache from here, so which namespace a caller gets is decided once.
//
// The two differ for a user on the socket without a token: compile entries
// are everyone's (kjitd made them from the request, so they are the same
// whoever asked), in the default namespace; client blobs are bytes a client
// made, so each user's live in a namespace of its own ("U<uid>", or the one
// a [[blob_sharing]] entry declares), and only the operator's in the
// default one (server/access/local_users.h). A tenant's are both in its
// namespace.
#pragma once

#include "server/compile/daemon_cache.h"
#include "server/compile/namespaced_cache.h"
#include "server/rpc/call_gate.h"

namespace kjit {

inline NamespacedCache compiles_of(const DaemonCache& cache, const Caller& caller) {
  return cache.compiles_in(caller.ns);
}

// Whether the caller's blobs are a user's on the daemon's host (not the
// operator's, not a tenant's): their stored keys are then tagged, so that
// user alone reads them from the disk tier (blob_file_names.h).
inline bool blobs_are_a_local_users(const Caller& caller) {
  return caller.user && !caller.is_operator() && caller.tenant.empty() && !caller.blob_ns.empty();
}

// Whether the caller's blobs are in a namespace a [[blob_sharing]] entry
// declares, which the other users it names write too: a blob there keeps its
// first writer's bytes, as nothing records which member wrote them
// (BlobStore::put).
inline bool blobs_are_shared(const Caller& caller) {
  return blobs_are_a_local_users(caller) && caller.user->shares_blobs;
}

inline NamespacedCache blobs_of(const DaemonCache& cache, const Caller& caller) {
  return blobs_are_a_local_users(caller) ? cache.local_user_blobs_in(caller.blob_ns) : cache.blobs_in(caller.blob_ns);
}

// Whether the caller's compile entries are its own (the operator's default
// namespace, a tenant's), rather than shared with callers it may not speak
// for: only then may it remove one or have one explained by key.
inline bool owns_its_compiles(const Caller& caller) { return caller.is_operator() || caller.ns == caller.blob_ns; }

// The figures of the caller's compile namespace (its lookups, what it holds).
inline NamespaceStats namespace_stats_of(const DaemonCache& cache, const Caller& caller) {
  return cache.namespace_stats(caller.ns);
}

// Whose recipes a call reaches: `asked` empty, the caller's own compile
// namespace, if its compiles are its own (a recipe holds the request's
// source); another namespace is the operator's to name.
inline Result<std::string> recipe_namespace_of(const Caller& caller, std::string_view asked) {
  if (asked.size() > 256 || asked.find('\0') != std::string_view::npos)
    return make_error(ErrorCode::invalid_argument, "namespace is longer than 256 bytes or holds a NUL byte");
  if (caller.is_operator()) return asked.empty() ? caller.ns : std::string(asked);
  if (!owns_its_compiles(caller))
    return make_error(ErrorCode::permission_denied,
                      "recipes hold the requests' sources: a socket user without a token, whose compiles are "
                      "everyone's, has none of its own; ask an operator");
  if (!asked.empty() && asked != caller.ns)
    return make_error(ErrorCode::permission_denied,
                      "a tenant reaches its own namespace's recipes alone, not namespace '" + std::string(asked) + "'");
  return caller.ns;
}

}  // namespace kjit
