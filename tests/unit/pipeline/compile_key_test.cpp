#include <gtest/gtest.h>

#include <cctype>

#include "pipeline/cache_key.h"

namespace kjit {
namespace {

TEST(CacheKey, SameComponentsSameKeyAndAnyChangeChangesIt) {
  std::vector<KeyComponent> base{{"input.digest", "abc"}, {"target", "cuda:90"}, {"options", "-lineinfo"}};
  CacheKey a = derive_key(base);
  EXPECT_EQ(a.hex.size(), 64u);
  EXPECT_EQ(derive_key(base).hex, a.hex);
  for (size_t i = 0; i < base.size(); ++i) {
    auto changed = base;
    changed[i].value += "x";
    EXPECT_NE(derive_key(changed).hex, a.hex) << base[i].name;
  }
  // Length prefixes: moving a character between name and value matters.
  EXPECT_NE(derive_key({{"ab", "c"}}).hex, derive_key({{"a", "bc"}}).hex);
}

TEST(CacheKey, DiffNamesWhatDiffers) {
  CacheKey a = derive_key({{"target", "cuda:90"}, {"options", ""}, {"plugin.x", "1"}});
  CacheKey b = derive_key({{"target", "cuda:100"}, {"options", ""}, {"plugin.y", "2"}});
  auto diff = diff_keys(a, b);
  ASSERT_EQ(diff.size(), 3u);
  EXPECT_EQ(diff[0].name, "target");
  EXPECT_EQ(diff[0].left, "cuda:90");
  EXPECT_EQ(diff[0].right, "cuda:100");
  EXPECT_EQ(diff[1].name, "plugin.x");
  EXPECT_FALSE(diff[1].present_right);
  EXPECT_EQ(diff[2].name, "plugin.y");
  EXPECT_FALSE(diff[2].present_left);
}

TEST(CacheKey, IsKeyHexAcceptsExactlyTheSpellingOfAKey) {
  const std::string hex = derive_key({{"a", "b"}}).hex;
  EXPECT_TRUE(is_key_hex(hex));
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper != hex) {
    EXPECT_FALSE(is_key_hex(upper));
  }
  EXPECT_FALSE(is_key_hex(hex.substr(1)));
  EXPECT_FALSE(is_key_hex(hex + "0"));
  EXPECT_FALSE(is_key_hex(std::string(63, 'a') + "g"));
  EXPECT_FALSE(is_key_hex("../" + hex.substr(3)));
}

TEST(CacheKey, Sha256MatchesAKnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace kjit
