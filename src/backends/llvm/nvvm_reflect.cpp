#include "backends/llvm/nvvm_reflect.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>

#include "backends/llvm/module_pass_runner.h"

namespace kjit {

Result<std::string> run_nvvm_reflect(const NvvmReflectRequest& request) {
  // Most modules neither reflect nor ask for -ftz: a scan, not a parse
  // (bitcode keeps symbol names as plain bytes).
  if (!request.ftz && request.ir.find("__nvvm_reflect") == std::string_view::npos) return std::string(request.ir);
  std::string bitcode;
  Status status = with_parsed_module(
      "nvvm-reflect", request.ir, request.name, request.target,
      [&](ParsedModule& parsed, LlvmDiagnostics& diagnostics) -> Status {
        llvm::Module& module = *parsed.module;
        if (request.ftz) {
          module.setModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz",
                               llvm::ConstantInt::get(llvm::Type::getInt32Ty(module.getContext()), *request.ftz ? 1 : 0));
          // What the NVPTX back end reads to pick .ftz instructions.
          const char* mode = *request.ftz ? "preserve-sign,preserve-sign" : "ieee,ieee";
          for (llvm::Function& function : module)
            if (!function.isDeclaration()) function.addFnAttr("denormal-fp-math-f32", mode);
        }

        // LLVM 19 keeps NVVMReflectPass out of its public headers, and the
        // pass its registry names "nvvm-reflect" takes sm_0. The NVPTX target
        // adds the pass, with the target's SM, at the start of every default
        // pipeline: run just that extension point.
        ModulePassRunner runner(parsed.machine.get());
        llvm::ModulePassManager passes;
        runner.builder().invokePipelineStartEPCallbacks(passes, llvm::OptimizationLevel::O3);
        runner.run(passes, module);
        if (diagnostics.has_errors())
          return make_error(ErrorCode::invalid_argument, "nvvm-reflect reported problems", diagnostics.log());
        bitcode = write_bitcode(module);
        return Ok{};
      });
  if (!status) return status.error();
  return bitcode;
}

}  // namespace kjit
