// resolve_includes over real directory trees: what is found, what is left to
// the daemon, the names headers are sent under, and the bounds. With the CUDA
// toolkit, the result is also fed to NVRTC, which is the proof that the names
// match what NVRTC looks up.
#include "client/include_resolver.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifdef KJIT_TEST_NVRTC
#include <nvrtc.h>
#endif

namespace kjit {
namespace {

namespace fs = std::filesystem;

class IncludeResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string test_name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    root_ = fs::temp_directory_path() / ("kjit_include_resolver_" + std::to_string(::getpid()) + "_" + test_name);
    fs::remove_all(root_);
    fs::create_directories(root_);
  }

  void TearDown() override {
    std::error_code ignored;
    fs::permissions(root_, fs::perms::all, fs::perm_options::add, ignored);
    fs::remove_all(root_, ignored);
  }

  fs::path write(const std::string& relative, const std::string& content) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  // Resolves the file at `main` (relative to the tree) with -I dirs relative
  // to the tree.
  Result<ResolvedHeaders> resolve(const std::string& main, const std::vector<std::string>& dirs = {},
                                  const ResolveLimits& limits = {}) {
    const fs::path path = root_ / main;
    std::ifstream in(path, std::ios::binary);
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<fs::path> include_dirs;
    for (const std::string& dir : dirs) include_dirs.push_back(root_ / dir);
    return resolve_includes(path, source, include_dirs, limits);
  }

  fs::path root_;
};

std::vector<std::string> names_of(const ResolvedHeaders& resolved) {
  std::vector<std::string> names;
  for (const auto& [name, content] : resolved.headers) names.push_back(name);
  return names;
}

bool any_warning_contains(const ResolvedHeaders& resolved, std::string_view text) {
  return std::any_of(resolved.warnings.begin(), resolved.warnings.end(),
                     [&](const std::string& warning) { return warning.find(text) != std::string::npos; });
}

// The daemon's rule: no directive may name an absolute path or use "..".
void expect_daemon_accepts_every_directive(const ResolvedHeaders& resolved) {
  std::vector<std::string_view> texts{resolved.source};
  for (const auto& [name, content] : resolved.headers) {
    EXPECT_EQ(name.find(".."), std::string::npos) << name;
    EXPECT_NE(name.front(), '/') << name;
    texts.push_back(content);
  }
  for (std::string_view text : texts) {
    for (const IncludeDirective& directive : scan_include_directives(text)) {
      EXPECT_EQ(directive.target.find(".."), std::string::npos) << directive.target;
      EXPECT_NE(directive.target.front(), '/') << directive.target;
    }
  }
}

