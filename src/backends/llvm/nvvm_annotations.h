// Kernels and their launch bounds, however a front end marks them: the
// ptx_kernel calling convention or the older !nvvm.annotations "kernel"
// entry; bounds as !nvvm.annotations entries (maxntidx, reqntidx, minctasm,
// maxnreg, maxclusterrank, cluster_dim_x, ...) or as the function attributes
// newer LLVMs write ("nvvm.maxntid"="128,1,1", "nvvm.cluster_dim", ...).
// LLVM 19 reads only the annotations and writes no cluster shape, so the
// code generator is given both: the attributes as annotations, and the
// cluster directives added to the PTX it writes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"

namespace llvm {
class Module;
}  // namespace llvm

namespace kjit {

struct NvvmKernel {
  std::string name;
  // 0 where not given; a missing y or z of a given shape is 1.
  std::array<uint32_t, 3> maxntid{};
  std::array<uint32_t, 3> reqntid{};
  std::array<uint32_t, 3> cluster_dim{};
  bool has_cluster_dim = false;  // cluster_dim given, possibly 0 (shape chosen at launch)
  uint32_t minctasm = 0;
  uint32_t maxnreg = 0;
  uint32_t maxclusterrank = 0;
};

// The module's kernels, in module order, with the bounds of both forms (an
// annotation wins over an attribute saying the same thing). A malformed
// attribute value is invalid_argument naming the function.
Result<std::vector<NvvmKernel>> read_nvvm_kernels(const llvm::Module& module);

// Adds the !nvvm.annotations entries LLVM 19 reads for what `kernels` has
// and the module's annotations lack.
void annotate_kernels(llvm::Module& module, const std::vector<NvvmKernel>& kernels);

// Adds .explicitcluster and .reqnctapercluster to the entries of `kernels`
// that have a cluster shape, where the PTX lacks them.
std::string add_cluster_directives(std::string_view ptx, const std::vector<NvvmKernel>& kernels);

}  // namespace kjit
