// What a compile produces: the binary, what it contains, and how it was made.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kjit/types.h"

namespace kjit {

struct Artifact {
  ArtifactKind kind = ArtifactKind::cubin;
  std::string bytes;
  std::string target;                              // canonical target, "cuda:90"
  std::vector<KernelInfo> kernels;                 // read from the binary itself
  std::map<std::string, std::string> lowered_names;  // name expression -> symbol
  std::vector<StageTiming> timings;                // one per stage that ran, with its passes
  std::string log;                                 // every stage's log, in order
  std::string key;                                 // cache key, hex SHA-256
  std::vector<KeyComponent> key_components;        // what the key was derived from
  std::string pipeline;                            // the effective pipeline's name
  std::vector<std::string> notes;                  // e.g. "PTX returned: toolkit 13.0 cannot build sm_107"
  // Triton input: the kernel's metadata as Triton writes it (JSON), and the
  // Triton build that compiled it ("triton-3.9.0").
  std::string triton_metadata;
  std::string triton_build;
  // Triton's intermediate files of the compile, by extension ("ttir",
  // "ttgir", "llir", "ptx", "amdgcn"): what Triton keeps beside the binary,
  // so that a Triton process handed the kernel has the files its own compile
  // would have written.
  std::map<std::string, std::string> triton_files;
  std::string toolkit;  // what built it: the CUDA toolkit, "13.5 (local: /path)"; for hip: "HIPRTC 5.2.21153 (...)" or "LLVM 19.1.7 + lld"
};

}  // namespace kjit
