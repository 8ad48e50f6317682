#include "backends/amdgpu/amdgpu_codegen.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/TargetParser.h>
#include <llvm/TargetParser/Triple.h>

#include <memory>

#include "backends/llvm/llvm_module.h"

namespace kjit {
namespace {

std::string first_line(std::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

Result<std::unique_ptr<llvm::Module>> parse_module(llvm::LLVMContext& context, std::string_view ir,
                                                   std::string_view name) {
  llvm::SMDiagnostic diagnostic;
  auto buffer =
      llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(ir.data(), ir.size()), llvm::StringRef(name.data(), name.size()),
                                       /*RequiresNullTerminator=*/false);
  std::unique_ptr<llvm::Module> module = llvm::parseIR(buffer->getMemBufferRef(), diagnostic, context);
  if (!module) {
    std::string log;
    llvm::raw_string_ostream out(log);
    diagnostic.print(std::string(name).c_str(), out, /*ShowColors=*/false);
    std::string where = diagnostic.getLineNo() > 0 ? std::to_string(diagnostic.getLineNo()) + ":" +
                                                         std::to_string(diagnostic.getColumnNo() + 1) + ": "
                                                   : "";
    return make_error(ErrorCode::invalid_argument,
                      "LLVM could not parse " + std::string(name) + ": " + where + diagnostic.getMessage().str(),
                      out.str());
  }
  std::string log;
  llvm::raw_string_ostream out(log);
  if (llvm::verifyModule(*module, &out)) {
    return make_error(ErrorCode::invalid_argument,
                      "LLVM IR in " + std::string(name) + " is not valid: " + first_line(out.str()), out.str());
  }
  return module;
}

// A module names amdgcn with the HSA OS, or no OS, or nothing at all: the
// code object is for the ROCm runtime either way.
Status set_triple(llvm::Module& module, std::string_view name) {
  const std::string& named = module.getTargetTriple();
  if (!named.empty()) {
    llvm::Triple given(llvm::Triple::normalize(named));
    const std::string in = "LLVM IR in " + std::string(name) + " targets '" + named + "', ";
    if (given.getArch() != llvm::Triple::amdgcn) {
      return make_error(ErrorCode::invalid_argument,
                        in + "not AMDGPU: send IR for " + std::string(k_amdgpu_triple) + " (or no triple)");
    }
    if (given.getOS() != llvm::Triple::AMDHSA && given.getOS() != llvm::Triple::UnknownOS) {
      return make_error(ErrorCode::invalid_argument, in + "whose OS '" + given.getOSName().str() +
                                                         "' is not amdhsa, the ROCm runtime's: send IR for " +
                                                         std::string(k_amdgpu_triple));
    }
  }
  module.setTargetTriple(k_amdgpu_triple);
  return Ok{};
}

// A function attribute "target-cpu" wins over the target machine's processor:
// IR written for another processor would put its code in this one's code
// object, which the GPU then cannot run.
Status check_function_processors(const llvm::Module& module, std::string_view name, std::string_view processor) {
  for (const llvm::Function& function : module) {
    llvm::Attribute cpu = function.getFnAttribute("target-cpu");
    if (!cpu.isValid() || cpu.getValueAsString() == llvm::StringRef(processor.data(), processor.size())) continue;
    return make_error(ErrorCode::invalid_argument,
                      "LLVM IR in " + std::string(name) + ": function '" + function.getName().str() +
                          "' is written for " + cpu.getValueAsString().str() + " (\"target-cpu\"), not the target's " +
                          std::string(processor) + "; send IR for " + std::string(processor) +
                          " or without target-cpu attributes");
  }
  return Ok{};
}

}  // namespace

Result<std::string> amdgpu_codegen(const AmdgpuCodegenRequest& request) {
  const uint32_t version = request.code_object_version;
  if (version < 4 || version > 6) {
    return make_error(ErrorCode::invalid_argument, "AMDGPU code object version " + std::to_string(version) +
                                                       " is not one LLVM " + llvm_version() +
                                                       " writes: it writes versions 4, 5 and 6");
  }
  // Checked before a target machine exists: LLVM only warns on stderr about
  // an unknown processor and compiles for a generic one.
  if (llvm::AMDGPU::parseArchAMDGCN(request.processor) == llvm::AMDGPU::GK_NONE) {
    return make_error(ErrorCode::invalid_argument, "'" + request.processor + "' is not a recognized processor for " +
                                                       std::string(k_amdgpu_triple) + " in LLVM " + llvm_version());
  }

  std::string object;
  Status status = run_llvm_guarded(
      "amdgpu-codegen",
      [&]() -> Status {
        llvm::LLVMContext context;
        LlvmDiagnostics diagnostics(context);
        auto module = parse_module(context, request.ir, request.name);
        if (!module) return module.error();
        if (Status s = set_triple(**module, request.name); !s) return s;
        if (Status s = check_function_processors(**module, request.name, request.processor); !s) return s;

        auto machine =
            make_target_machine(LlvmTarget{std::string(k_amdgpu_triple), request.processor, request.features});
        if (!machine) return machine.error();
        (*module)->setDataLayout((*machine)->createDataLayout());
        (*module)->setModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", version * 100);

        llvm::SmallString<0> buffer;
        llvm::raw_svector_ostream out(buffer);
        llvm::legacy::PassManager passes;
        if ((*machine)->addPassesToEmitFile(passes, out, nullptr, llvm::CodeGenFileType::ObjectFile)) {
          return make_error(ErrorCode::internal,
                            "LLVM's AMDGPU back end cannot emit an object for " + request.processor);
        }
        passes.run(**module);
        if (diagnostics.has_errors()) {
          return make_error(ErrorCode::invalid_argument,
                            "amdgpu-codegen for " + request.processor + ": " + first_line(diagnostics.log()),
                            diagnostics.log());
        }
        object.assign(buffer.data(), buffer.size());
        return Ok{};
      },
      request.ir);
  if (!status) return status.error();
  return object;
}

}  // namespace kjit
