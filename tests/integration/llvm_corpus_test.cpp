// The differential test of the LLVM path: each file of llvm_corpus/, written
// the way one front end writes IR, goes through kjitd and through the
// toolchain a user would otherwise run (llvm-link with libdevice, opt-19,
// llc-19, ptxas). The two must agree on accept or reject, kjit's kernel
// metadata must be what its cubin says, and match the reference cubin's
// except where a file says llc-19 drops something (cluster shapes, the
// attribute form of bounds) and the file's own expectations decide.
//
// A file's header says what to expect:
//   ; expect: accept | reject
//   ; reason: <text kjit's error must contain>
//   ; kernel: <name> [maxntid=x,y,z] [reqntid=x,y,z] [cluster=x,y,z] [maxnreg=n]
//   ; llc-19-drops: cluster | bounds
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "kjit/client.h"
#include "metadata/cubin_reader.h"
#include "support/daemon_test.h"
#include "support/llvm_kernels.h"
#include "target/target.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* k_target = "cuda:90";

struct ExpectedKernel {
  std::string name;
  std::map<std::string, std::vector<uint32_t>> bounds;  // "maxntid" -> {128, 2, 1}
};

struct CorpusFile {
  fs::path path;
  std::string text;
  bool accept = true;
  std::string reason;
  std::vector<ExpectedKernel> kernels;
  std::string llc_drops;  // "", "cluster" or "bounds"
};

std::vector<uint32_t> numbers(const std::string& text) {
  std::vector<uint32_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(static_cast<uint32_t>(std::stoul(item)));
  return out;
}

CorpusFile read_corpus_file(const fs::path& path) {
  CorpusFile file;
  file.path = path;
  file.text = read_file(path.string());
  std::stringstream lines(file.text);
  for (std::string line; std::getline(lines, line) && line.starts_with(";");) {
    auto value = [&](const std::string& key) -> std::optional<std::string> {
      if (!line.starts_with("; " + key + ": ")) return std::nullopt;
      return line.substr(key.size() + 4);
    };
    if (auto v = value("expect")) file.accept = *v == "accept";
    if (auto v = value("reason")) file.reason = *v;
    if (auto v = value("llc-19-drops")) file.llc_drops = *v;
    if (auto v = value("kernel")) {
      std::stringstream words(*v);
      ExpectedKernel kernel;
      words >> kernel.name;
      for (std::string word; words >> word;) {
        size_t eq = word.find('=');
        kernel.bounds[word.substr(0, eq)] = numbers(word.substr(eq + 1));
      }
      file.kernels.push_back(std::move(kernel));
    }
  }
  return file;
}

std::vector<CorpusFile> corpus() {
  std::vector<CorpusFile> files;
  for (const auto& entry : fs::directory_iterator(fs::path(source_dir()) / "tests/integration/llvm_corpus"))
    if (entry.path().extension() == ".ll") files.push_back(read_corpus_file(entry.path()));
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return files;
}

struct Outcome {
  bool accepted = false;
  std::string said;  // why not
  std::vector<KernelInfo> kernels;
};

// llvm-link (libdevice, as clang links it), opt -O3, llc, ptxas.
class Reference {
 public:
  static std::optional<std::string> missing() {
    for (const std::string& tool : {llvm("llvm-link"), llvm("opt"), llvm("llc"), ptxas(), libdevice()})
      if (!fs::exists(tool)) return tool;
    return std::nullopt;
  }

  static Outcome run(const CorpusFile& file, const fs::path& dir) {
    LlvmCodegenPlan plan = llvm_codegen_plan(*parse_target(k_target));
    std::string input = file.path.string();
    Outcome outcome;
    auto step = [&](std::vector<std::string> argv) {
      CommandResult result = run_command(argv);
      if (result.exit_code != 0) outcome.said = argv[0] + ": " + result.out + result.err;
      return result.exit_code == 0;
    };
    if (file.text.find("__nv_") != std::string::npos) {
      std::string linked = (dir / "linked.bc").string();
      if (!step({llvm("llvm-link"), "--only-needed", "--internalize", input, libdevice(), "-o", linked}))
        return outcome;
      input = linked;
    }
    const std::string optimized = (dir / "optimized.bc").string(), ptx = (dir / "k.ptx").string(),
                      cubin = (dir / "k.cubin").string();
    if (!step({llvm("opt"), "-mcpu=" + plan.cpu, "-passes=default<O3>", input, "-o", optimized})) return outcome;
    if (!step({llvm("llc"), "-mcpu=" + plan.cpu, "-mattr=" + plan.features, "-O3", optimized, "-o", ptx}))
      return outcome;
    if (!step({ptxas(), "-arch=sm_90", ptx, "-o", cubin})) return outcome;
    Result<CubinInfo> info = read_cubin(read_file(cubin));
    if (!info) {
      outcome.said = info.error().message;
      return outcome;
    }
    outcome.accepted = true;
    outcome.kernels = info->kernels;
    return outcome;
  }

