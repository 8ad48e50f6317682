// Newer toolkits routed per target (real sm_107 cubins from NVIDIA's wheels)
// and requests for several targets answered with a fatbin, through a real
// kjitd. The sm_107 and fatbin tests need the wheels scripts/install-deps.sh
// installs; without them they skip, saying so.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kjit/client.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/elf_header.h"
#include "support/fails_with.h"
#include "support/llvm_kernels.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t k_fatbin_magic = 0xBA55ED50;

uint32_t leading_word(const std::string& bytes) {
  uint32_t word = 0;
  if (bytes.size() >= sizeof(word)) std::memcpy(&word, bytes.data(), sizeof(word));
  return word;
}

class MultiTargetTest : public ToolkitDaemonTest {
 protected:
  static void SetUpTestSuite() {
    // The CUDA toolkits alone: listing them would wait for the Triton builds.
    DaemonOptions options;
    options.triton_builds = false;
    start_daemon(std::move(options));
    if (Result<ToolkitListing> listing = client().toolkits()) listing_ = *listing;
  }

  // Whether the daemon has a toolkit that builds `target`.
  static bool builds(const std::string& target) {
    for (const ToolkitListing::Route& route : listing_.routes)
      if (route.target == target) return route.supported;
    return false;
  }
  static bool combines_fatbins() { return listing_.fatbin_toolkit >= 0; }

  static CompileRequest request(const char* source, std::vector<std::string> targets) {
    CompileRequest r;
    r.input = source;
    r.input_name = "multi.cu";
    r.targets = std::move(targets);
    r.artifact = ArtifactKind::fatbin;
    return r;
  }

  static inline ToolkitListing listing_;
};

#define SKIP_WITHOUT(target)                                                                        \
  if (!builds(target)) GTEST_SKIP() << "no toolkit here builds " target " (scripts/install-deps.sh " \
                                       "installs NVIDIA's 13.5 wheels)"
#define SKIP_WITHOUT_FATBIN() \
  if (!combines_fatbins()) GTEST_SKIP() << "no nvFatbin here (scripts/install-deps.sh installs it)"

TEST_F(MultiTargetTest, TheSystemToolkitIsListedFirstAndEveryKnownTargetHasARoute) {
  ASSERT_FALSE(listing_.toolkits.empty());
  EXPECT_EQ(listing_.toolkits.front().origin, "system");
  EXPECT_EQ(listing_.policy, "system-first");
  bool has_90 = false;
  for (const ToolkitListing::Route& route : listing_.routes) {
    ASSERT_GE(route.toolkit, 0) << route.target;
    ASSERT_LT(route.toolkit, static_cast<int>(listing_.toolkits.size())) << route.target;
    EXPECT_FALSE(route.reason.empty()) << route.target;
    has_90 |= route.target == "cuda:90";
  }
  EXPECT_TRUE(has_90);
  // system-first: what the system toolkit builds stays with it.
  for (const ToolkitListing::Route& route : listing_.routes) {
    if (route.target == "cuda:90") {
      EXPECT_EQ(route.toolkit, 0);
    }
  }
}

TEST_F(MultiTargetTest, CudaSourceForSm107IsARealSm107Cubin) {
  SKIP_WITHOUT("cuda:107");
  CompileRequest r;
  r.input = k_vector_add;
  r.input_name = "vadd.cu";
  r.target = "cuda:107";
  Result<CompileResult> result = client().compile(r);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->artifact_kind, ArtifactKind::cubin);
  ElfHeader elf = elf_header_of(result->artifact);
  EXPECT_TRUE(elf.is_elf64);
  EXPECT_EQ(elf.sm, 107u);
  ASSERT_EQ(result->kernels.size(), 1u);
  EXPECT_EQ(result->kernels[0].name, "vector_add");
  // The toolkit that built it is named, and its version is in the key.
  EXPECT_FALSE(result->toolkit.empty());
  std::string version = result->toolkit.substr(0, result->toolkit.find(' '));
  bool keyed = false;
  for (const KeyComponent& c : result->key_components) keyed |= c.name == "toolchain.nvrtc" && c.value == version;
  EXPECT_TRUE(keyed) << "toolkit " << result->toolkit;
}