TEST_F(IncludeResolverTest, QuotedIncludeNextToTheSourceIsSent) {
  write("src/main.cu", "#include \"helper.h\"\n");
  write("src/helper.h", "#define HELPER 1\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->headers, (std::map<std::string, std::string>{{"helper.h", "#define HELPER 1\n"}}));
  EXPECT_EQ(resolved->source, "#include \"helper.h\"\n");
  EXPECT_TRUE(resolved->warnings.empty());
}

TEST_F(IncludeResolverTest, IncludeFromAnIncludeDirIsSent) {
  write("src/main.cu", "#include \"lib/ops.h\"\n");
  write("include/lib/ops.h", "#define OPS 1\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->headers, (std::map<std::string, std::string>{{"lib/ops.h", "#define OPS 1\n"}}));
}

TEST_F(IncludeResolverTest, QuotedIncludeNextToTheSourceWinsOverIncludeDirs) {
  write("src/main.cu", "#include \"config.h\"\n");
  write("src/config.h", "next to source\n");
  write("include/config.h", "in include dir\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->headers.at("config.h"), "next to source\n");
}

TEST_F(IncludeResolverTest, IncludeDirsAreSearchedInOrder) {
  write("src/main.cu", "#include <config.h>\n");
  write("first/config.h", "first\n");
  write("second/config.h", "second\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"second", "first"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->headers.at("config.h"), "second\n");
}

TEST_F(IncludeResolverTest, TransitiveIncludesAreSent) {
  write("src/main.cu", "#include <a.h>\n");
  write("include/a.h", "#include <b.h>\n");
  write("include/b.h", "#include <c.h>\n");
  write("include/c.h", "#define DEEP 1\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"a.h", "b.h", "c.h"}));
}

// NVRTC looks up the text of the directive as written, so a header that
// a/b.h includes as "c.h" must be sent as "c.h", not "a/c.h".
TEST_F(IncludeResolverTest, NestedRelativeIncludeIsSentUnderTheNameAsWritten) {
  write("src/main.cu", "#include \"a/b.h\"\n");
  write("include/a/b.h", "#include \"c.h\"\n");
  write("include/a/c.h", "#define C 1\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->headers,
            (std::map<std::string, std::string>{{"a/b.h", "#include \"c.h\"\n"}, {"c.h", "#define C 1\n"}}));
}

TEST_F(IncludeResolverTest, AngledIncludeFoundUnderAnIncludeDirIsSent) {
  write("src/main.cu", "#include <lib/ops.h>\n");
  write("include/lib/ops.h", "#define OPS 1\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"lib/ops.h"}));
}

TEST_F(IncludeResolverTest, AngledIncludeDoesNotLookNextToTheSource) {
  write("src/main.cu", "#include <helper.h>\n");
  write("src/helper.h", "#define HELPER 1\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_TRUE(resolved->headers.empty());
}

TEST_F(IncludeResolverTest, ToolkitHeadersAreLeftToTheDaemon) {
  write("src/main.cu",
        "#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n#include <cuda/std/cstdint>\n"
        "#include \"cuda_bf16.h\"\n#include <mine.h>\n");
  write("include/mine.h", "#include <cuda_fp16.h>\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"mine.h"}));
  EXPECT_EQ(resolved->headers.at("mine.h"), "#include <cuda_fp16.h>\n");
  EXPECT_TRUE(resolved->warnings.empty());
}

TEST_F(IncludeResolverTest, ToolkitIncludeDirIsSkippedWithAWarning) {
  write("src/main.cu", "#include <cuda_runtime.h>\n");
  write("cuda/include/cuda_runtime_api.h", "// toolkit\n");
  write("cuda/include/cuda_runtime.h", "#include \"cuda_runtime_api.h\"\n");
  write("cuda/include/cccl/cuda/std/cstdint", "// toolkit\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"cuda/include", "cuda/include/cccl"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_TRUE(resolved->headers.empty());
  EXPECT_EQ(resolved->warnings.size(), 2u);
  EXPECT_TRUE(any_warning_contains(*resolved, "CUDA toolkit"));
}

TEST_F(IncludeResolverTest, IncludeCycleSendsEachFileOnce) {
  write("src/main.cu", "#include \"a.h\"\n");
  write("src/a.h", "#pragma once\n#include \"b.h\"\n");
  write("src/b.h", "#pragma once\n#include \"a.h\"\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"a.h", "b.h"}));
}

TEST_F(IncludeResolverTest, SelfIncludeIsFine) {
  write("src/main.cu", "#include \"self.h\"\n");
  write("src/self.h", "#ifndef SELF\n#define SELF\n#include \"self.h\"\n#endif\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"self.h"}));
}

TEST_F(IncludeResolverTest, CommentedOutIncludesAreIgnored) {
  write("src/main.cu",
        "// #include \"line.h\"\n/*\n#include \"block.h\"\n*/\nconst char* s = \"#include \\\"string.h\\\"\";\n"
        "#include \"used.h\"\n");
  write("src/line.h", "");
  write("src/block.h", "");
  write("src/string.h", "");
  write("src/used.h", "");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"used.h"}));
}

TEST_F(IncludeResolverTest, HeadersUnderAnyConditionalBranchAreSent) {
  write("src/main.cu", "#ifdef USE_FAST\n#include \"fast.h\"\n#else\n#include \"slow.h\"\n#endif\n");
  write("src/fast.h", "");
  write("src/slow.h", "");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"fast.h", "slow.h"}));
}

TEST_F(IncludeResolverTest, MissingHeaderIsNotAnError) {
  write("src/main.cu", "#include \"present.h\"\n#include \"absent.h\"\n");
  write("include/present.h", "#include \"also_absent.h\"\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include", "no_such_dir"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"present.h"}));
  EXPECT_EQ(resolved->source, "#include \"present.h\"\n#include \"absent.h\"\n");
  ASSERT_EQ(resolved->warnings.size(), 1u);
  EXPECT_TRUE(any_warning_contains(*resolved, "no_such_dir"));
}

TEST_F(IncludeResolverTest, DirectoryWithAHeadersNameIsNotAMatch) {
  write("src/main.cu", "#include \"thing\"\n");
  fs::create_directories(root_ / "src/thing");
  write("include/thing", "the file\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->headers.at("thing"), "the file\n");
}

TEST_F(IncludeResolverTest, ComputedIncludeWarns) {
  write("src/main.cu", "#define CONFIG \"config.h\"\n#include CONFIG\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_TRUE(resolved->headers.empty());
  ASSERT_EQ(resolved->warnings.size(), 1u);
  EXPECT_TRUE(any_warning_contains(*resolved, "main.cu:2: computed include CONFIG"));
}

// One name, two files: "config.h" from main.cu and from lib/ops.h. Both are
// sent, under different names, and the second include is rewritten to match.
TEST_F(IncludeResolverTest, OneNameForTwoFilesWarnsAndSendsBoth) {
  write("src/main.cu", "#include \"config.h\"\n#include <lib/ops.h>\n");
  write("src/config.h", "app config\n");
  write("include/lib/ops.h", "#include \"config.h\"\n");
  write("include/lib/config.h", "lib config\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->headers, (std::map<std::string, std::string>{{"config.h", "app config\n"},
                                                                   {"lib/config.h", "lib config\n"},
                                                                   {"lib/ops.h", "#include \"lib/config.h\"\n"}}));
  ASSERT_EQ(resolved->warnings.size(), 1u);
  EXPECT_TRUE(any_warning_contains(*resolved, "include \"config.h\" means different files"));
}

// #pragma once works per name in NVRTC, so one file must have one name.
TEST_F(IncludeResolverTest, OneFileSpelledTwoWaysIsSentOnce) {
  write("src/main.cu", "#include <lib/once.h>\n#include <lib/user.h>\n");
  write("include/lib/once.h", "#pragma once\n");
  write("include/lib/user.h", "#include \"once.h\"\n#include \"./once.h\"\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"lib/once.h", "lib/user.h"}));
  EXPECT_EQ(resolved->headers.at("lib/user.h"), "#include \"lib/once.h\"\n#include \"lib/once.h\"\n");
  EXPECT_TRUE(resolved->warnings.empty());
}

TEST_F(IncludeResolverTest, DotSegmentsAreNotSentInNames) {
  write("src/main.cu", "#include \"./local.h\"\n#include \"sub//deep.h\"\n");
  write("src/local.h", "");
  write("src/sub/deep.h", "");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"local.h", "sub/deep.h"}));
  EXPECT_EQ(resolved->source, "#include \"local.h\"\n#include \"sub/deep.h\"\n");
}

// The daemon refuses "..": a file reached through it gets a name without it,
// and the directive is rewritten, in headers and in the source alike.
TEST_F(IncludeResolverTest, ParentDirectoryIncludesAreRenamedWithoutDotDot) {
  write("src/main.cu", "#include \"../shared/d.h\"\n#include <lib/b.h>\nint line3;\n");
  write("shared/d.h", "#define D 1\n");
  write("include/lib/b.h", "#include \"../common/e.h\"\n");
  write("include/common/e.h", "#define E 1\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->headers, (std::map<std::string, std::string>{{"__up__/shared/d.h", "#define D 1\n"},
                                                                   {"common/e.h", "#define E 1\n"},
                                                                   {"lib/b.h", "#include \"common/e.h\"\n"}}));
  EXPECT_EQ(resolved->source, "#include \"__up__/shared/d.h\"\n#include <lib/b.h>\nint line3;\n");
  expect_daemon_accepts_every_directive(*resolved);
}

