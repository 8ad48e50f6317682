// The kjit CLI against a real daemon: output, JSON fields, exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/daemon_test.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

class CliTest : public SharedDaemonTest {
 protected:
  static void SetUpTestSuite() { start_daemon(); }

  static void write(const fs::path& path, const std::string& content) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
  }
  CommandResult kjit(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), kjit_cli_path());
    return run_command(args, env);
  }

  TempDir temp_;
  const fs::path dir_ = temp_.path();
};

TEST_F(CliTest, CompileWritesTheCubinAndPrintsJsonWithTheContractFields) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  fs::path out = dir_ / "vadd.cubin";
  auto r = kjit({"compile", source_dir() + "/examples/vector_add.cu", "--target", "cuda:90", "-o", out.string(),
                 "--json", "--socket", daemon_->socket_path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["target"], "cuda:90");
  EXPECT_EQ(json["artifact_kind"], "cubin");
  EXPECT_EQ(json["artifact_size"].get<uint64_t>(), fs::file_size(out));
  ASSERT_TRUE(json["timings_ms"].contains("nvrtc"));
  ASSERT_TRUE(json["timings_ms"].contains("nvjitlink"));
  ASSERT_EQ(json["kernels"].size(), 1u);
  const auto& k = json["kernels"][0];
  EXPECT_EQ(k["name"], "vector_add");
  EXPECT_EQ(k["lowered_name"], "vector_add");
  for (const char* field : {"registers", "static_shared_bytes", "max_threads_per_block"})
    EXPECT_TRUE(k[field].is_number()) << field;
  EXPECT_EQ(k["required_threads"].size(), 3u);
  EXPECT_EQ(k["cluster_dims"].size(), 3u);
}

TEST_F(CliTest, PtxFlagWritesPtx) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  fs::path out = dir_ / "vadd.ptx";
  auto r = kjit({"compile", source_dir() + "/examples/vector_add.cu", "--ptx", "-o", out.string(), "--socket",
                 daemon_->socket_path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(out.string()).find(".entry vector_add"), std::string::npos);
}

TEST_F(CliTest, IncludeDirsAreResolvedOnTheClientAndDefinesPassed) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  write(dir_ / "inc/ops/math.h", "#pragma once\n#include \"detail.h\"\n__device__ inline float twice(float v) { return v * FACTOR; }\n");
  write(dir_ / "inc/ops/detail.h", "#pragma once\n#define FACTOR_DEFAULT 2.0f\n");
  write(dir_ / "src/k.cu", "#include <ops/math.h>\n#include <cuda_fp16.h>\nextern \"C\" __global__ void k(float* x) { x[0] = twice(x[0]); }\n");
  auto r = kjit({"compile", (dir_ / "src/k.cu").string(), "-I", (dir_ / "inc").string(), "-D", "FACTOR=3.0f",
                 "-o", (dir_ / "k.cubin").string(), "--json", "--socket", daemon_->socket_path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kernels"][0]["name"], "k");
}

TEST_F(CliTest, CompileErrorExitsOneWithTheLogOnStderr) {
  write(dir_ / "bad.cu", "__global__ void k() { this is not cuda; }\n");
  auto r = kjit({"compile", (dir_ / "bad.cu").string(), "-o", (dir_ / "bad.cubin").string(), "--socket",
                 daemon_->socket_path()});
  EXPECT_EQ(r.exit_code, 1);
#ifdef KJIT_TEST_HAVE_TOOLKIT
  EXPECT_NE(r.err.find("bad.cu"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
#endif
}

TEST_F(CliTest, UsageErrorsExitTwo) {
  write(dir_ / "notes.txt", "hello");
  EXPECT_EQ(kjit({"compile", (dir_ / "notes.txt").string(), "--socket", daemon_->socket_path()}).exit_code, 2);
  EXPECT_EQ(kjit({"compile", "--no-such-flag", "x.cu"}).exit_code, 2);
  EXPECT_EQ(kjit({"compile", (dir_ / "missing.cu").string(), "--socket", daemon_->socket_path()}).exit_code, 2);
  EXPECT_EQ(kjit({}).exit_code, 2);
}

TEST_F(CliTest, UnreachableDaemonExitsThreeWithAHint) {
  auto r = kjit({"health", "--socket", (dir_ / "nobody.sock").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("make run"), std::string::npos) << r.err;
  r = kjit({"compile", source_dir() + "/examples/vector_add.cu", "--socket", (dir_ / "nobody.sock").string()});
  EXPECT_EQ(r.exit_code, 3);
}

TEST_F(CliTest, HealthPrintsServing) {
  auto r = kjit({"health", "--socket", daemon_->socket_path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "SERVING\n");
}

TEST_F(CliTest, SocketFromTheEnvironmentIsUsed) {
  auto r = kjit({"health"}, {"KJIT_SOCKET=" + daemon_->socket_path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "SERVING\n");
}

}  // namespace
}  // namespace kjit::test