TEST_F(MultiTargetTest, LlvmIrForSm107IsRetargetedAndAssembledByTheNewerToolkit) {
  SKIP_WITHOUT("cuda:107");
  Result<CompileResult> result = client().compile(llvm_request(k_llvm_vadd, "cuda:107"));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(elf_header_of(result->artifact).sm, 107u);
  bool cpu_noted = false;
  for (const std::string& note : result->notes)
    cpu_noted |= note.find("for CPU sm_90") != std::string::npos && note.find("retargeted to sm_107") != std::string::npos;
  EXPECT_TRUE(cpu_noted) << "notes name the LLVM CPU";
}

TEST_F(MultiTargetTest, PlanForSm107FromCudaSourceRestsOnTheCubin) {
  SKIP_WITHOUT("cuda:107");
  KernelRef ref;
  ref.compile.input = k_vector_add;
  ref.compile.input_name = "vadd.cu";
  ref.compile.target = "cuda:107";
  ref.kernel = "vector_add";
  LaunchConfig config;
  config.grid = {4, 1, 1};
  config.block = {256, 1, 1};
  Result<PlannedLaunch> plan = client().plan_launch(ref, config);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->target, "sm_107");
  EXPECT_FALSE(plan->rests_on_ptx);
}

TEST_F(MultiTargetTest, FourTargetsGiveOneFatbinWithACubinEachAndPtxForTheNewest) {
  SKIP_WITHOUT("cuda:107");
  SKIP_WITHOUT_FATBIN();
  const char* source = R"(extern "C" __global__ void four(float* x) { x[threadIdx.x] *= 4.0f; })";
  Result<CompileResult> result = client().compile(request(source, {"cuda:80", "cuda:90", "cuda:100", "cuda:107"}));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->artifact_kind, ArtifactKind::fatbin);
  EXPECT_EQ(leading_word(result->artifact), k_fatbin_magic);
  EXPECT_EQ(result->target, "cuda:80,cuda:90,cuda:100,cuda:107");
  ASSERT_EQ(result->entries.size(), 5u);
  uint64_t parts = 0;
  const std::vector<std::string> expected{"cuda:80", "cuda:90", "cuda:100", "cuda:107"};
  for (size_t i = 0; i < expected.size(); ++i) {
    const FatbinEntry& entry = result->entries[i];
    EXPECT_EQ(entry.target, expected[i]);
    EXPECT_EQ(entry.kind, ArtifactKind::cubin);
    EXPECT_EQ(entry.cache, "compiled");
    EXPECT_EQ(entry.key.size(), 64u);
    EXPECT_FALSE(entry.toolkit.empty());
    ASSERT_EQ(entry.kernels.size(), 1u) << entry.target;
    EXPECT_EQ(entry.kernels[0].name, "four");
    parts += entry.size;
  }
  EXPECT_EQ(result->entries[4].target, "cuda:107");
  EXPECT_EQ(result->entries[4].kind, ArtifactKind::ptx);
  parts += result->entries[4].size;
  EXPECT_GE(result->artifact.size(), parts / 2) << "the fatbin holds its parts (nvFatbin compresses PTX)";

  // Each part was cached under its own key: a single-target request for one
  // of them is a hit with the same key.
  CompileRequest single;
  single.input = source;
  single.input_name = "multi.cu";
  single.target = "cuda:100";
  Result<CompileResult> hit = client().compile(single);
  ASSERT_TRUE(hit) << hit.error().message;
  EXPECT_EQ(hit->cache, "memory");
  EXPECT_EQ(hit->key, result->entries[2].key);
  EXPECT_EQ(elf_header_of(hit->artifact).sm, 100u);

  // And the whole request again is answered from the cache.
  Result<CompileResult> again = client().compile(request(source, {"cuda:80", "cuda:90", "cuda:100", "cuda:107"}));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->cache, "memory");
  EXPECT_EQ(again->artifact.size(), result->artifact.size());
}

