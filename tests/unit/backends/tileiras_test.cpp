// Tile IR before tileiras runs: the header, the bytecode version and the
// target are checked against what the routed tileiras says it reads and
// builds; options reach it in its own spellings. No tileiras needed.
#include "backends/tileiras/tileiras.h"

#include <gtest/gtest.h>

#include "core/input_kinds.h"
#include "pipeline/compile_options.h"

namespace kjit {
namespace {

TileirasToolchain fake_tileiras() {
  TileirasToolchain t;
  t.path = "/opt/wheel/bin/tileiras";
  t.ptxas = "/opt/wheel/bin/ptxas";
  t.root = "/opt/wheel";
  t.version = "13.4.92";
  t.bytecode_versions = {"13.1", "13.2", "13.3", "13.4"};
  t.sms = {80, 86, 87, 88, 89, 90, 100, 103, 107, 110, 120, 121};
  return t;
}

std::string bytecode(unsigned char major, unsigned char minor) {
  return std::string("\x7fTileIR\0", 8) + static_cast<char>(major) + static_cast<char>(minor) + "rest";
}

TEST(Tileiras, TheRowCarriesTheMagic) {
  EXPECT_EQ(input_kind_info(InputKind::tileir).magic, std::string_view("\x7fTileIR\0", 8));
  EXPECT_FALSE(input_kind_info(InputKind::tileir).text);
  EXPECT_TRUE(bytecode(13, 4).starts_with(input_kind_info(InputKind::tileir).magic));
}

TEST(Tileiras, ReadsTheBytecodeVersion) {
  EXPECT_EQ(tileir_bytecode_version(bytecode(13, 4)), "13.4");
  EXPECT_EQ(tileir_bytecode_version("\x7fTileIR"), "");
  EXPECT_EQ(tileir_bytecode_version("BC\xc0\xde...."), "");
}

TEST(Tileiras, AcceptsWhatItReadsAndBuilds) {
  EXPECT_TRUE(check_tileir_input(fake_tileiras(), bytecode(13, 4), 90).ok());
  EXPECT_TRUE(check_tileir_input(fake_tileiras(), bytecode(13, 1), 121).ok());
}

TEST(Tileiras, AnotherHeaderIsInvalidArgument) {
  Status s = check_tileir_input(fake_tileiras(), "not bytecode at all", 90);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
}

TEST(Tileiras, AnUnreadVersionIsFailedPreconditionNamingBoth) {
  Status s = check_tileir_input(fake_tileiras(), bytecode(13, 9), 90);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(s.error().message.find("13.9"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("tileiras 13.4.92"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("13.1, 13.2, 13.3, 13.4"), std::string::npos) << s.error().message;
}

TEST(Tileiras, ATargetItDoesNotBuildIsInvalidArgumentListingThoseItDoes) {
  Status s = check_tileir_input(fake_tileiras(), bytecode(13, 4), 75);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(s.error().message.find("sm_75"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("sm_80, sm_86"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("sm_121"), std::string::npos) << s.error().message;
}

TEST(Tileiras, OptionsReachItInItsSpellings) {
  Result<CheckedOptions> checked = check_options(InputKind::tileir, {"-O1", "-lineinfo", "-G"});
  ASSERT_TRUE(checked.ok()) << checked.error().message;
  EXPECT_EQ(checked->tileiras, (std::vector<std::string>{"--opt-level=1", "--lineinfo", "--device-debug"}));
  EXPECT_TRUE(checked->nvjitlink.empty());
  EXPECT_EQ(checked->normalized, (std::vector<std::string>{"-O1", "-lineinfo", "-G"}));
}

TEST(Tileiras, OptionsItCannotTakeAreRefused) {
  for (const char* option : {"-maxrregcount=32", "-Xptxas=-v", "-ftz=true", "-DX=1"}) {
    Result<CheckedOptions> checked = check_options(InputKind::tileir, {option});
    ASSERT_FALSE(checked.ok()) << option;
    EXPECT_EQ(checked.error().code, ErrorCode::invalid_argument) << option;
  }
}

TEST(Tileiras, RunToolReportsTheExitAndOutput) {
  Result<ToolRun> run = run_tool({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, {}, "/", std::chrono::seconds(30));
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->exit_code, 3);
  EXPECT_NE(run->output.find("out"), std::string::npos);
  EXPECT_NE(run->output.find("err"), std::string::npos);
}

TEST(Tileiras, RunToolKillsAToolPastItsBound) {
  Result<ToolRun> run = run_tool({"/bin/sleep", "60"}, {}, "/", std::chrono::milliseconds(200));
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().code, ErrorCode::deadline_exceeded);
}

TEST(Tileiras, NotFoundIsFailedPreconditionSayingWhere) {
  Result<TileirasToolchain> found = find_tileiras({"", {"/nonexistent/env"}, ""});
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(found.error().message.find("/nonexistent/env"), std::string::npos) << found.error().message;
}

}  // namespace
}  // namespace kjit