TEST_F(IncludeResolverTest, AbsoluteIncludeIsRenamed) {
  const fs::path header = write("elsewhere/abs.h", "#define ABS 1\n");
  write("src/main.cu", "#include \"" + header.string() + "\"\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->headers, (std::map<std::string, std::string>{{"__up__/elsewhere/abs.h", "#define ABS 1\n"}}));
  expect_daemon_accepts_every_directive(*resolved);
}

TEST_F(IncludeResolverTest, UnresolvedDotDotIncludeWarns) {
  write("src/main.cu", "#include \"../missing.h\"\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_TRUE(resolved->headers.empty());
  EXPECT_TRUE(any_warning_contains(*resolved, "\"../missing.h\" is not found here"));
}

// A name some include leaves to the daemon must not be taken by a sent
// header, or the sent one would replace the daemon's for that include too.
TEST_F(IncludeResolverTest, NameLeftToTheDaemonIsNotTaken) {
  write("src/main.cu", "#include <assert.h>\n#include <lib/check.h>\n");
  write("include/lib/check.h", "#include \"assert.h\"\n");
  write("include/lib/assert.h", "library's own\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->headers.count("assert.h"), 0u);
  EXPECT_EQ(resolved->headers.at("lib/assert.h"), "library's own\n");
  EXPECT_EQ(resolved->headers.at("lib/check.h"), "#include \"lib/assert.h\"\n");
  EXPECT_EQ(resolved->source, "#include <assert.h>\n#include <lib/check.h>\n");
  EXPECT_TRUE(any_warning_contains(*resolved, "left to the daemon"));
}

TEST_F(IncludeResolverTest, SymlinkedHeaderIsSentOnce) {
  write("include/real.h", "#pragma once\n");
  fs::create_symlink(root_ / "include/real.h", root_ / "include/alias.h");
  write("src/main.cu", "#include <real.h>\n#include <alias.h>\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"real.h"}));
  EXPECT_EQ(resolved->source, "#include <real.h>\n#include <real.h>\n");
}

TEST_F(IncludeResolverTest, UnreadableHeaderIsInvalidArgument) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their permissions";
  write("src/main.cu", "#include \"secret.h\"\n");
  const fs::path secret = write("src/secret.h", "#define SECRET 1\n");
  fs::permissions(secret, fs::perms::none);
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(resolved.error().message.find("secret.h"), std::string::npos);
}

TEST_F(IncludeResolverTest, TooManyHeadersIsResourceExhausted) {
  std::string main;
  for (int i = 0; i < 5; ++i) {
    main += "#include \"h" + std::to_string(i) + ".h\"\n";
    write("src/h" + std::to_string(i) + ".h", "");
  }
  write("src/main.cu", main);
  ResolveLimits limits;
  limits.max_files = 5;
  EXPECT_TRUE(resolve("src/main.cu", {}, limits).ok());
  limits.max_files = 4;
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {}, limits);
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error().code, ErrorCode::resource_exhausted);
}

TEST_F(IncludeResolverTest, TooManyBytesIsResourceExhausted) {
  write("src/main.cu", "#include \"a.h\"\n#include \"b.h\"\n");
  write("src/a.h", std::string(600, 'a'));
  write("src/b.h", std::string(400, 'b'));
  ResolveLimits limits;
  limits.max_total_bytes = 1000;
  EXPECT_TRUE(resolve("src/main.cu", {}, limits).ok());
  limits.max_total_bytes = 999;
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {}, limits);
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error().code, ErrorCode::resource_exhausted);
}

