// The tenants file: what it accepts, what it refuses, and the namespaced keys
// that keep tenants' cache entries apart.
#include "server/access/tenants.h"

#include <gtest/gtest.h>

#include "pipeline/cache_key.h"

namespace kjit {
namespace {

const std::string k_alpha_digest = sha256_hex("alpha-token");
const std::string k_beta_digest = sha256_hex("beta-token");

TEST(Tenants, FindsATenantByItsTokenAndNoOtherToken) {
  Result<TenantRegistry> registry = TenantRegistry::parse(
      "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" + k_alpha_digest +
          "\"\n[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"" + k_beta_digest + "\"\nnamespace = \"team-a\"\n",
      "tenants.toml");
  ASSERT_TRUE(registry) << registry.error().message;
  std::optional<Tenant> alpha = registry->find_by_token("alpha-token");
  ASSERT_TRUE(alpha);
  EXPECT_EQ(alpha->name, "alpha");
  EXPECT_EQ(alpha->ns, "alpha");  // its own namespace unless it names one
  std::optional<Tenant> beta = registry->find_by_token("beta-token");
  ASSERT_TRUE(beta);
  EXPECT_EQ(beta->ns, "team-a");
  EXPECT_FALSE(registry->find_by_token("alpha-token "));
  EXPECT_FALSE(registry->find_by_token(""));
  EXPECT_FALSE(registry->find_by_token(k_alpha_digest));  // the digest is not the token
}

TEST(Tenants, AcceptsUppercaseDigests) {
  std::string upper = k_alpha_digest;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Result<TenantRegistry> registry =
      TenantRegistry::parse("[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" + upper + "\"\n", "t.toml");
  ASSERT_TRUE(registry) << registry.error().message;
  EXPECT_TRUE(registry->find_by_token("alpha-token"));
}

struct Refusal {
  std::string text;
  std::string says;
};

TEST(Tenants, RefusesMalformedFilesNamingTheProblem) {
  const std::string digest = "\"" + k_alpha_digest + "\"";
  const std::vector<Refusal> refusals = {
      {"[[tenants]]\nname = \"alpha\"\ntoken = \"secret\"\n", "never the token itself"},
      {"[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"abc\"\n", "64 hex digits"},
      {"[[tenants]]\nname = \"Alpha\"\ntoken_sha256 = " + digest + "\n", "name 'Alpha'"},
      {"[[tenants]]\nname = \"\"\ntoken_sha256 = " + digest + "\n", "name ''"},
      {"[[tenants]]\nname = \"a/b\"\ntoken_sha256 = " + digest + "\n", "[a-z0-9_-]"},
      {"[[tenants]]\nname = \"alpha\"\ntoken_sha256 = " + digest + "\nnamespace = \"../x\"\n", "namespace '../x'"},
      {"[[tenants]]\nname = \"alpha\"\ntoken_sha256 = " + digest + "\nquota = 3\n", "unknown key 'quota'"},
      {"[[tenants]]\nname = \"alpha\"\ntoken_sha256 = " + digest + "\n[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" +
           k_beta_digest + "\"\n",
       "named twice"},
      {"[[tenants]]\nname = \"alpha\"\ntoken_sha256 = " + digest + "\n[[tenants]]\nname = \"beta\"\ntoken_sha256 = " +
           digest + "\n",
       "the same token"},
      {"tenant = 1\n", "unknown key 'tenant'"},
      {"tenants = 3\n", "array of tables"},
      {"[[tenants]]\nname = 5\n", "must be a string"},
      {"[[tenants\n", "tenants.toml"},
  };
  for (const Refusal& refusal : refusals) {
    Result<TenantRegistry> registry = TenantRegistry::parse(refusal.text, "tenants.toml");
    ASSERT_FALSE(registry) << refusal.text;
    EXPECT_EQ(registry.error().code, ErrorCode::invalid_argument) << refusal.text;
    EXPECT_NE(registry.error().message.find(refusal.says), std::string::npos)
        << refusal.text << " -> " << registry.error().message;
    EXPECT_EQ(registry.error().message.find("secret"), std::string::npos) << "a token leaked into a message";
  }
}

TEST(Tenants, ReadsSharesAndOperatorsAndRefusesBadOnes) {
  const std::string alpha = "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" + k_alpha_digest + "\"\n";
  const std::string beta = "[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"" + k_beta_digest + "\"\n";
  Result<TenantRegistry> registry =
      TenantRegistry::parse(alpha + "max_bytes = 1048576\n" + beta + "operator = true\n", "t.toml");
  ASSERT_TRUE(registry) << registry.error().message;
  EXPECT_EQ(registry->find_by_token("alpha-token")->max_bytes, 1048576u);
  EXPECT_FALSE(registry->find_by_token("alpha-token")->is_operator);
  EXPECT_FALSE(registry->find_by_token("beta-token")->max_bytes);
  EXPECT_TRUE(registry->find_by_token("beta-token")->is_operator);
  EXPECT_EQ(registry->quotas(), (std::map<std::string, uint64_t, std::less<>>{{"alpha", 1048576}}));

  for (const std::string& bad : {"max_bytes = 0\n", "max_bytes = -5\n", "max_bytes = \"1G\"\n", "max_bytes = 1.5\n",
                                 "operator = \"yes\"\n", "operator = 1\n"}) {
    Result<TenantRegistry> refused = TenantRegistry::parse(alpha + bad, "t.toml");
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument) << bad;
    EXPECT_NE(refused.error().message.find(bad.substr(0, bad.find(' '))), std::string::npos) << refused.error().message;
  }
  // One namespace, one share: two tenants of it may not state two.
  Result<TenantRegistry> two = TenantRegistry::parse(
      alpha + "namespace = \"team\"\nmax_bytes = 1000\n" + beta + "namespace = \"team\"\nmax_bytes = 2000\n", "t.toml");
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("different max_bytes"), std::string::npos) << two.error().message;
}

TEST(Tenants, AMissingFileIsAFailedPrecondition) {
  Result<TenantRegistry> registry = TenantRegistry::load_file("/nonexistent/kjit/tenants.toml");
  ASSERT_FALSE(registry);
  EXPECT_EQ(registry.error().code, ErrorCode::failed_precondition);
}

TEST(Tenants, TheOperatorLabelIsNoTenantName) {
  EXPECT_FALSE(is_tenant_name(k_operator_label));
  EXPECT_TRUE(is_tenant_name("team-a_2"));
  EXPECT_FALSE(is_tenant_name("-a"));
  EXPECT_FALSE(is_tenant_name(std::string(33, 'a')));
}

}  // namespace
}  // namespace kjit
