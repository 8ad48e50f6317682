// Tenants: who may use a daemon that asks for tokens, and the cache
// namespace each one's entries live in. The file holds SHA-256 digests of
// the tokens, never the tokens:
//
//   [[tenants]]
//   name = "alpha"
//   token_sha256 = "9f86d0...."   # sha256sum of the token, 64 hex digits
//   namespace = "team-a"          # optional: tenants naming the same one share entries
//   max_bytes = 1073741824        # optional: the namespace's share of the memory and disk tiers
//   operator = true               # optional: the operator's rights (see everything, remove, verify)
//
// Names and namespaces are 1-32 characters of [a-z0-9_-], starting with a
// letter or digit: they become Prometheus labels and part of cache keys.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kjit/status.h"

namespace kjit {

struct Tenant {
  std::string name;
  std::string ns;  // its cache namespace: its own name unless the file names a shared one
  // The namespace's share of each bounded tier (memory, disk); none: bounded
  // by the tier alone, and the first evicted when it is full.
  std::optional<uint64_t> max_bytes;
  bool is_operator = false;  // its token carries the operator's rights
};

class TenantRegistry {
 public:
  // INVALID_ARGUMENT naming the file, the entry and the key for anything
  // malformed: unknown keys, a plain `token`, repeated names or digests.
  static Result<TenantRegistry> load_file(const std::string& path);
  static Result<TenantRegistry> parse(std::string_view text, const std::string& path);

  // The tenant whose token this is; nullopt for any other token.
  std::optional<Tenant> find_by_token(std::string_view token) const;
  const std::vector<Tenant>& tenants() const { return tenants_; }
  // Each namespace's share (max_bytes) of the bounded tiers, for namespaces
  // that have one; tenants sharing a namespace state one value or none.
  std::map<std::string, uint64_t, std::less<>> quotas() const;

 private:
  std::vector<Tenant> tenants_;
  std::unordered_map<std::string, size_t> by_digest_;  // token_sha256 -> index in tenants_
};

// The local operator's label in metrics and queues: not a valid tenant name,
// so it can never be a tenant's.
inline constexpr std::string_view k_operator_label = "(operator)";

// Whether text may name a tenant or a namespace.
bool is_tenant_name(std::string_view text);

}  // namespace kjit
