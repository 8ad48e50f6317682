// The header set of a CUDA C++ compile: what the workers' precompiled
// headers are kept by and the daemon steers compiles with. Sources that
// differ only below their leading directives are one set; a directive, an
// option or a request header's text makes another, and so does the caller's
// namespace when the request has headers of its own.
#include <gtest/gtest.h>

#include "backends/nvrtc/nvrtc_pch.h"
#include "pipeline/header_set.h"

namespace kjit {
namespace {

TEST(HeaderSet, LeadingDirectivesStopAtTheFirstLineOfCode) {
  const std::string source =
      "/* licence\n   text */\n"
      "// a comment\n"
      "#include <cub/block/block_reduce.cuh>\n"
      "\n"
      "  #define WIDTH \\\n    128\n"
      "#include \"params.h\"\n"
      "__global__ void k() {}\n"
      "#include <late.h>\n";
  EXPECT_EQ(leading_directives(source),
            "#include <cub/block/block_reduce.cuh>\n#define WIDTH \\\n    128\n#include \"params.h\"\n");
  EXPECT_EQ(leading_directives("__global__ void k() {}\n#include <x.h>\n"), "");
  EXPECT_EQ(leading_directives("#include <a.h>\r\nint x;\r\n"), "#include <a.h>\n");
}

TEST(HeaderSet, OnlyWhatIsParsedBeforeTheCodeMakesAnotherSet) {
  const std::vector<std::string> options{"-std=c++17"};
  const std::map<std::string, std::string> headers{{"params.h", "#define P 1\n"}};
  auto digest = [](std::string_view source, const std::vector<std::string>& o,
                   const std::map<std::string, std::string>& h) {
    return header_set_digest("nvrtc 13.0", o, h, leading_directives(source), "");
  };
  const std::string a = digest("#include <cub/cub.cuh>\n__global__ void k1() {}\n", options, headers);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, digest("#include <cub/cub.cuh>\n// other\n__global__ void k2(int) {}\n", options, headers));
  EXPECT_NE(a, digest("#include <cuda/std/array>\n__global__ void k1() {}\n", options, headers));
  EXPECT_NE(a, digest("#include <cub/cub.cuh>\n__global__ void k1() {}\n", {"-std=c++20"}, headers));
  EXPECT_NE(a, digest("#include <cub/cub.cuh>\n__global__ void k1() {}\n", options, {{"params.h", "#define P 2\n"}}));
  EXPECT_NE(a, header_set_digest("nvrtc 12.8", options, headers, leading_directives("#include <cub/cub.cuh>\n"), ""));
}

// A PCH of a tenant's own headers serves only that tenant: two tenants
// sending the same bytes are two sets. Sets of toolkit headers alone are
// one for everyone.
TEST(HeaderSet, TheCallersNamespaceMakesAnotherSetOnlyWithRequestHeaders) {
  const std::vector<std::string> options{"-std=c++17"};
  const std::string directives = leading_directives("#include <cub/cub.cuh>\n#include \"params.h\"\nint x;\n");
  const std::map<std::string, std::string> headers{{"params.h", "#define P 1\n"}};
  auto digest = [&](const std::map<std::string, std::string>& h, std::string_view ns, std::string_view d) {
    return header_set_digest("nvrtc 13.0", options, h, d, ns);
  };
  for (const std::string& d : {directives, std::string()}) {  // the set, and its PCH directory
    SCOPED_TRACE(d);
    EXPECT_NE(digest(headers, "team-a", d), digest(headers, "team-b", d));
    EXPECT_NE(digest(headers, "team-a", d), digest(headers, "", d));
    EXPECT_EQ(digest(headers, "team-a", d), digest(headers, "team-a", d));
    EXPECT_EQ(digest({}, "team-a", d), digest({}, "team-b", d));
    EXPECT_EQ(digest({}, "team-a", d), digest({}, "", d));
    // Length-prefixed: a namespace's name never reads as more directives.
    EXPECT_NE(digest(headers, "b", d + "a"), digest(headers, "ab", d));
  }
}

// Only a source that includes a header before its code is worth a PCH.
TEST(HeaderSet, ASourceIncludingNothingUpFrontWantsNoPch) {
  EXPECT_TRUE(includes_a_header(leading_directives("#include <cub/cub.cuh>\n__global__ void k() {}\n")));
  EXPECT_TRUE(includes_a_header(leading_directives("#define N 4\n#  include \"params.h\"\nint x;\n")));
  EXPECT_FALSE(includes_a_header(leading_directives("__global__ void k() {}\n#include <cuda_fp16.h>\n")));
  EXPECT_FALSE(includes_a_header(leading_directives("#define INCLUDE_ME 1\n#pragma once\nint x;\n")));
  EXPECT_FALSE(includes_a_header(leading_directives("#define LONG \\\n  include\nint x;\n")));
  EXPECT_FALSE(includes_a_header(""));
}

// A header set counts as a first once per process, however often it comes.
TEST(HeaderSet, EachSetCountsAsAFirstOnce) {
  const uint64_t firsts = nvrtc_pch_counts().firsts;
  note_header_set("set-a");
  note_header_set("set-a");
  note_header_set("set-a");
  note_header_set("set-b");
  EXPECT_EQ(nvrtc_pch_counts().firsts, firsts + 2);
}

}  // namespace
}  // namespace kjit
