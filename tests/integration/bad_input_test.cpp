// Bad input gets a clear status, the compiler's log, and never takes the
// daemon down.
#include <gtest/gtest.h>

#include "kjit/client.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/fails_with.h"

namespace kjit::test {
namespace {

class BadInputTest : public SharedDaemonTest {
 protected:
  static void SetUpTestSuite() { start_daemon({"--max-input-bytes", "65536"}); }
  static void TearDownTestSuite() {
    // Every bad request before this left the daemon serving.
    EXPECT_TRUE(daemon_->running());
    auto health = client().health();
    EXPECT_TRUE(health && *health == "SERVING");
    SharedDaemonTest::TearDownTestSuite();
  }

  static Result<CompileResult> compile(CompileRequest request) {
    if (request.target.empty()) request.target = "cuda:90";
    return client().compile(request);
  }
  static CompileRequest source(std::string text) {
    CompileRequest r;
    r.input = std::move(text);
    r.input_name = "bad.cu";
    return r;
  }
};

TEST_F(BadInputTest, CompileErrorIsInvalidArgumentWithTheCompilerLog) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  auto result = compile(source("extern \"C\" __global__ void k(float* x) { x[0] = undefined_name; }\n"));
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument, "NVRTC"));
  EXPECT_NE(result.error().log.find("bad.cu"), std::string::npos) << result.error().log;
  EXPECT_NE(result.error().log.find("undefined_name"), std::string::npos) << result.error().log;
}

TEST_F(BadInputTest, LogLargerThanATrailerLimitArrivesWhole) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  std::string text = "__global__ void k(float* x) {\n";
  for (int i = 0; i < 400; ++i) text += "  x[0] = undefined_variable_number_" + std::to_string(i) + ";\n";
  text += "}\n";
  auto result = compile(source(text));
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument));
  EXPECT_GT(result.error().log.size(), 8192u);  // gRPC's default metadata limit
  EXPECT_NE(result.error().log.find("undefined_variable_number_99"), std::string::npos);
}

TEST_F(BadInputTest, UnknownTargetListsTheKnownOnes) {
  auto request = source(k_vector_add);
  request.target = "cuda:91";
  auto result = compile(request);
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument, "cuda:90a"));
  EXPECT_NE(result.error().message.find("cuda:120"), std::string::npos) << result.error().message;
}

TEST_F(BadInputTest, MalformedTargetIsInvalidArgument) {
  for (std::string target : {"sm90", "cuda:", "cuda:90x", "cuda:75a", "hip:gfx90a"}) {
    auto request = source(k_vector_add);
    request.target = target;
    auto result = compile(request);
    ASSERT_FALSE(result) << target;
    EXPECT_EQ(result.error().code, ErrorCode::invalid_argument) << target;
  }
}

TEST_F(BadInputTest, Sm107NamesTheToolkitThatLacksIt) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon(with_the_system_toolkit_only());
  auto request = source(k_vector_add);
  request.target = "cuda:107";
  auto result = Client(daemon.socket_path()).compile(request);
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument));
  const std::string& m = result.error().message;
  EXPECT_NE(m.find("not supported by the installed CUDA toolkit 13.0"), std::string::npos) << m;
  EXPECT_NE(m.find("needs CUDA 13.4"), std::string::npos) << m;
  EXPECT_NE(m.find("cuda:100"), std::string::npos) << m;  // lists what is supported
}

TEST_F(BadInputTest, EmptyInputIsInvalidArgument) {
  auto result = compile(source(""));
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument, "empty"));
}

TEST_F(BadInputTest, InputOverTheConfiguredLimitIsResourceExhausted) {
  std::string big(70000, ' ');
  big += k_vector_add;
  auto result = compile(source(big));
  ASSERT_TRUE(fails_with(result, ErrorCode::resource_exhausted, "65536"));
}

TEST_F(BadInputTest, OptionsThatReadServerFilesAreRefused) {
  for (std::string option : {"-I/etc", "-I", "--include-path=/etc", "--pre-include=/etc/passwd", "-include",
                             "--use-pch=/tmp/x.pch", "--pch-dir=/tmp", "-arch=sm_80", "--some-unknown-flag"}) {
    auto request = source(k_vector_add);
    request.options = {option};
    auto result = compile(request);
    ASSERT_FALSE(result) << option;
    EXPECT_EQ(result.error().code, ErrorCode::invalid_argument) << option;
    EXPECT_NE(result.error().message.find("is not allowed"), std::string::npos) << result.error().message;
  }
}

TEST_F(BadInputTest, IncludesThatEscapeTheRequestAreRefused) {
  for (std::string text : {"#include \"/etc/passwd\"\n", "#include <../../etc/passwd>\n",
                           "#define P \"/etc/passwd\"\n#include P\n"}) {
    auto result = compile(source(text + k_vector_add));
    ASSERT_FALSE(result) << text;
    EXPECT_EQ(result.error().code, ErrorCode::invalid_argument) << text;
    EXPECT_EQ(result.error().log.find("root:"), std::string::npos);  // nothing of the file leaked
  }
  auto request = source("#include \"inner.h\"\n");
  request.headers["inner.h"] = "#include \"/etc/hostname\"\n";
  auto result = compile(request);
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument, "inner.h:1"));
}

TEST_F(BadInputTest, HipSourceForACudaTargetIsInvalidArgument) {
  auto request = source("__global__ void k() {}");
  request.input_kind = InputKind::hip_source;
  request.target = "cuda:90";
  auto result = compile(request);
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument, "hip-source input builds only for AMD targets"));
}

TEST_F(BadInputTest, InvalidPtxIsInvalidArgumentWithTheAssemblerLog) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  CompileRequest request;
  request.input_kind = InputKind::ptx;
  request.input = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus.instruction; }\n";
  request.target = "cuda:90";
  auto result = compile(request);
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument));
  EXPECT_FALSE(result.error().log.empty());
}

TEST_F(BadInputTest, BadNameExpressionIsInvalidArgument) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  auto request = source(k_templated);
  request.name_expressions = {"no_such_kernel<int>"};
  auto result = compile(request);
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument));
}

TEST(MissingToolkit, CudaRequestsFailWithFailedPreconditionNamingWhatIsMissing) {
  TestDaemon daemon(with_the_system_toolkit_only({"--cuda-home", "/nonexistent-cuda"}));
  CompileRequest request;
  request.input = k_vector_add;
  request.target = "cuda:90";
  auto result = Client(daemon.socket_path()).compile(request);
  ASSERT_TRUE(fails_with(result, ErrorCode::failed_precondition, "NVRTC"));
  auto health = Client(daemon.socket_path()).health();
  EXPECT_TRUE(health && *health == "SERVING");
}

}  // namespace
}  // namespace kjit::test
