// Triton builds as kjit sees them: their descriptions, which build a request
// gets, how its Triton options are checked, where builds are looked for, and
// the interpreter child's framing, time bound and death, with fake
// interpreters (no Triton needed).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "backends/triton/triton_build.h"
#include "backends/triton/triton_interpreter.h"

namespace kjit {
namespace {

namespace fs = std::filesystem;

std::string description(const std::string& distribution, const std::string& version, bool tlx) {
  return R"({"ok": true, "distribution": ")" + distribution + R"(", "version": ")" + version +
         R"(", "backends": ["nvidia", "amd"], "cuda_archs": [80, 90, 107], "hip_archs": ["gfx942"],
      "options": {"cuda": {"num_warps": "int", "maxnreg": "int?", "enable_fp_fusion": "bool", "default_dot_input_precision": "str"},
                  "hip": {"num_warps": "int"}},
      "refused_options": {"ir_override": "it reads a file"},
      "libtriton_sha256": ")" + std::string(64, 'a') + R"(",
      "ptxas": [{"path": "/b/ptxas", "sha256": ")" + std::string(64, 'b') + R"(", "version": "12.9"}],
      "executables": ["/b/ptxas"], "read_paths": ["/env"], "plugins": [], "tlx": )" +
         (tlx ? "true" : "false") + "}";
}

TritonBuild build(const std::string& distribution, const std::string& version, bool tlx = false) {
  Result<TritonBuild> parsed = parse_triton_build(description(distribution, version, tlx), "/env/bin/python");
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed.value();
}

class TritonBuilds : public ::testing::Test {
 protected:
  void SetUp() override {
    set_triton_builds({build("fbtriton", "3.7.4", true), build("triton", "3.9.0"), build("triton", "3.10.1")});
  }
  void TearDown() override { set_triton_builds({}); }
};

TEST(TritonBuild, ADescriptionGivesItsNameTargetsOptionsAndIdentity) {
  TritonBuild b = build("triton", "3.9.0");
  EXPECT_EQ(b.name, "triton-3.9.0");
  EXPECT_TRUE(b.builds(parse_target("cuda:107").value()));
  EXPECT_FALSE(b.builds(parse_target("cuda:100").value()));
  EXPECT_TRUE(b.builds(parse_target("hip:gfx942").value()));
  EXPECT_FALSE(b.builds(parse_target("hip:gfx90a").value()));
  EXPECT_EQ(b.options.at("cuda").at("maxnreg"), "int?");
  // The key tells two installs of one version apart by their binaries.
  EXPECT_NE(b.identity().find("libtriton.so:" + std::string(64, 'a')), std::string::npos);
  EXPECT_NE(b.identity().find("ptxas:" + std::string(64, 'b')), std::string::npos);
}

TEST(TritonBuild, AnAnswerThatIsNoBuildIsRefusedSayingWhy) {
  Result<TritonBuild> refused = parse_triton_build(R"({"ok": false, "message": "no module named triton"})", "/p");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(refused.error().message.find("no module named triton"), std::string::npos);
  EXPECT_FALSE(parse_triton_build("not json", "/p"));
  EXPECT_FALSE(parse_triton_build(R"({"ok": true, "distribution": "triton"})", "/p"));
}

TEST_F(TritonBuilds, TheDefaultIsTheNewestUpstreamBuild) {
  ASSERT_NE(default_triton_build(), nullptr);
  EXPECT_EQ(default_triton_build()->name, "triton-3.10.1");  // 3.10 after 3.9: numbers, not text
  Result<const TritonBuild*> chosen = choose_triton_build("", "tt.func @k() { tt.return }");
  ASSERT_TRUE(chosen);
  EXPECT_EQ((*chosen)->name, "triton-3.10.1");
}

TEST_F(TritonBuilds, ANamedBuildIsTakenAndAnUnknownOneIsFailedPreconditionNamingThePresent) {
  Result<const TritonBuild*> named = choose_triton_build("triton-3.9.0", "module {}");
  ASSERT_TRUE(named);
  EXPECT_EQ((*named)->name, "triton-3.9.0");
  Result<const TritonBuild*> unknown = choose_triton_build("triton-2.0.0", "module {}");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(unknown.error().message.find("fbtriton-3.7.4, triton-3.9.0, triton-3.10.1"), std::string::npos)
      << unknown.error().message;
}

