// Bad input gets a clear status, the compiler's log, and never takes the
// daemon down.
#include <gtest/gtest.h>

#include "daemon_process.h"
#include "kjit/client.h"
#include "test_kernels.h"

namespace kjit::test {
namespace {

class BadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = new DaemonProcess({"--max-input-bytes", "65536"}); }
  static void TearDownTestSuite() {
    // Every bad request before this left the daemon serving.
    EXPECT_TRUE(daemon_->running());
    auto health = Client(daemon_->socket_path()).health();
    EXPECT_TRUE(health && *health == "SERVING");
    delete daemon_;
    daemon_ = nullptr;
  }

  static Result<CompileResult> compile(CompileRequest request) {
    if (request.target.empty()) request.target = "cuda:90";
    return Client(daemon_->socket_path()).compile(request);
  }
  static CompileRequest source(std::string text) {
    CompileRequest r;
    r.input = std::move(text);
    r.input_name = "bad.cu";
    return r;
  }

  static DaemonProcess* daemon_;
};
DaemonProcess* BadInputTest::daemon_ = nullptr;

TEST_F(BadInputTest, CompileErrorIsInvalidArgumentWithTheCompilerLog) {
#ifndef KJIT_TEST_HAVE_TOOLKIT
  GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  auto result = compile(source("extern \"C\" __global__ void k(float* x) { x[0] = undefined_name; }\n"));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(result.error().message.find("NVRTC"), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().log.find("bad.cu"), std::string::npos) << result.error().log;
  EXPECT_NE(result.error().log.find("undefined_name"), std::string::npos) << result.error().log;
}

TEST_F(BadInputTest, LogLargerThanATrailerLimitArrivesWhole) {
#ifndef KJIT_TEST_HAVE_TOOLKIT
  GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  std::string text = "__global__ void k(float* x) {\n";
  for (int i = 0; i < 400; ++i) text += "  x[0] = undefined_variable_number_" + std::to_string(i) + ";\n";
  text += "}\n";
  auto result = compile(source(text));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_GT(result.error().log.size(), 8192u);  // gRPC's default metadata limit
  EXPECT_NE(result.error().log.find("undefined_variable_number_99"), std::string::npos);
}

TEST_F(BadInputTest, UnknownTargetListsTheKnownOnes) {
  auto request = source(k_vector_add);
  request.target = "cuda:91";
  auto result = compile(request);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(result.error().message.find("cuda:90a"), std::string::npos) << result.error().message;
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
#ifndef KJIT_TEST_HAVE_TOOLKIT
  GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  auto request = source(k_vector_add);
  request.target = "cuda:107";
  auto result = compile(request);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  const std::string& m = result.error().message;
  EXPECT_NE(m.find("not supported by the installed CUDA toolkit 13.0"), std::string::npos) << m;
  EXPECT_NE(m.find("needs CUDA 13.4"), std::string::npos) << m;
  EXPECT_NE(m.find("cuda:100"), std::string::npos) << m;  // lists what is supported
}

TEST_F(BadInputTest, EmptyInputIsInvalidArgument) {
  auto result = compile(source(""));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(result.error().message.find("empty"), std::string::npos);
}

TEST_F(BadInputTest, InputOverTheConfiguredLimitIsResourceExhausted) {
  std::string big(70000, ' ');
  big += k_vector_add;
  auto result = compile(source(big));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::resource_exhausted);
  EXPECT_NE(result.error().message.find("65536"), std::string::npos) << result.error().message;
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
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(result.error().message.find("inner.h:1"), std::string::npos) << result.error().message;
}

TEST_F(BadInputTest, ReservedInputKindsAreUnimplemented) {
  auto request = source("__global__ void k() {}");
  request.input_kind = InputKind::hip_source;
  auto result = compile(request);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::unimplemented);
}

TEST_F(BadInputTest, InvalidPtxIsInvalidArgumentWithTheAssemblerLog) {
#ifndef KJIT_TEST_HAVE_TOOLKIT
  GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  CompileRequest request;
  request.input_kind = InputKind::ptx;
  request.input = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus.instruction; }\n";
  request.target = "cuda:90";
  auto result = compile(request);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_FALSE(result.error().log.empty());
}

TEST_F(BadInputTest, BadNameExpressionIsInvalidArgument) {
#ifndef KJIT_TEST_HAVE_TOOLKIT
  GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  auto request = source(k_templated);
  request.name_expressions = {"no_such_kernel<int>"};
  auto result = compile(request);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
}

TEST(MissingToolkit, CudaRequestsFailWithFailedPreconditionNamingWhatIsMissing) {
  DaemonProcess daemon({"--cuda-home", "/nonexistent-cuda"});
  CompileRequest request;
  request.input = k_vector_add;
  request.target = "cuda:90";
  auto result = Client(daemon.socket_path()).compile(request);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(result.error().message.find("NVRTC"), std::string::npos) << result.error().message;
  auto health = Client(daemon.socket_path()).health();
  EXPECT_TRUE(health && *health == "SERVING");
}

}  // namespace
}  // namespace kjit::test
