// Triton builds' descriptions kept across daemon starts. Describing the
// builds costs seconds of CPU each (importing Triton, a probe compile per
// target, the ptxas loans), at every start of every daemon; a build that did
// not change describes itself the same way again. A record holds what one
// discovery found for one list of candidates, with a fingerprint of what
// the descriptions were made of: the files and directory trees each
// description names as its inputs (the interpreter, its site-packages and
// the programs it runs), the worker script and kjitd itself. A record is
// used only while that fingerprint is unchanged: any file changed, added or
// removed there, and the builds are described again.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/triton/triton_build.h"

namespace kjit {

// The fingerprint of what these descriptions were made of, as the files are
// now; nothing when a description names no inputs or they cannot be read
// (a build that cannot be fingerprinted is described at every start).
std::optional<std::string> triton_descriptions_fingerprint(const std::vector<TritonBuild>& builds);

// The builds a record in `directory` holds for `candidates`, when its
// fingerprint still holds; nothing otherwise (no record, another kjitd's
// format, anything changed).
std::optional<std::vector<TritonBuild>> recall_triton_builds(const std::string& directory,
                                                             const std::vector<std::string>& candidates);

// Writes the record (atomically: daemons sharing the directory read a whole
// one or none). A failure to write is logged; the daemon goes on.
void remember_triton_builds(const std::string& directory, const std::vector<std::string>& candidates,
                            const std::vector<TritonBuild>& builds);

}  // namespace kjit