TEST_F(MultiTargetTest, ATargetThatFailsIsNamedAndTheOthersStayCached) {
  const char* source = R"(
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
#error this kernel refuses sm_90
#endif
extern "C" __global__ void picky(int* x) { x[0] = 1; })";
  Result<CompileResult> result = client().compile(request(source, {"cuda:80", "cuda:90"}));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(result.error().message.find("cuda:90"), std::string::npos) << result.error().message;
  EXPECT_EQ(result.error().message.find("cuda:80"), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().log.find("refuses sm_90"), std::string::npos) << result.error().log;

  CompileRequest single;
  single.input = source;
  single.input_name = "multi.cu";
  single.target = "cuda:80";
  Result<CompileResult> hit = client().compile(single);
  ASSERT_TRUE(hit) << hit.error().message;
  EXPECT_EQ(hit->cache, "memory");
}

TEST_F(MultiTargetTest, MalformedTargetListsAreRefusedAtTheEdge) {
  CompileRequest both = request(k_vector_add, {"cuda:80", "cuda:90"});
  both.target = "cuda:90";
  EXPECT_TRUE(fails_with(client().compile(both), ErrorCode::invalid_argument, "not both"));
  EXPECT_TRUE(fails_with(client().compile(request(k_vector_add, {"cuda:90", "cuda:90"})), ErrorCode::invalid_argument,
                         "named twice"));
  EXPECT_TRUE(fails_with(client().compile(request(k_vector_add, {"cuda:90", "cuda:55"})), ErrorCode::invalid_argument,
                         "cuda:55"));
  CompileRequest ptx = request(k_vector_add, {"cuda:80", "cuda:90"});
  ptx.artifact = ArtifactKind::ptx;
  EXPECT_TRUE(fails_with(client().compile(ptx), ErrorCode::invalid_argument, "fatbin"));
  std::vector<std::string> many(33, "cuda:90");
  EXPECT_TRUE(fails_with(client().compile(request(k_vector_add, many)), ErrorCode::invalid_argument, "at most"));
  CompileRequest empty = request(k_vector_add, {});
  EXPECT_TRUE(fails_with(client().compile(empty), ErrorCode::invalid_argument, "targets"));
  // The daemon serves on.
  EXPECT_TRUE(client().health());
}

TEST_F(MultiTargetTest, PlanPicksThePartTheNamedGpuWouldLoad) {
  KernelRef ref;
  ref.compile = request(k_vector_add, {"cuda:80", "cuda:90", "cuda:100"});
  ref.compile.artifact = ArtifactKind::cubin;  // the plan compiles one part
  ref.kernel = "vector_add";
  ref.device_target = "cuda:103";
  LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {128, 1, 1};
  Result<PlannedLaunch> plan = client().plan_launch(ref, config);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_FALSE(plan->notes.empty());
  EXPECT_NE(plan->notes.front().find("cuda:100 cubin is what sm_103 loads"), std::string::npos) << plan->notes.front();

  ref.device_target = "cuda:75";
  EXPECT_TRUE(fails_with(client().plan_launch(ref, config), ErrorCode::failed_precondition, "no part"));
  ref.device_target.clear();
  EXPECT_TRUE(fails_with(client().plan_launch(ref, config), ErrorCode::invalid_argument, "device_target"));
}

TEST_F(MultiTargetTest, TheCliWritesAFatbinAndListsItsParts) {
  SKIP_WITHOUT_FATBIN();
  TempDir temp;
  fs::path out = fs::path(temp.path()) / "k.fatbin";
  CommandResult r = run_command({kjit_cli_path(), "compile", source_dir() + "/examples/vector_add.cu", "--target",
                                 "cuda:80,cuda:90", "-o", out.string(), "--json", "--socket", daemon_->socket_path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["artifact_kind"], "fatbin");
  EXPECT_EQ(json["artifact_size"].get<uint64_t>(), fs::file_size(out));
  ASSERT_EQ(json["entries"].size(), 3u);
  EXPECT_EQ(json["entries"][0]["target"], "cuda:80");
  EXPECT_EQ(json["entries"][2]["kind"], "ptx");
  EXPECT_FALSE(json["toolkit"].get<std::string>().empty());
  std::ifstream in(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(leading_word(bytes), k_fatbin_magic);

  CommandResult listed = run_command({kjit_cli_path(), "toolkits", "--socket", daemon_->socket_path()});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("(system)"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("cuda:107"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("policy: system-first"), std::string::npos) << listed.out;
}

}  // namespace
}  // namespace kjit::test
