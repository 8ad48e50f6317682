#include "backends/llvm/nvptx_codegen.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

namespace kjit {

Result<std::string> nvptx_codegen(std::string_view ir, std::string_view name, const LlvmTarget& target) {
  std::string ptx;
  Status status = run_llvm_guarded("nvptx-codegen", [&]() -> Status {
    llvm::LLVMContext context;
    LlvmDiagnostics diagnostics(context);
    auto module = parse_llvm_module(context, ir, name, target.triple);
    if (!module) return module.error();
    auto machine = make_target_machine(target);
    if (!machine) return machine.error();
    (*module)->setDataLayout((*machine)->createDataLayout());

    llvm::SmallString<0> buffer;
    llvm::raw_svector_ostream out(buffer);
    llvm::legacy::PassManager passes;
    if ((*machine)->addPassesToEmitFile(passes, out, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
      return make_error(ErrorCode::internal, "LLVM's NVPTX back end cannot emit PTX for " + target.cpu);
    }
    passes.run(**module);
    if (diagnostics.has_errors()) {
      return make_error(ErrorCode::invalid_argument, "nvptx-codegen reported problems", diagnostics.log());
    }
    ptx.assign(buffer.begin(), buffer.end());
    return Ok{};
  });
  if (!status) return status.error();
  return ptx;
}

}  // namespace kjit