TEST_F(TritonBuilds, ATlxModuleGoesToTheBuildWhoseTlxTakesItsForm) {
  // fbtriton has TLX compiled in; 3.8 has it from the uTLX plugin package.
  TritonBuild utlx = build("triton", "3.8.0", true);
  utlx.tlx_provider = "triton-utlx";
  utlx.installed_plugins.push_back({"triton-utlx", "3.8.0.post16", {{"/env/libutlx.so", "ab", ""}}, "cd"});
  set_triton_builds({build("fbtriton", "3.7.4", true), utlx, build("triton", "3.9.0")});
  const std::string front_end = "module attributes {tlx.has_explicit_local_mem_access = true} {\n"
                                "%0 = tlx.local_alloc : !tlx.buffer }";
  const std::string plugin_form = "module { %0 = tlx.local_alias %a : !tlx.buffer }";
  Result<const TritonBuild*> compiled_in = choose_triton_build("", front_end);
  ASSERT_TRUE(compiled_in);
  EXPECT_EQ((*compiled_in)->name, "fbtriton-3.7.4");
  Result<const TritonBuild*> plugin = choose_triton_build("", plugin_form);
  ASSERT_TRUE(plugin);
  EXPECT_EQ((*plugin)->name, "triton-3.8.0");
  Result<const TritonBuild*> named = choose_triton_build("fbtriton-3.7.4", plugin_form);
  ASSERT_TRUE(named) << "--triton NAME wins";
  EXPECT_EQ((*named)->name, "fbtriton-3.7.4");
  Result<const TritonBuild*> refused = choose_triton_build("triton-3.9.0", plugin_form);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("could take it (TLX as a Triton plugin (uTLX's front end)): triton-3.8.0"),
            std::string::npos)
      << refused.error().message;
}

TEST_F(TritonBuilds, APluginPackageIsPartOfTheBuildsIdentity) {
  TritonBuild plain = build("triton", "3.8.0", true);
  TritonBuild with_plugin = plain;
  with_plugin.installed_plugins.push_back({"triton-utlx", "3.8.0.post16", {{"/env/libutlx.so", "ab", ""}}, "cd"});
  TritonBuild other_library = with_plugin;
  other_library.installed_plugins[0].libraries[0].sha256 = "ef";
  TritonBuild other_hook = with_plugin;
  other_hook.installed_plugins[0].stages_hook_sha256 = "ff";
  TritonBuild other_version = with_plugin;
  other_version.installed_plugins[0].version = "3.8.0.post17";
  const std::set<std::string> identities{plain.identity(), with_plugin.identity(), other_library.identity(),
                                         other_hook.identity(), other_version.identity()};
  EXPECT_EQ(identities.size(), 5u);
  EXPECT_NE(with_plugin.identity().find("plugin triton-utlx 3.8.0.post16 libutlx.so:ab stages-hook:cd"),
            std::string::npos)
      << with_plugin.identity();
}

// A newer ptxas another build lent (the daemon adds it to the description
// it hands workers): its archs are built with it, the build's own archs
// with its own.
TEST_F(TritonBuilds, ALentPtxasIsReadFromTheDescriptionAndServesItsArchsOnly) {
  const std::string text = R"({"ok": true, "distribution": "triton", "version": "3.8.0", "libtriton_sha256": "aa",
      "cuda_archs": [90, 100, 107], "plugin_loader": "TRITON_PLUGIN_PATHS",
      "ptxas": [{"path": "/a/ptxas-blackwell", "sha256": "bb", "version": "13.3"}],
      "borrowed_ptxas": {"path": "/b/ptxas-blackwell", "sha256": "cc", "version": "13.4",
                         "from_build": "triton-3.9.0", "cuda_archs": [107]}})";
  Result<TritonBuild> parsed = parse_triton_build(text, "/env/bin/python");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->plugin_loader, "TRITON_PLUGIN_PATHS");
  EXPECT_EQ(parsed->borrowed_from, "triton-3.9.0");
  const TritonPtxas* lent = parsed->borrowed_ptxas_for(parse_target("cuda:107").value());
  ASSERT_NE(lent, nullptr);
  EXPECT_EQ(lent->path, "/b/ptxas-blackwell");
  EXPECT_EQ(lent->version, "13.4");
  EXPECT_EQ(parsed->borrowed_ptxas_for(parse_target("cuda:100").value()), nullptr);
  EXPECT_EQ(parsed->borrowed_ptxas_for(parse_target("hip:gfx942").value()), nullptr);
  EXPECT_TRUE(parsed->builds(parse_target("cuda:107").value()));
}

TEST_F(TritonBuilds, InstalledPluginsAreReadFromTheDescription) {
  const std::string text = R"({"ok": true, "distribution": "triton", "version": "3.8.0",
      "libtriton_sha256": "aa", "tlx": true, "tlx_provider": "triton-utlx",
      "installed_plugins": [{"distribution": "triton-utlx", "version": "3.8.0.post16",
        "libraries": [{"path": "/env/utlx_plugin/libutlx.so", "sha256": "bb"}], "stages_hook_sha256": "cc"}]})";
  Result<TritonBuild> parsed = parse_triton_build(text, "/env/bin/python");
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_EQ(parsed->installed_plugins.size(), 1u);
  EXPECT_EQ(parsed->installed_plugins[0].distribution, "triton-utlx");
  EXPECT_EQ(parsed->installed_plugins[0].libraries[0].sha256, "bb");
  EXPECT_EQ(parsed->installed_plugins[0].stages_hook_sha256, "cc");
  EXPECT_EQ(parsed->tlx_provider, "triton-utlx");
}

