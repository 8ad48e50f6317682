// KernelInfo from PTX text, for targets whose cubin the installed toolkit
// cannot build (sm_107 with CUDA 13.0): per .entry its launch bounds,
// required block, register cap, cluster shape, parameter block size and an
// estimate of its static shared memory. A plan built on it says so.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"
#include "kjit/types.h"

namespace kjit {

struct PtxKernel {
  // Read from the entry's directives and declarations:
  //   max_threads_per_block  volume of .maxntid
  //   required_threads       .reqntid (missing y, z = 1)
  //   cluster_dims           .reqnctapercluster (missing y, z = 1)
  //   max_registers          .maxnreg
  //   param_bytes            the .param list, each at a multiple of its alignment
  //   static_shared_bytes    see read_ptx
  //   shared_section_bytes   static_shared_bytes + 1 KiB on sm_90 and newer,
  //                          as the cubin's .nv.shared.<kernel> section would be
  // registers and local_bytes are 0: only ptxas knows them.
  KernelInfo info;
  bool explicit_cluster = false;   // .explicitcluster: must be launched as clusters
  uint32_t max_cluster_rank = 0;   // .maxclusterrank
  uint32_t min_blocks_per_sm = 0;  // .minnctapersm
};

struct PtxModule {
  std::string version;  // "9.0" from .version
  std::string target;   // "sm_90a" from .target
  uint32_t sm = 0;      // 90
  uint32_t address_size = 0;
  bool declares_dynamic_shared = false;  // an .extern .shared array (dynamic shared memory)
  std::vector<PtxKernel> kernels;        // one per .entry with a body, in file order

  // By lowered (PTX) name or source name; nullptr when absent.
  const PtxKernel* find(std::string_view name) const;
};

// Parses PTX. Static shared memory per entry is laid out the way ptxas 13.0
// was seen to do it: the .shared variables declared inside the entry (and in
// the .func bodies it calls) in declaration order, then the module-scope
// .shared variables that the entry or those functions name, in declaration
// order, each at a multiple of its alignment (.align, else its element size);
// when the module declares an .extern .shared array, a non-zero total is
// rounded up to 16 bytes, where dynamic shared memory starts. ptxas may pack
// variables of mixed alignment tighter, so the figure can exceed ptxas's.
// Input without .version and .target, or whose declarations do not parse, is
// invalid_argument naming the line.
Result<PtxModule> read_ptx(std::string_view text);

}  // namespace kjit
