// The offload bundle writer and reader against each other, against hostile
// input, and against clang-offload-bundler itself where it is installed.
#include "backends/bundle/offload_bundle.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace kjit {
namespace {

const std::string k_gfx90a = "hipv4-amdgcn-amd-amdhsa--gfx90a";
const std::string k_gfx942 = "hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-";

// Payloads the bundler copies without parsing (it reads inputs as plain
// bytes when the first one, the empty host input, is no object file).
std::vector<BundleEntry> sample_entries() {
  std::string second(5000, '\0');
  for (size_t i = 0; i < second.size(); ++i) second[i] = static_cast<char>(i * 7 + 3);
  using namespace std::string_literals;
  return {{k_gfx90a, "\177ELF\0code object one"s}, {k_gfx942, second}};
}

uint64_t read_u64(const std::string& bytes, size_t at) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

void write_u64(std::string& bytes, size_t at, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// Where entry `index`'s offset field lies in a bundle's header.
size_t offset_field(const std::string& bundle, size_t index) {
  size_t at = 24 + 8;
  for (size_t i = 0; i < index; ++i) at += 24 + read_u64(bundle, at + 16);
  return at;
}

std::string written_sample() {
  Result<std::string> bundle = write_offload_bundle(sample_entries());
  EXPECT_TRUE(bundle.ok()) << (bundle.ok() ? "" : bundle.error().message);
  return bundle.ok() ? bundle.value() : std::string();
}

TEST(HipBundleId, PrefixesTheTargetIdWithTheHipv4Kind) {
  EXPECT_EQ(hip_bundle_id("amdgcn-amd-amdhsa--gfx90a"), k_gfx90a);
  EXPECT_EQ(hip_bundle_id("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"), k_gfx942);
}

TEST(OffloadBundle, RoundTripsWithTheEmptyHostEntryFirst) {
  Result<std::vector<BundleEntry>> read = read_offload_bundle(written_sample());
  ASSERT_TRUE(read.ok()) << read.error().message;
  std::vector<BundleEntry> expected = sample_entries();
  ASSERT_EQ(read->size(), expected.size() + 1);
  EXPECT_EQ((*read)[0].id, k_host_bundle_id);
  EXPECT_EQ((*read)[0].bytes, "");
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ((*read)[i + 1].id, expected[i].id);
    EXPECT_EQ((*read)[i + 1].bytes, expected[i].bytes);
  }
}

TEST(OffloadBundle, StartsEveryEntryOnAPageAndEndsAtTheLastEntry) {
  const std::string bundle = written_sample();
  ASSERT_EQ(bundle.substr(0, 24), "__CLANG_OFFLOAD_BUNDLE__");
  ASSERT_EQ(read_u64(bundle, 24), 3u);
  const size_t host = offset_field(bundle, 0);
  const size_t first = offset_field(bundle, 1);
  const size_t second = offset_field(bundle, 2);
  EXPECT_EQ(read_u64(bundle, host), 4096u);  // the empty host entry shares the first code object's offset
  EXPECT_EQ(read_u64(bundle, host + 8), 0u);
  EXPECT_EQ(read_u64(bundle, first), 4096u);
  EXPECT_EQ(read_u64(bundle, second), 8192u);
  EXPECT_EQ(bundle.size(), 8192u + 5000u);
  // Between the header and the first code object: zeros.
  EXPECT_EQ(bundle.find_first_not_of('\0', second + 24 + k_gfx942.size()), 4096u);
}

TEST(OffloadBundle, EmptyCodeObjectsStillLieInsideTheFile) {
  Result<std::string> bundle = write_offload_bundle({{k_gfx90a, ""}, {k_gfx942, ""}});
  ASSERT_TRUE(bundle.ok()) << bundle.error().message;
  Result<std::vector<BundleEntry>> read = read_offload_bundle(*bundle);
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_EQ(read->size(), 3u);
  EXPECT_EQ((*read)[2].id, k_gfx942);
  EXPECT_EQ((*read)[2].bytes, "");
}

TEST(OffloadBundle, RefusesAnIdGivenTwice) {
  Result<std::string> bundle = write_offload_bundle({{k_gfx90a, "a"}, {k_gfx942, "b"}, {k_gfx90a, "c"}});
  ASSERT_FALSE(bundle.ok());
  EXPECT_EQ(bundle.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(bundle.error().message.find(k_gfx90a), std::string::npos);
}

TEST(OffloadBundle, RefusesTheHostIdAnEmptyIdAndNoEntries) {
  for (const std::vector<BundleEntry>& entries : std::vector<std::vector<BundleEntry>>{
           {{std::string(k_host_bundle_id), "x"}}, {{k_gfx90a, "a"}, {"", "b"}}, {}}) {
    Result<std::string> bundle = write_offload_bundle(entries);
    ASSERT_FALSE(bundle.ok());
    EXPECT_EQ(bundle.error().code, ErrorCode::invalid_argument);
  }
}

TEST(OffloadBundle, EveryTruncationIsAnError) {
  const std::string bundle = written_sample();
  ASSERT_TRUE(read_offload_bundle(bundle).ok());
  for (size_t length = 0; length < bundle.size(); ++length) {
    Result<std::vector<BundleEntry>> read = read_offload_bundle(std::string_view(bundle).substr(0, length));
    ASSERT_FALSE(read.ok()) << "a bundle cut to " << length << " bytes was read";
    ASSERT_EQ(read.error().code, ErrorCode::invalid_argument);
  }
}

TEST(OffloadBundle, EntriesOutsideTheFileAreErrors) {
  const std::string good = written_sample();
  const size_t field = offset_field(good, 2);
  struct Patch {
    size_t at;
    uint64_t value;
  };
  for (Patch patch : {Patch{field, good.size()}, Patch{field, good.size() + 1}, Patch{field, UINT64_MAX},
                      Patch{field + 8, 5001}, Patch{field + 8, UINT64_MAX}, Patch{field, 8}}) {
    std::string bundle = good;
    write_u64(bundle, patch.at, patch.value);
    Result<std::vector<BundleEntry>> read = read_offload_bundle(bundle);
    ASSERT_FALSE(read.ok()) << "field at " << patch.at << " set to " << patch.value;
    EXPECT_EQ(read.error().code, ErrorCode::invalid_argument);
  }
  std::string long_id = good;
  write_u64(long_id, field + 16, UINT64_MAX);
  EXPECT_FALSE(read_offload_bundle(long_id).ok());
}

TEST(OffloadBundle, AbsurdEntryCountsAreErrors) {
  const std::string good = written_sample();
  for (uint64_t count : {uint64_t{0}, uint64_t{4}, uint64_t{1} << 40, UINT64_MAX}) {
    std::string bundle = good;
    write_u64(bundle, 24, count);
    Result<std::vector<BundleEntry>> read = read_offload_bundle(bundle);
    ASSERT_FALSE(read.ok()) << "count " << count;
    EXPECT_EQ(read.error().code, ErrorCode::invalid_argument);
  }
}

TEST(OffloadBundle, OtherMagicAndCompressedBundlesAreErrors) {
  std::string bundle = written_sample();
  bundle[0] = 'X';
  EXPECT_FALSE(read_offload_bundle(bundle).ok());
  Result<std::vector<BundleEntry>> compressed = read_offload_bundle(std::string("CCOB\x02\x00\x01\x00", 8));
  ASSERT_FALSE(compressed.ok());
  EXPECT_NE(compressed.error().message.find("compressed"), std::string::npos);
}

// clang-offload-bundler, when CMake found it.
class WithClangBundler : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef KJIT_TEST_CLANG_OFFLOAD_BUNDLER
    GTEST_SKIP() << "clang-offload-bundler was not found at configure time";
#else
    bundler_ = KJIT_TEST_CLANG_OFFLOAD_BUNDLER;
    std::string pattern = (std::filesystem::temp_directory_path() / "kjit-bundle-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
#endif
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string path(const std::string& name) const {
    return (dir_ / name).string();
  }

  void write_file(const std::string& name, const std::string& bytes) const {
    std::ofstream out(path(name), std::ios::binary);
    out << bytes;
    ASSERT_TRUE(out.good());
  }

  std::string read_file(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // Runs the bundler with `args` (paths from mkdtemp need no quoting); its
  // exit status, with its output in `output`.
  int bundler(const std::string& args, std::string* output = nullptr) const {
    const std::string command = bundler_ + " " + args + " > " + path("stdout") + " 2>&1";
    const int status = std::system(command.c_str());
    if (output) *output = read_file("stdout");
    return status;
  }

  std::string bundler_;
  std::filesystem::path dir_;
};

TEST_F(WithClangBundler, ListsExactlyTheIdsKjitWrote) {
  write_file("kjit.bundle", written_sample());
  std::string output;
  ASSERT_EQ(bundler("-list -type=o -input=" + path("kjit.bundle"), &output), 0) << output;
  std::vector<std::string> ids;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) ids.push_back(line);
  std::sort(ids.begin(), ids.end());
  std::vector<std::string> expected{std::string(k_host_bundle_id), k_gfx90a, k_gfx942};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ids, expected);
}

TEST_F(WithClangBundler, UnbundlesTheExactBytesKjitWrote) {
  write_file("kjit.bundle", written_sample());
  for (const BundleEntry& entry : sample_entries()) {
    std::string output;
    ASSERT_EQ(
        bundler("-unbundle -type=o -targets=" + entry.id + " -input=" + path("kjit.bundle") + " -output=" + path("out"),
                &output),
        0)
        << output;
    EXPECT_EQ(read_file("out"), entry.bytes) << entry.id;
  }
}

TEST_F(WithClangBundler, ReadsWhatTheBundlerWroteAndWritesTheSameBytes) {
  // As clang's HIP driver calls it: an empty host input named
  // "host-x86_64-unknown-linux", page-aligned code objects.
  std::vector<BundleEntry> entries = sample_entries();
  write_file("host", "");
  write_file("first", entries[0].bytes);
  write_file("second", entries[1].bytes);
  std::string output;
  ASSERT_EQ(bundler("-type=o -bundle-align=4096 -targets=host-x86_64-unknown-linux," + entries[0].id + "," +
                        entries[1].id + " -input=" + path("host") + " -input=" + path("first") +
                        " -input=" + path("second") + " -output=" + path("clang.bundle"),
                    &output),
            0)
      << output;
  const std::string clang_bundle = read_file("clang.bundle");

  Result<std::vector<BundleEntry>> read = read_offload_bundle(clang_bundle);
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_EQ(read->size(), 3u);
  EXPECT_EQ((*read)[0].id, k_host_bundle_id);
  EXPECT_EQ((*read)[0].bytes, "");
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ((*read)[i + 1].id, entries[i].id);
    EXPECT_EQ((*read)[i + 1].bytes, entries[i].bytes);
  }
  EXPECT_EQ(written_sample(), clang_bundle);
}

}  // namespace
}  // namespace kjit