TEST_F(IncludeResolverTest, DefaultLimitsAreThoseDocumented) {
  const ResolveLimits limits;
  EXPECT_EQ(limits.max_files, 4096u);
  EXPECT_EQ(limits.max_total_bytes, 64u * 1024 * 1024);
}

TEST_F(IncludeResolverTest, RewritingKeepsLineNumbers) {
  write("src/main.cu", "#include \"../x/a.h\" // first\nint two;\n#include \"../x/b.h\"\nint four;\n");
  write("x/a.h", "");
  write("x/b.h", "");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->source, "#include \"__up__/x/a.h\" // first\nint two;\n#include \"__up__/x/b.h\"\nint four;\n");
}

// A name spelled across lines is replaced whole, and splices after the new
// name keep the lines that follow where they were.
TEST_F(IncludeResolverTest, SplicedNameIsRewrittenWhole) {
  write("src/main.cu", "#include \"../x/\\\na.h\"\nint three;\n#include \"../x/\\\r\nb.h\"\r\n");
  write("x/a.h", "");
  write("x/b.h", "");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"__up__/x/a.h", "__up__/x/b.h"}));
  EXPECT_EQ(resolved->source, "#include \"__up__/x/a.h\\\n\"\nint three;\n#include \"__up__/x/b.h\\\r\n\"\r\n");
  expect_daemon_accepts_every_directive(*resolved);
}

