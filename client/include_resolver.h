// Client-side resolution of `-I` for `kjit compile`: finds the files a CUDA
// source includes and names them so that NVRTC, given them as in-memory
// headers on the daemon, matches every #include to the right file.
//
// How NVRTC 13.0 matches in-memory headers (checked against libnvrtc; see the
// NvrtcAcceptsResolvedHeaders test): an #include matches a header whose name is
// exactly the text between the delimiters, for "quoted" and <angled> alike.
// Nothing is normalised or joined: inside a header named "a/b.h",
// `#include "c.h"` looks up "c.h" (not "a/c.h"), "./c.h" differs from "c.h",
// `-I` options and the program name play no part, and `#include "../d.h"`
// matches only a header named "../d.h". Two headers with the same name make
// nvrtcCreateProgram fail (NVRTC_ERROR_INVALID_INPUT), and `#pragma once` is
// keyed by that name, so one file sent under two names is included twice.
//
// So the resolver gives every file exactly one name and rewrites the include
// directives that spell it differently (only the text between the delimiters,
// so line numbers stay). A file is named by how it is first spelled when that
// spelling is usable; otherwise (the spelling is absolute, has a "..", "." or
// empty segment, or already names another file) by its path under the source's
// directory or an -I directory, with ".." segments written "__up__" for files
// outside all of them. No name and no rewritten directive ever contains ".."
// or starts with "/", which the daemon refuses.
//
// Conditional compilation is not evaluated: an include under any #if branch is
// followed and sent when found. Sending a header that ends up unused is
// harmless, and evaluating #if would need the daemon's macros. Directives are
// found by the include lexer the daemon's policy uses (source/include_lexer.h),
// so both read a text the same way. `__has_include("name")` is followed like
// an #include, so that the probe finds on the daemon what it finds here.
// Computed includes (`#include MACRO`), #include_next and #import are not
// followed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"
#include "source/include_lexer.h"

namespace kjit {

struct ResolvedHeaders {
  // Include name as NVRTC must see it -> file content (with its include
  // directives rewritten to these names where needed).
  std::map<std::string, std::string> headers;
  // The main source with the same rewriting. Send this, not the original: it
  // differs only where a directive had to be renamed (see the file comment).
  std::string source;
  // Things the user may want to know: one include name meaning two files, a
  // computed include that is not followed, a missing or skipped -I directory.
  std::vector<std::string> warnings;
};

// Bounds on what one resolution reads, so a stray `-I /` cannot read the disk.
struct ResolveLimits {
  std::size_t max_files = 4096;                             // headers, the source excluded
  std::uint64_t max_total_bytes = std::uint64_t{64} << 20;  // their total size
};

// Follows the includes of `source` transitively and returns every file found.
// Lookup is the one C compilers use: "quoted" names in the including file's
// directory first (the main file's is source_path's), then in include_dirs in
// order; <angled> names in include_dirs only; absolute names as they are. A
// name found nowhere is left to the daemon (toolkit headers such as
// cuda_fp16.h or cuda/std/...), which is not an error. An include directory
// that is a CUDA toolkit's include directory is skipped with a warning: the
// daemon compiles against its own toolkit's headers. Each file is read once,
// so include cycles are fine.
// Errors: invalid_argument when a found file cannot be read;
// resource_exhausted past `limits`.
Result<ResolvedHeaders> resolve_includes(const std::filesystem::path& source_path, std::string_view source,
                                         const std::vector<std::filesystem::path>& include_dirs,
                                         const ResolveLimits& limits);
Result<ResolvedHeaders> resolve_includes(const std::filesystem::path& source_path, std::string_view source,
                                         const std::vector<std::filesystem::path>& include_dirs);

}  // namespace kjit
