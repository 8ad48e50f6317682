// Which headers a CUDA C++ compile parses before its own code, as one
// digest. Automatic precompiled headers (src/backends/nvrtc/nvrtc_pch.h) are
// kept per header set, and a compile worker writes one only for a set it
// has compiled before; the daemon steers a compile to the worker that last
// compiled its set. Both spell the set with this function, from what each
// knows: the pass from the options NVRTC gets, the daemon from the
// request's. Nothing's correctness depends on two spellings agreeing: NVRTC
// checks every PCH it uses.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

// The preprocessor directives a source starts with (#include, #define,
// #pragma ...), one a line, in order: what NVRTC's automatic PCH parses
// before the source's first line of code (its "header stop"). Blank lines
// and comments between them are skipped.
std::string leading_directives(std::string_view source);

// Whether `directives` (leading_directives) include a header: a source
// that includes nothing before its code has nothing worth a PCH, and
// writing one (NVRTC's own builtins) would only slow its first compile.
bool includes_a_header(std::string_view directives);

// A digest (64 hex digits) of a compiler's identity (`toolchain`: whatever
// names the compiler and what it is configured with), its options, the
// headers given with the request (names and contents: NVRTC does not check
// a given header's text against a PCH) and `directives` (leading_directives
// of the source, or empty for every source at once).
// With request headers, `ns` too: the caller's compile namespace (its
// tenant's; empty for the default one). A PCH of one tenant's own headers
// then never serves another tenant, even one that sends the same bytes,
// whose compile would otherwise run faster and tell it that someone else
// sent them. Without request headers the set is the toolkit's headers
// alone, which every tenant may share, and `ns` is left out.
std::string header_set_digest(std::string_view toolchain, const std::vector<std::string>& options,
                              const std::map<std::string, std::string>& headers, std::string_view directives,
                              std::string_view ns);

}  // namespace kjit
