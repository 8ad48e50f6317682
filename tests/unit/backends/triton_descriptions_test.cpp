// Triton builds' descriptions kept across daemon starts: recalled while
// nothing they were made of changed, described again as soon as a file of
// theirs changed, appeared or went, never for another list of candidates.
// A fake build (a site-packages tree and a ptxas) stands in for Triton.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backends/triton/triton_descriptions.h"

namespace kjit {
namespace {

namespace fs = std::filesystem;

class TritonDescriptions : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kjit-descriptions-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(site() / "triton" / "__pycache__");
    fs::create_directories(root_ / "bin");
    write(site() / "triton" / "__init__.py", "__version__ = '3.9.0'\n");
    write(site() / "triton" / "__pycache__" / "__init__.cpython-311.pyc", "byte code");
    write(ptxas(), "ptxas 12.9");
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path site() const { return root_ / "site-packages"; }
  fs::path ptxas() const { return root_ / "bin" / "ptxas"; }
  std::string records() const { return (root_ / "records").string(); }
  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

  // A build as its interpreter describes it, naming what it is made of
  // (or, with `inputs` false, naming nothing).
  TritonBuild build(bool inputs = true) const {
    std::string text = R"({"ok": true, "distribution": "triton", "version": "3.9.0", "backends": ["nvidia"],
        "cuda_archs": [90], "hip_archs": [], "options": {"cuda": {"num_warps": "int"}}, "refused_options": {},
        "libtriton_sha256": ")" + std::string(64, 'a') + R"(", "ptxas": [{"path": ")" + ptxas().string() +
                       R"(", "sha256": ")" + std::string(64, 'b') + R"(", "version": "12.9"}],
        "executables": [")" + ptxas().string() + R"("], "read_paths": [], "plugins": [], "tlx": false)";
    if (inputs)
      text += R"(, "inputs": {"files": [")" + ptxas().string() + R"("], "trees": [")" + site().string() + R"("]})";
    Result<TritonBuild> parsed = parse_triton_build(text + "}", python());
    EXPECT_TRUE(parsed) << parsed.error().message;
    return parsed.value();
  }
  std::string python() const { return (root_ / "bin" / "python").string(); }
  std::vector<std::string> candidates() const { return {python()}; }

  bool recalled() const { return recall_triton_builds(records(), candidates()).has_value(); }

  fs::path root_;
};

TEST_F(TritonDescriptions, RememberedBuildsAreRecalledAsTheyWereWhileNothingChanged) {
  EXPECT_FALSE(recalled()) << "nothing remembered yet";
  const TritonBuild described = build();
  remember_triton_builds(records(), candidates(), {described});
  std::optional<std::vector<TritonBuild>> again = recall_triton_builds(records(), candidates());
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].name, "triton-3.9.0");
  EXPECT_EQ((*again)[0].python, python());
  EXPECT_EQ((*again)[0].description, described.description);
  EXPECT_EQ((*again)[0].identity(), described.identity());
  // The records' directory is the daemon user's alone.
  EXPECT_EQ(fs::status(records()).permissions() & fs::perms::all, fs::perms::owner_all);
}

TEST_F(TritonDescriptions, AFileChangedAddedOrRemovedInItsTreesOrANamedFileChangedMeansDescribingAgain) {
  auto remembered_then = [&](auto change) {
    remember_triton_builds(records(), candidates(), {build()});
    EXPECT_TRUE(recalled());
    change();
    return recalled();
  };
  EXPECT_FALSE(remembered_then([&] { write(site() / "triton" / "__init__.py", "__version__ = '3.9.10'\n"); }))
      << "a file in the tree was rewritten";
  EXPECT_FALSE(remembered_then([&] { write(site() / "utlx_plugin.pth", "import _utlx_autoregister\n"); }))
      << "a file was added to the tree";
  EXPECT_FALSE(remembered_then([&] { fs::remove(site() / "utlx_plugin.pth"); })) << "a file was removed";
  EXPECT_FALSE(remembered_then([&] { fs::permissions(ptxas(), fs::perms::owner_all); }))
      << "a file the description names changed";
  EXPECT_FALSE(remembered_then([&] { fs::remove(ptxas()); })) << "a file the description names went";
}

TEST_F(TritonDescriptions, ByteCodeCachesDoNotCount) {
  remember_triton_builds(records(), candidates(), {build()});
  write(site() / "triton" / "__pycache__" / "__init__.cpython-311.pyc", "other byte code");
  fs::create_directories(site() / "__pycache__");
  write(site() / "__pycache__" / "x.cpython-311.pyc", "new");
  EXPECT_TRUE(recalled());
}

TEST_F(TritonDescriptions, AnotherListOfCandidatesHasARecordOfItsOwn) {
  remember_triton_builds(records(), candidates(), {build()});
  EXPECT_FALSE(recall_triton_builds(records(), {python(), "/other/bin/python"}));
  EXPECT_FALSE(recall_triton_builds(records(), {}));
  EXPECT_TRUE(recalled());
}

TEST_F(TritonDescriptions, ADescriptionThatNamesNoInputsIsNeverRemembered) {
  EXPECT_FALSE(triton_descriptions_fingerprint({build(false)}));
  remember_triton_builds(records(), candidates(), {build(false)});
  EXPECT_FALSE(recalled());
}

TEST_F(TritonDescriptions, ARecordThatIsNotOneIsIgnored) {
  remember_triton_builds(records(), candidates(), {build()});
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(records())) files.push_back(entry.path());
  ASSERT_EQ(files.size(), 1u) << "one record, no temporary file left";
  for (const std::string& text : {std::string("not json"), std::string(R"({"format": 99})"), std::string("[]"),
                                  std::string(R"({"format": 1, "candidates": [")") + python() +
                                      R"("], "builds": [{"python": 1}], "fingerprint": ""})"}) {
    write(files[0], text);
    EXPECT_FALSE(recalled()) << text;
  }
}

}  // namespace
}  // namespace kjit
