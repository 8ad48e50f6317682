#include "backends/llvm/nvptx_codegen.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "backends/llvm/nvvm_annotations.h"

namespace kjit {
namespace {

// 90 for "sm_90a".
uint32_t sm_of(std::string_view cpu) {
  uint32_t sm = 0;
  for (char c : cpu.substr(cpu.find('_') + 1)) {
    if (c < '0' || c > '9') break;
    sm = sm * 10 + static_cast<uint32_t>(c - '0');
  }
  return sm;
}

}  // namespace

Result<std::string> nvptx_codegen(std::string_view ir, std::string_view name, const LlvmTarget& target) {
  std::string ptx;
  Status status = with_parsed_module(
      "nvptx-codegen", ir, name, target, [&](ParsedModule& parsed, LlvmDiagnostics& diagnostics) -> Status {
        llvm::Module& module = *parsed.module;

        auto kernels = read_nvvm_kernels(module);
        if (!kernels) return kernels.error();
        for (const NvvmKernel& kernel : *kernels) {
          if (kernel.has_cluster_dim && sm_of(target.cpu) < 90) {
            return make_error(ErrorCode::invalid_argument, "kernel " + kernel.name +
                                                               " asks for thread block clusters (cluster_dim), which " +
                                                               target.cpu + " lacks: clusters need sm_90 or newer");
          }
        }
        annotate_kernels(module, *kernels);

        llvm::SmallString<0> buffer;
        llvm::raw_svector_ostream out(buffer);
        llvm::legacy::PassManager passes;
        if (parsed.machine->addPassesToEmitFile(passes, out, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
          return make_error(ErrorCode::internal, "LLVM's NVPTX back end cannot emit PTX for " + target.cpu);
        }
        passes.run(module);
        if (diagnostics.has_errors()) {
          return make_error(ErrorCode::invalid_argument, "nvptx-codegen reported problems", diagnostics.log());
        }
        // LLVM 19 writes no cluster shape.
        ptx = add_cluster_directives(std::string_view(buffer.data(), buffer.size()), *kernels);
        return Ok{};
      });
  if (!status) return status.error();
  return ptx;
}

}  // namespace kjit
