// Recipes and warm-up through a real daemon and the kjit CLI: a compile
// leaves a recipe (listed, shown without its target, removed); `kjit warm
// --target` builds it for another target, after which the request for that
// target is a hit; a sealed daemon with after_warmup = refuse refuses a
// miss naming the seal, serves a hit, and counts the miss in
// kjit_compiles_after_warmup_total.
#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "kjit/client.h"
#include "kjit/v1/cache.grpc.pb.h"
#include "pipeline/cache_key.h"
#include "temp_dir.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "support/cuda_kernels.h"
#include "support/llvm_kernels.h"
#include "support/loopback.h"
#include "support/metrics_scrape.h"

namespace kjit::test {
namespace {

CommandResult kjit_cli(std::vector<std::string> args, const TestDaemon& daemon) {
  args.insert(args.begin(), kjit_cli_path());
  args.push_back("--socket");
  args.push_back(daemon.socket_path());
  return run_command(args);
}

// The recipes `kjit recipes ls --json` lists once there are `count`.
nlohmann::json recipes_once(const TestDaemon& daemon, size_t count) {
  nlohmann::json listed;
  const bool seen = eventually([&] {
    CommandResult r = kjit_cli({"recipes", "ls", "--json"}, daemon);
    if (r.exit_code != 0) return false;
    listed = nlohmann::json::parse(r.out);
    return listed.size() == count;
  });
  EXPECT_TRUE(seen) << "recipes listed: " << listed.dump();
  return listed;
}

TEST(Recipes, ACompileIsRecordedAndWarmedForAnotherTarget) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon;
  ASSERT_TRUE(daemon.status());
  Client client(daemon.socket_path());
  CompileRequest request;
  request.input = std::string("#include \"scale.h\"\n") + k_vector_add;
  request.input_name = "vector_add.cu";
  request.target = "cuda:90";
  request.headers["scale.h"] = "#define SCALE 2\n";
  auto compiled = client.compile(request);
  ASSERT_TRUE(compiled) << compiled.error().message;

  const nlohmann::json listed = recipes_once(daemon, 1);
  ASSERT_EQ(listed.size(), 1u);
  const std::string digest = listed[0]["digest"];
  EXPECT_EQ(listed[0]["input_kind"], "cuda-source");
  EXPECT_EQ(listed[0]["last_target"], "cuda:90");

  CommandResult show = kjit_cli({"recipes", "show", digest, "--json"}, daemon);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const nlohmann::json shown = nlohmann::json::parse(show.out);
  EXPECT_EQ(shown["request"]["input_bytes"].get<size_t>(), request.input.size());
  EXPECT_EQ(shown["request"]["headers"]["scale.h"].get<size_t>(), request.headers["scale.h"].size());

  CommandResult bad = kjit_cli({"recipes", "show", "not-a-digest"}, daemon);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("64 lowercase hex"), std::string::npos) << bad.err;

  CommandResult warm = kjit_cli({"warm", "--target", "cuda:80", "--json"}, daemon);
  ASSERT_EQ(warm.exit_code, 0) << warm.out << warm.err;
  nlohmann::json summary = nlohmann::json::parse(warm.out);
  EXPECT_EQ(summary["recipes"], 1);
  EXPECT_EQ(summary["compiled"], 1);
  EXPECT_EQ(summary["failed"], 0);

  CompileRequest for_80 = request;
  for_80.target = "cuda:80";
  auto hit = client.compile(for_80);
  ASSERT_TRUE(hit) << hit.error().message;
  EXPECT_NE(hit->cache, "compiled");

  warm = kjit_cli({"warm", "--target", "cuda:80", "--json"}, daemon);
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  summary = nlohmann::json::parse(warm.out);
  EXPECT_EQ(summary["already_cached"], 1);
  EXPECT_EQ(summary["compiled"], 0);

  // A target no recipe builds for: failed, with the reason, and exit 1.
  warm = kjit_cli({"warm", "--target", "cuda:nope", "--json"}, daemon);
  EXPECT_EQ(warm.exit_code, 1) << warm.err;
  summary = nlohmann::json::parse(warm.out);
  EXPECT_EQ(summary["failed"], 1);
  EXPECT_FALSE(summary["failures"][0]["reason"].get<std::string>().empty());

  CommandResult rm = kjit_cli({"recipes", "rm", digest}, daemon);
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  recipes_once(daemon, 0);
  EXPECT_EQ(kjit_cli({"recipes", "rm", digest}, daemon).exit_code, 1);
}

