#include "server/access/tenants.h"

#include <toml++/toml.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "pipeline/cache_key.h"

namespace kjit {
namespace {

constexpr size_t k_max_name = 32;

Error bad(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::invalid_argument, path + ": " + what);
}

bool is_hex_digest(std::string_view text) {
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

bool is_tenant_name(std::string_view text) {
  if (text.empty() || text.size() > k_max_name) return false;
  auto allowed = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; };
  return std::all_of(text.begin(), text.end(), allowed) && text.front() != '-' && text.front() != '_';
}

Result<TenantRegistry> TenantRegistry::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::failed_precondition, "cannot read the tenants file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

Result<TenantRegistry> TenantRegistry::parse(std::string_view text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return bad(path, std::string(e.description()) + " at line " + std::to_string(e.source().begin.line));
  }
  TenantRegistry registry;
  for (const auto& [key, node] : root)
    if (key.str() != "tenants") return bad(path, "unknown key '" + std::string(key.str()) + "' (expected [[tenants]])");
  const toml::array* entries = root["tenants"].as_array();
  if (root.contains("tenants") && !entries) return bad(path, "'tenants' must be an array of tables ([[tenants]])");
  if (!entries) return registry;
  for (size_t i = 0; i < entries->size(); ++i) {
    const std::string where = "tenant #" + std::to_string(i + 1);
    const toml::table* entry = (*entries)[i].as_table();
    if (!entry) return bad(path, where + " is not a table");
    Tenant tenant;
    std::string digest;
    for (const auto& [key, node] : *entry) {
      const std::string_view k = key.str();
      if (k == "token" || k == "token_plain")
        return bad(path, where + ": store token_sha256 (the token's SHA-256 in hex), never the token itself");
      if (k == "max_bytes") {
        const std::optional<int64_t> bytes = node.value_exact<int64_t>();
        if (!bytes || *bytes <= 0)
          return bad(path, where + ": 'max_bytes' must be a positive integer (bytes of each bounded tier)");
        tenant.max_bytes = static_cast<uint64_t>(*bytes);
        continue;
      }
      if (k == "operator") {
        const std::optional<bool> flag = node.value_exact<bool>();
        if (!flag) return bad(path, where + ": 'operator' must be true or false");
        tenant.is_operator = *flag;
        continue;
      }
      if (k != "name" && k != "token_sha256" && k != "namespace")
        return bad(path, where + ": unknown key '" + std::string(k) +
                             "' (expected name, token_sha256, namespace, max_bytes, operator)");
      const std::optional<std::string> value = node.value<std::string>();
      if (!value) return bad(path, where + ": '" + std::string(k) + "' must be a string");
      if (k == "name") tenant.name = *value;
      if (k == "token_sha256") digest = *value;
      if (k == "namespace") tenant.ns = *value;
    }
    if (!is_tenant_name(tenant.name))
      return bad(path, where + ": name '" + tenant.name + "' must be 1-32 characters of [a-z0-9_-], starting with a letter or digit");
    std::transform(digest.begin(), digest.end(), digest.begin(), [](unsigned char c) { return std::tolower(c); });
    if (!is_hex_digest(digest))
      return bad(path, "tenant '" + tenant.name + "': token_sha256 must be 64 hex digits (sha256sum of the token)");
    if (tenant.ns.empty()) tenant.ns = tenant.name;
    if (!is_tenant_name(tenant.ns))
      return bad(path, "tenant '" + tenant.name + "': namespace '" + tenant.ns +
                           "' must be 1-32 characters of [a-z0-9_-], starting with a letter or digit");
    for (const Tenant& other : registry.tenants_) {
      if (other.name == tenant.name) return bad(path, "tenant '" + tenant.name + "' is named twice");
      // A share is the namespace's: two values for one would leave it unclear.
      if (other.ns == tenant.ns && other.max_bytes && tenant.max_bytes && *other.max_bytes != *tenant.max_bytes)
        return bad(path, "tenants '" + other.name + "' and '" + tenant.name + "' share namespace '" + tenant.ns +
                             "' with different max_bytes");
    }
    if (registry.by_digest_.contains(digest))
      return bad(path, "tenants '" + registry.tenants_[registry.by_digest_[digest]].name + "' and '" + tenant.name +
                           "' have the same token");
    registry.by_digest_.emplace(digest, registry.tenants_.size());
    registry.tenants_.push_back(std::move(tenant));
  }
  return registry;
}

std::map<std::string, uint64_t, std::less<>> TenantRegistry::quotas() const {
  std::map<std::string, uint64_t, std::less<>> out;
  for (const Tenant& tenant : tenants_)
    if (tenant.max_bytes) out[tenant.ns] = *tenant.max_bytes;
  return out;
}

std::optional<Tenant> TenantRegistry::find_by_token(std::string_view token) const {
  if (token.empty()) return std::nullopt;
  auto found = by_digest_.find(sha256_hex(token));
  if (found == by_digest_.end()) return std::nullopt;
  return tenants_[found->second];
}

}  // namespace kjit