 private:
  static std::string llvm(const std::string& tool) { return std::string(KJIT_TEST_LLVM_BIN) + "/" + tool; }
  static std::string ptxas() { return cuda_home() + "/bin/ptxas"; }
  static std::string libdevice() { return cuda_home() + "/nvvm/libdevice/libdevice.10.bc"; }
};

const KernelInfo* find_kernel(const std::vector<KernelInfo>& kernels, const std::string& name) {
  for (const KernelInfo& k : kernels)
    if (k.lowered_name == name) return &k;
  return nullptr;
}

std::vector<std::string> names(const std::vector<KernelInfo>& kernels) {
  std::vector<std::string> out;
  for (const KernelInfo& k : kernels) out.push_back(k.lowered_name);
  std::sort(out.begin(), out.end());
  return out;
}

void expect_dim(const Dim3& dim, const std::vector<uint32_t>& want, const std::string& what) {
  ASSERT_EQ(want.size(), 3u) << what;
  EXPECT_EQ((std::vector<uint32_t>{dim.x, dim.y, dim.z}), want) << what;
}

class LlvmCorpusTest : public ToolkitDaemonTest {
 protected:
  static void SetUpTestSuite() { start_daemon({"--no-cache"}); }
};

TEST_F(LlvmCorpusTest, KjitAndTheReferenceToolchainAgree) {
  if (auto tool = Reference::missing()) GTEST_SKIP() << "the reference toolchain lacks " << *tool;
  auto dir = make_temp_dir("kjit-llvm-corpus-");
  ASSERT_TRUE(dir);
  std::vector<CorpusFile> files = corpus();
  ASSERT_GE(files.size(), 8u);
  for (const CorpusFile& file : files) {
    SCOPED_TRACE(file.path.filename().string());
    auto request = llvm_request(file.text, k_target);
    request.input_name = file.path.filename().string();
    auto ours = client().compile(request);
    fs::path work = fs::path(*dir) / file.path.stem();
    fs::create_directories(work);
    Outcome theirs = Reference::run(file, work);

    ASSERT_EQ(static_cast<bool>(ours), file.accept) << (ours ? "" : ours.error().message + "\n" + ours.error().log);
    ASSERT_EQ(theirs.accepted, file.accept) << theirs.said;
    if (!file.accept) {
      // The input's fault, in the toolchain's words.
      EXPECT_EQ(ours.error().code, ErrorCode::invalid_argument) << ours.error().message;
      EXPECT_NE((ours.error().message + ours.error().log).find(file.reason), std::string::npos)
          << ours.error().message << "\n"
          << ours.error().log;
      continue;
    }

    // kjit's metadata is what its binary says.
    Result<CubinInfo> binary = read_cubin(ours->artifact);
    ASSERT_TRUE(binary) << binary.error().message;
    EXPECT_EQ(ours->kernels, binary->kernels);

    // The same kernels as the reference, with the same bounds.
    EXPECT_EQ(names(ours->kernels), names(theirs.kernels));
    std::vector<std::string> expected_names;
    for (const ExpectedKernel& k : file.kernels) expected_names.push_back(k.name);
    std::sort(expected_names.begin(), expected_names.end());
    EXPECT_EQ(names(ours->kernels), expected_names);
    for (const KernelInfo& k : ours->kernels) {
      SCOPED_TRACE(k.lowered_name);
      const KernelInfo* ref = find_kernel(theirs.kernels, k.lowered_name);
      ASSERT_TRUE(ref);
      EXPECT_EQ(k.param_bytes, ref->param_bytes);
      if (file.llc_drops != "bounds") {
        EXPECT_EQ(k.max_threads_per_block, ref->max_threads_per_block);
        EXPECT_EQ(k.required_threads, ref->required_threads);
        EXPECT_EQ(k.max_registers, ref->max_registers);
        if (file.llc_drops != "cluster") {
          EXPECT_EQ(k.cluster_dims, ref->cluster_dims);
        }
      }
    }
    // And the bounds the file asks for, whatever llc-19 makes of them.
    for (const ExpectedKernel& want : file.kernels) {
      SCOPED_TRACE(want.name);
      const KernelInfo* k = find_kernel(ours->kernels, want.name);
      ASSERT_TRUE(k);
      Dim3 none{};
      expect_dim(k->cluster_dims,
                 want.bounds.count("cluster") ? want.bounds.at("cluster") : std::vector<uint32_t>{0, 0, 0}, "cluster");
      if (want.bounds.count("reqntid"))
        expect_dim(k->required_threads, want.bounds.at("reqntid"), "reqntid");
      else
        EXPECT_EQ(k->required_threads, none);
      if (want.bounds.count("maxntid")) {
        const auto& m = want.bounds.at("maxntid");
        EXPECT_EQ(k->max_threads_per_block, m[0] * m[1] * m[2]);
      }
      if (want.bounds.count("maxnreg")) {
        EXPECT_EQ(k->max_registers, want.bounds.at("maxnreg")[0]);
      }
    }
  }
  std::error_code ec;
  fs::remove_all(*dir, ec);
}

}  // namespace
}  // namespace kjit::test