// __has_include of a file found here is followed like an #include, so the
// probe is true on the daemon as well, and its name is rewritten to match.
TEST_F(IncludeResolverTest, HasIncludeIsFollowed) {
  write("src/main.cu", "#if __has_include(\"../x/cfg.h\")\n#include \"../x/cfg.h\"\n#endif\n");
  write("x/cfg.h", "#define CFG 1\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(names_of(*resolved), (std::vector<std::string>{"__up__/x/cfg.h"}));
  EXPECT_EQ(resolved->source, "#if __has_include(\"__up__/x/cfg.h\")\n#include \"__up__/x/cfg.h\"\n#endif\n");
  expect_daemon_accepts_every_directive(*resolved);
}

TEST_F(IncludeResolverTest, ComputedHasIncludeWarns) {
  write("src/main.cu", "#if __has_include(CFG)\n#endif\n");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  ASSERT_EQ(resolved->warnings.size(), 1u);
  EXPECT_TRUE(any_warning_contains(*resolved, "main.cu:1: computed __has_include CFG")) << resolved->warnings[0];
}

TEST_F(IncludeResolverTest, IncludeNextIsNotFollowed) {
  write("src/main.cu", "#include_next \"next.h\"\n#include_next \"../up.h\"\n");
  write("src/next.h", "");
  write("up.h", "");
  const Result<ResolvedHeaders> resolved = resolve("src/main.cu");
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_TRUE(resolved->headers.empty());
  ASSERT_EQ(resolved->warnings.size(), 1u);
  EXPECT_TRUE(any_warning_contains(*resolved, "main.cu:2: #include_next \"../up.h\" is not followed"))
      << resolved->warnings[0];
}

#ifdef KJIT_TEST_NVRTC

// The end-to-end proof: NVRTC, given only the resolver's output as
// in-memory headers, compiles a source whose includes use nested relative
// names, "..", one file under two spellings (with #pragma once), one name
// for two files, and a toolkit header. Each header's value is checked by
// static_assert, so a wrong match fails the compile.
TEST_F(IncludeResolverTest, NvrtcAcceptsResolvedHeaders) {
  write("src/main.cu",
        "#include \"kernel_config.h\"\n"
        "#include <lib/ops.h>\n"
        "#include \"../shared/d.h\"\n"
        "#include \"lib/once.h\"\n"
        "#include <cuda_fp16.h>\n"
        "static_assert(APP_CONFIG == 1, \"src/kernel_config.h\");\n"
        "static_assert(LIB_CONFIG == 10, \"include/lib/kernel_config.h\");\n"
        "static_assert(E_VALUE == 100, \"include/common/e.h\");\n"
        "static_assert(D_VALUE == 1000, \"shared/d.h\");\n"
        "static_assert(D2_VALUE == 2000, \"shared/d2.h\");\n"
        "__global__ void kernel(float* out) { out[0] = __half2float(__float2half(ONCE_VALUE)); }\n");
  write("src/kernel_config.h", "#define APP_CONFIG 1\n");
  write("include/lib/ops.h", "#include \"once.h\"\n#include \"kernel_config.h\"\n#include \"../common/e.h\"\n");
  write("include/lib/once.h", "#pragma once\n__device__ int defined_once;\n#define ONCE_VALUE 1.0f\n");
  write("include/lib/kernel_config.h", "#define LIB_CONFIG 10\n");
  write("include/common/e.h", "#define E_VALUE 100\n");
  write("shared/d.h", "#include \"d2.h\"\n#define D_VALUE 1000\n");
  write("shared/d2.h", "#define D2_VALUE 2000\n");

  const Result<ResolvedHeaders> resolved = resolve("src/main.cu", {"include"});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  expect_daemon_accepts_every_directive(*resolved);

  std::vector<const char*> names;
  std::vector<const char*> contents;
  for (const auto& [name, content] : resolved->headers) {
    names.push_back(name.c_str());
    contents.push_back(content.c_str());
  }
  nvrtcProgram program = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&program, resolved->source.c_str(), "main.cu", static_cast<int>(names.size()),
                               contents.data(), names.data()),
            NVRTC_SUCCESS);
  // Toolkit headers come from the toolkit, as on the daemon; nothing is read
  // next to the program.
  const std::string toolkit = std::string("-I") + KJIT_TEST_CUDA_INCLUDE_DIR;
  const std::string cccl = toolkit + "/cccl";
  const char* options[] = {"--no-source-include", toolkit.c_str(), cccl.c_str()};
  const nvrtcResult compiled = nvrtcCompileProgram(program, 3, options);
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(program, log.data());
  nvrtcDestroyProgram(&program);
  EXPECT_EQ(compiled, NVRTC_SUCCESS) << log;
}

#endif  // KJIT_TEST_NVRTC

}  // namespace
}  // namespace kjit