TEST(Recipes, ASealThatRefusesRefusesAMissServesAHitAndCountsIt) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  TestDaemon daemon({"--metrics-port", std::to_string(port)});
  ASSERT_TRUE(daemon.status());
  Client client(daemon.socket_path());
  const CompileRequest warmed = llvm_request(k_llvm_vadd, "cuda:90");
  ASSERT_TRUE(client.compile(warmed));

  CommandResult seal = kjit_cli({"warm", "--seal", "--after-warmup", "refuse"}, daemon);
  ASSERT_EQ(seal.exit_code, 0) << seal.err;
  EXPECT_NE(seal.out.find("refuse"), std::string::npos) << seal.out;

  auto hit = client.compile(warmed);
  ASSERT_TRUE(hit) << hit.error().message;
  EXPECT_EQ(hit->cache, "memory");

  const CompileRequest cold = llvm_request(k_llvm_vadd, "cuda:80");
  auto refused = client.compile(cold);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::failed_precondition) << refused.error().message;
  EXPECT_NE(refused.error().message.find("sealed"), std::string::npos) << refused.error().message;

  const std::string text = scrape_metrics(port);
  EXPECT_EQ(metric_total(text, "kjit_compiles_after_warmup_total"), 1) << text;

  CommandResult unseal = kjit_cli({"warm", "--unseal"}, daemon);
  ASSERT_EQ(unseal.exit_code, 0) << unseal.err;
  auto compiled = client.compile(cold);
  ASSERT_TRUE(compiled) << compiled.error().message;
}

TEST(Recipes, EveryBadFieldIsInvalidArgument) {
  TestDaemon daemon;
  ASSERT_TRUE(daemon.status());
  auto recipes =
      v1::Recipes::NewStub(grpc::CreateChannel("unix:" + daemon.socket_path(), grpc::InsecureChannelCredentials()));
  auto code = [](const grpc::Status& status) { return status.error_code(); };
  {
    grpc::ClientContext context;
    v1::SealRequest request;
    request.set_after_warmup(static_cast<v1::AfterWarmup>(99));
    v1::SealResponse response;
    EXPECT_EQ(code(recipes->SetSeal(&context, request, &response)), grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    grpc::ClientContext context;
    v1::SealRequest request;
    request.set_all_namespaces(true);
    request.set_namespace_("team");
    v1::SealResponse response;
    EXPECT_EQ(code(recipes->SetSeal(&context, request, &response)), grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    grpc::ClientContext context;
    v1::ListRecipesRequest request;
    request.set_namespace_(std::string(300, 'n'));
    v1::ListRecipesResponse response;
    EXPECT_EQ(code(recipes->ListRecipes(&context, request, &response)), grpc::StatusCode::INVALID_ARGUMENT);
  }
  for (const std::string& digest : {std::string(), std::string(64, 'A'), std::string(63, 'a')}) {
    grpc::ClientContext context;
    v1::RemoveRecipeRequest request;
    request.set_digest(digest);
    v1::RemoveRecipeResponse response;
    EXPECT_EQ(code(recipes->RemoveRecipe(&context, request, &response)), grpc::StatusCode::INVALID_ARGUMENT)
        << "'" << digest << "'";
  }
  // Nothing was sealed by the refused calls.
  grpc::ClientContext context;
  v1::SealRequest unseal;
  unseal.set_unseal(true);
  unseal.set_all_namespaces(true);
  v1::SealResponse response;
  ASSERT_TRUE(recipes->SetSeal(&context, unseal, &response).ok());
  EXPECT_EQ(response.seals_size(), 0);
}

TEST(Recipes, ATenantSeesItsOwnNamespacesRecipesAndMaySealNothing) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TempDir temp;
  const std::string tenants = temp.path() + "/tenants.toml";
  std::ofstream(tenants) << "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" << sha256_hex("alpha-token")
                         << "\"\n[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"" << sha256_hex("beta-token")
                         << "\"\n";
  TestDaemon daemon({"--tenants", tenants, "--socket-requires-token"});
  ASSERT_TRUE(daemon.status());
  auto as = [&](const std::string& token) {
    ClientOptions options;
    options.token = token;
    return Client(daemon.socket_path(), options);
  };
  Client alpha = as("alpha-token"), beta = as("beta-token");
  ASSERT_TRUE(alpha.compile(llvm_request(k_llvm_vadd, "cuda:90")));
  ASSERT_TRUE(eventually([&] {
    auto listed = alpha.list_recipes();
    return listed && listed->size() == 1;
  }));
  auto of_beta = beta.list_recipes();
  ASSERT_TRUE(of_beta) << of_beta.error().message;
  EXPECT_TRUE(of_beta->empty());
  const std::string digest = alpha.list_recipes().value()[0].digest;
  EXPECT_EQ(beta.get_recipe({}, digest).error().code, ErrorCode::not_found);
  EXPECT_EQ(beta.list_recipes("alpha").error().code, ErrorCode::permission_denied);
  EXPECT_EQ(beta.set_seal(false, true, {}).error().code, ErrorCode::permission_denied);
  auto shown = alpha.get_recipe({}, digest);
  ASSERT_TRUE(shown) << shown.error().message;
  EXPECT_TRUE(shown->request.target.empty());
  EXPECT_EQ(shown->request.input, k_llvm_vadd);
}

}  // namespace
}  // namespace kjit::test
