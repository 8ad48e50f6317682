#include "pipeline/cache_key.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>

#include "core/hex.h"

namespace kjit {
namespace {

// Fetched once for the process: with EVP_sha256(), OpenSSL 3 looks the
// implementation up again on every init (locks and a property query), which
// showed in the profile of a memory hit. Never freed: it lives as long as
// OpenSSL does.
const EVP_MD* sha256_algorithm() {
  static EVP_MD* const algorithm = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return algorithm;
}

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) { EVP_DigestInit_ex(ctx_.get(), sha256_algorithm(), nullptr); }
  void update(std::string_view bytes) { EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()); }
  void update_length_prefixed(std::string_view bytes) {
    uint64_t size = bytes.size();
    std::array<unsigned char, 8> le{};
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(size >> (8 * i));
    EVP_DigestUpdate(ctx_.get(), le.data(), le.size());
    update(bytes);
  }
  std::string hex() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned size = 0;
    EVP_DigestFinal_ex(ctx_.get(), digest.data(), &size);
    return hex_lower(digest.data(), size);
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

}  // namespace

bool is_key_hex(std::string_view text) {
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Status check_key_spelling(std::string_view text) {
  if (is_key_hex(text)) return Ok{};
  constexpr size_t k_quoted = 80;  // a key is 64; more only repeats a mistake
  std::string quoted(text.substr(0, k_quoted));
  for (char& c : quoted)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  if (text.size() > k_quoted) quoted += "...";
  return make_error(ErrorCode::invalid_argument, "'" + quoted + "' is not a cache key (64 lowercase hex digits)");
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 sha;
  sha.update(bytes);
  return sha.hex();
}

CacheKey derive_key(std::vector<KeyComponent> components) {
  Sha256 sha;
  sha.update_length_prefixed("kjit-key/" + std::to_string(k_key_schema_version));
  for (const KeyComponent& c : components) {
    sha.update_length_prefixed(c.name);
    sha.update_length_prefixed(c.value);
  }
  return CacheKey{std::move(components), sha.hex()};
}

std::vector<KeyDifference> diff_keys(const CacheKey& left, const CacheKey& right) {
  std::map<std::string, const KeyComponent*> right_by_name;
  for (const KeyComponent& c : right.components) right_by_name[c.name] = &c;
  std::vector<KeyDifference> out;
  std::map<std::string, bool> seen;
  for (const KeyComponent& c : left.components) {
    seen[c.name] = true;
    auto it = right_by_name.find(c.name);
    if (it == right_by_name.end()) out.push_back({c.name, c.value, {}, true, false});
    else if (it->second->value != c.value) out.push_back({c.name, c.value, it->second->value});
  }
  for (const KeyComponent& c : right.components)
    if (!seen.count(c.name)) out.push_back({c.name, {}, c.value, false, true});
  return out;
}

}  // namespace kjit
