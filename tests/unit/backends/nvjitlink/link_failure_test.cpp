// Whose fault a failed link is, from nvJitLink's code and log.
#include <gtest/gtest.h>

#include "backends/nvjitlink/nvjitlink_stage.h"

namespace kjit {
namespace {

TEST(LinkFailure, UndefinedReferencesAreNamedWithTheWayOut) {
  const std::string log =
      "error   : Undefined reference to '__nv_no_such_math' in 'k.ll'\n"
      "error   : Undefined reference to 'helper' in 'k.ll'\n"
      "error   : Undefined reference to 'helper' in 'k.ll'\nERROR 9: finish\n";
  EXPECT_EQ(undefined_references(log), (std::vector<std::string>{"__nv_no_such_math", "helper"}));
  Error error = classify_link_failure(false, "k.ll", "nvJitLink failed (code 6) to assemble", log);
  EXPECT_EQ(error.code, ErrorCode::invalid_argument);
  EXPECT_NE(error.message.find("__nv_no_such_math, helper"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("--ptx"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("libdevice"), std::string::npos) << error.message;
  EXPECT_EQ(error.log, log);
  EXPECT_EQ(undefined_references("ptxas fatal   : Unresolved extern function 'f'"), std::vector<std::string>{"f"});
}

TEST(LinkFailure, TheTargetsLimitsAreTheInputsFault) {
  for (const char* line : {"error   : Entry function 'k' uses too much shared data (0x493e0 bytes, 0xc000 max)",
                           "ptxas application ptx input, line 6; error   : Entry function 'k' uses too much parameter "
                           "space (0x9c40 bytes, 0x7ffc max).",
                           "error   : Entry function 'k' uses too much local data (0x1000000 bytes, 0x80000 max)"}) {
    Error error =
        classify_link_failure(false, "k.ptx", "nvJitLink failed (code 6) to assemble", std::string(line) + "\n");
    EXPECT_EQ(error.code, ErrorCode::invalid_argument) << line;
    EXPECT_NE(error.message.find("exceeds a limit of the target"), std::string::npos) << error.message;
    EXPECT_NE(error.message.find("Entry function 'k'"), std::string::npos) << error.message;
  }
}

TEST(LinkFailure, PtxNewerThanTheToolkitIsTheToolkitsLimit) {
  Error error = classify_link_failure(
      true, "k.ptx", "nvJitLink failed (code 4) to assemble",
      "ptxas application ptx input, line 1; fatal   : Unsupported .version 9.9; current version is '9.0'\n");
  EXPECT_EQ(error.code, ErrorCode::failed_precondition);
  EXPECT_NE(error.message.find("Unsupported .version 9.9"), std::string::npos) << error.message;
}

TEST(LinkFailure, OtherAssemblerErrorsAreTheInputsWithTheFirstLine) {
  Error error = classify_link_failure(
      false, "k.ptx", "nvJitLink failed (code 6) to assemble",
      "ptxas application ptx input, line 4; error   : Unknown modifier '.bar'\nptxas fatal   : aborted\n");
  EXPECT_EQ(error.code, ErrorCode::invalid_argument);
  EXPECT_NE(error.message.find("Unknown modifier '.bar'"), std::string::npos) << error.message;
}

TEST(LinkFailure, WithoutAnAssemblerErrorNvJitLinksCodeDecides) {
  EXPECT_EQ(classify_link_failure(false, "k.ptx", "failed", "").code, ErrorCode::internal);
  EXPECT_EQ(classify_link_failure(true, "k.ptx", "failed", "").code, ErrorCode::invalid_argument);
}

}  // namespace
}  // namespace kjit