TEST_F(TritonBuilds, ATlxModuleGoesToABuildWithTlxOrIsRefused) {
  const std::string tlx = "%0 = tlx.local_alloc : !tlx.buffer";
  Result<const TritonBuild*> routed = choose_triton_build("", tlx);
  ASSERT_TRUE(routed);
  EXPECT_EQ((*routed)->name, "fbtriton-3.7.4");
  Result<const TritonBuild*> refused = choose_triton_build("triton-3.9.0", tlx);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(refused.error().message.find("TLX"), std::string::npos);
  set_triton_builds({build("triton", "3.9.0")});
  Result<const TritonBuild*> none = choose_triton_build("", tlx);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("builds present: triton-3.9.0"), std::string::npos);
}

TEST(TritonOptions, AreCheckedAgainstTheBuildAndGivenCanonicalAndSorted) {
  const TritonBuild b = build("triton", "3.9.0");
  const Target hopper = parse_target("cuda:90").value();
  Result<std::vector<std::string>> checked = check_triton_options(
      b, hopper, {{"num_warps", "8"}, {"enable_fp_fusion", "False"}, {"maxnreg", "none"},
                  {"default_dot_input_precision", "ieee"}});
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_EQ(*checked, (std::vector<std::string>{"default_dot_input_precision=ieee", "enable_fp_fusion=false",
                                                "maxnreg=none", "num_warps=8"}));
}

TEST(TritonOptions, AnUnknownOptionIsInvalidArgumentListingTheKnownOnes) {
  const TritonBuild b = build("triton", "3.9.0");
  Result<std::vector<std::string>> checked = check_triton_options(b, parse_target("cuda:90").value(), {{"num_wraps", "4"}});
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(checked.error().message.find("known: default_dot_input_precision, enable_fp_fusion, maxnreg, num_warps"),
            std::string::npos)
      << checked.error().message;
  // The AMD back end's options are its own.
  Result<std::vector<std::string>> amd =
      check_triton_options(b, parse_target("hip:gfx942").value(), {{"enable_fp_fusion", "true"}});
  ASSERT_FALSE(amd);
  EXPECT_NE(amd.error().message.find("known: num_warps"), std::string::npos) << amd.error().message;
}

TEST(TritonOptions, WrongTypesAndRefusedOptionsAreInvalidArgumentSayingWhy) {
  const TritonBuild b = build("triton", "3.9.0");
  const Target t = parse_target("cuda:90").value();
  for (const auto& [name, value, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"num_warps", "eight", "integer"},
           {"num_warps", "4.5", "integer"},
           {"num_warps", "99999999999", "integer"},
           {"num_warps", "none", "integer"},  // not optional
           {"enable_fp_fusion", "yes", "true or false"},
           {"ir_override", "/etc/passwd", "reads a file"}}) {
    Result<std::vector<std::string>> checked = check_triton_options(b, t, {{name, value}});
    ASSERT_FALSE(checked) << name << "=" << value;
    EXPECT_EQ(checked.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(checked.error().message.find(says), std::string::npos) << checked.error().message;
  }
}

TEST(TritonBuildSearch, ConfiguredBuildsComeFirstThenTheProjectsEnvironments) {
  const fs::path root = fs::temp_directory_path() / ("kjit-triton-search-" + std::to_string(::getpid()));
  fs::remove_all(root);
  for (const char* env : {"configured", "local/b-env", "local/a-env", "local/half.new"}) {
    fs::create_directories(root / env / "bin");
    std::ofstream(root / env / "bin" / "python") << "";
  }
  fs::create_directories(root / "local" / "empty-dir");
  const std::vector<std::string> found =
      triton_build_candidates({{(root / "configured").string(), (root / "local/a-env/bin/python").string()},
                               (root / "local").string()});
  EXPECT_EQ(found, (std::vector<std::string>{(root / "configured/bin/python").string(),
                                             (root / "local/a-env/bin/python").string(),
                                             (root / "local/b-env/bin/python").string()}));
  fs::remove_all(root);
}

// A fake interpreter: a script run as "python -I -B -c <worker script>",
// which ignores its arguments and does what its body says.
std::string fake_interpreter(const std::string& name, const std::string& body) {
  const fs::path path = fs::temp_directory_path() / ("kjit-fake-python-" + name + "-" + std::to_string(::getpid()));
  std::ofstream(path) << "#!/usr/bin/env python3\nimport sys, struct, json, time, os\n" << body;
  ::chmod(path.c_str(), 0755);
  return path.string();
}

TEST(TritonInterpreter, AsksAndReadsFramedAnswersFromOneWarmChild) {
  const std::string python = fake_interpreter("echo", R"(
n = 0
while True:
    head = sys.stdin.buffer.read(4)
    if len(head) < 4: break
    request = json.loads(sys.stdin.buffer.read(struct.unpack("<I", head)[0]))
    n += 1
    answer = json.dumps({"ok": True, "echo": request["op"], "n": n, "cwd": os.getcwd(),
                         "triton_env": [k for k in os.environ if k.startswith("TRITON_")]}).encode()
    sys.stdout.buffer.write(struct.pack("<I", len(answer)) + answer)
    sys.stdout.buffer.flush()
)");
  const std::string dir = (fs::temp_directory_path() / ("kjit-interp-" + std::to_string(::getpid()))).string();
  ::setenv("TRITON_CACHE_DIR", "/somewhere/else", 1);
  auto child = TritonInterpreter::start(python, dir);
  ::unsetenv("TRITON_CACHE_DIR");
  ASSERT_TRUE(child) << child.error().message;
  Result<std::string> first = (*child)->ask(R"({"op": "describe"})", std::chrono::seconds(30));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_NE(first->find(R"("echo": "describe", "n": 1)"), std::string::npos) << *first;
  EXPECT_NE(first->find(R"("triton_env": [])"), std::string::npos) << "the caller's TRITON_* reached the child";
  EXPECT_NE(first->find(dir), std::string::npos) << "the child does not run in its directory";
  Result<std::string> second = (*child)->ask(R"({"op": "compile"})", std::chrono::seconds(30));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_NE(second->find(R"("n": 2)"), std::string::npos) << "a second question started a second child";
  fs::remove(python);
  fs::remove_all(dir);
}

TEST(TritonInterpreter, TheBuildsDescriptionReachesTheChildUnlessItIsTooLargeForOneVariable) {
  const std::string python = fake_interpreter("description", R"(
head = sys.stdin.buffer.read(4)
sys.stdin.buffer.read(struct.unpack("<I", head)[0])
answer = json.dumps({"ok": True, "given": os.environ.get("KJIT_TRITON_DESCRIPTION")}).encode()
sys.stdout.buffer.write(struct.pack("<I", len(answer)) + answer)
sys.stdout.buffer.flush()
)");
  const std::string dir = (fs::temp_directory_path() / ("kjit-interp3-" + std::to_string(::getpid()))).string();
  const std::string description = R"({"ok": true, "name": "triton-3.9.0", "cuda_archs": [90]})";
  auto child = TritonInterpreter::start(python, dir, {.description = description});
  ASSERT_TRUE(child) << child.error().message;
  Result<std::string> answer = (*child)->ask(R"({"op": "describe"})", std::chrono::seconds(30));
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(nlohmann::json::parse(*answer).value("given", std::string()), description);

  // Past what one variable may hold, the child starts all the same and
  // describes itself.
  const std::string huge = R"({"ok": true, "pad": ")" + std::string(200 << 10, 'x') + R"("})";
  auto without = TritonInterpreter::start(python, dir, {.description = huge});
  ASSERT_TRUE(without) << without.error().message;
  Result<std::string> second = (*without)->ask(R"({"op": "describe"})", std::chrono::seconds(30));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(nlohmann::json::parse(*second)["given"].is_null()) << second->substr(0, 200);
  fs::remove(python);
  fs::remove_all(dir);
}

TEST(TritonInterpreter, AChildPastItsTimeIsKilledAndOneThatDiesIsInternal) {
  const std::string dir = (fs::temp_directory_path() / ("kjit-interp2-" + std::to_string(::getpid()))).string();
  const std::string slow = fake_interpreter("slow", "time.sleep(60)\n");
  auto hung = TritonInterpreter::start(slow, dir);
  ASSERT_TRUE(hung);
  const auto began = std::chrono::steady_clock::now();
  Result<std::string> late = (*hung)->ask("{}", std::chrono::milliseconds(300));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::deadline_exceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(10));
  EXPECT_FALSE((*hung)->alive());

  const std::string dies = fake_interpreter("dies", "sys.stdin.buffer.read(4)\nsys.exit(3)\n");
  auto child = TritonInterpreter::start(dies, dir);
  ASSERT_TRUE(child);
  Result<std::string> answer = (*child)->ask("{}", std::chrono::seconds(30));
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, ErrorCode::internal);
  EXPECT_NE(answer.error().message.find("exited with status 3"), std::string::npos) << answer.error().message;
  fs::remove(slow);
  fs::remove(dies);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kjit
