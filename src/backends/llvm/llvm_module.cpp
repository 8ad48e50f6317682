#include "backends/llvm/llvm_module.h"

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include <mutex>

namespace kjit {
namespace {

// The reason of the last report_fatal_error on this thread, so a recovered
// fatal error reaches the request in LLVM's own words ("Cannot select: ...").
thread_local std::string t_fatal_reason;

void remember_fatal_error(void*, const char* reason, bool) {
  t_fatal_reason = reason;
  llvm::errs() << "LLVM ERROR: " << reason << "\n";  // what LLVM prints without a handler
}

void initialize_llvm_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    // Lets RunSafely turn crashes and report_fatal_error into a return.
    llvm::CrashRecoveryContext::Enable();
    llvm::install_fatal_error_handler(remember_fatal_error);
  });
}

void handle_diagnostic(const llvm::DiagnosticInfo* diagnostic, void* context) {
  const llvm::DiagnosticInfo& info = *diagnostic;
  auto* diagnostics = static_cast<LlvmDiagnostics*>(context);
  if (info.getSeverity() == llvm::DS_Remark || info.getSeverity() == llvm::DS_Note) return;
  std::string text;
  llvm::raw_string_ostream out(text);
  llvm::DiagnosticPrinterRawOStream printer(out);
  info.print(printer);
  diagnostics->add(std::string(info.getSeverity() == llvm::DS_Error ? "error: " : "warning: ") + out.str());
}

}  // namespace

LlvmDiagnostics::LlvmDiagnostics(llvm::LLVMContext& context) {
  context.setDiagnosticHandlerCallBack(handle_diagnostic, this);
}

Result<std::unique_ptr<llvm::Module>> parse_llvm_module(llvm::LLVMContext& context, std::string_view bytes,
                                                         std::string_view name, const std::string& triple) {
  initialize_llvm_once();
  llvm::SMDiagnostic diagnostic;
  auto buffer = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(bytes.data(), bytes.size()),
                                                 llvm::StringRef(name.data(), name.size()),
                                                 /*RequiresNullTerminator=*/false);
  std::unique_ptr<llvm::Module> module = llvm::parseIR(buffer->getMemBufferRef(), diagnostic, context);
  if (!module) {
    std::string log;
    llvm::raw_string_ostream out(log);
    diagnostic.print(std::string(name).c_str(), out, /*ShowColors=*/false);
    return make_error(ErrorCode::invalid_argument, "LLVM could not parse " + std::string(name), out.str());
  }
  std::string verify_log;
  llvm::raw_string_ostream verify_out(verify_log);
  if (llvm::verifyModule(*module, &verify_out)) {
    return make_error(ErrorCode::invalid_argument, "LLVM IR in " + std::string(name) + " is not valid", verify_out.str());
  }
  llvm::Triple module_triple(module->getTargetTriple());
  llvm::Triple wanted(triple);
  if (module->getTargetTriple().empty()) {
    module->setTargetTriple(triple);
  } else if (module_triple.getArch() != wanted.getArch() || module_triple.getOS() != wanted.getOS()) {
    return make_error(ErrorCode::invalid_argument, "LLVM IR in " + std::string(name) + " targets '" +
                                                       module->getTargetTriple() + "', not '" + triple + "'");
  }
  return module;
}

Result<std::unique_ptr<llvm::TargetMachine>> make_target_machine(const LlvmTarget& target) {
  initialize_llvm_once();
  std::string error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!llvm_target) return make_error(ErrorCode::internal, "LLVM has no target for " + target.triple + ": " + error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(llvm_target->createTargetMachine(
      target.triple, target.cpu, target.features, options, std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine) return make_error(ErrorCode::internal, "LLVM could not create a target machine for " + target.cpu);
  const llvm::MCSubtargetInfo* subtarget = machine->getMCSubtargetInfo();
  if (!subtarget->isCPUStringValid(target.cpu)) {
    return make_error(ErrorCode::invalid_argument,
                      "LLVM " + llvm_version() + " does not know the processor " + target.cpu);
  }
  llvm::StringRef features(target.features);
  while (!features.empty()) {
    auto [feature, rest] = features.split(',');
    features = rest;
    llvm::StringRef bare = feature.ltrim("+-");
    bool known = false;
    for (const llvm::SubtargetFeatureKV& kv : subtarget->getAllProcessorFeatures())
      if (bare == kv.Key) known = true;
    if (!known) {
      return make_error(ErrorCode::invalid_argument,
                        "LLVM " + llvm_version() + " does not know the feature " + bare.str() + " for " + target.cpu);
    }
  }
  return machine;
}

std::string write_bitcode(const llvm::Module& module) {
  std::string bytes;
  llvm::raw_string_ostream out(bytes);
  llvm::WriteBitcodeToFile(module, out);
  out.flush();
  return bytes;
}

Status run_llvm_guarded(std::string_view what, const std::function<Status()>& body) {
  initialize_llvm_once();
  Status result = Ok{};
  t_fatal_reason.clear();
  llvm::CrashRecoveryContext context;
  bool completed = context.RunSafely([&] { result = body(); });
  if (!completed) {
    const std::string reason = t_fatal_reason.empty() ? std::string("a crash") : "LLVM ERROR: " + t_fatal_reason;
    return make_error(ErrorCode::internal,
                      "LLVM failed inside " + std::string(what) + ": " + reason +
                          " (recovered; the input may use what the target lacks, or trigger an LLVM bug)",
                      reason);
  }
  return result;
}

std::string llvm_version() { return LLVM_VERSION_STRING; }

}  // namespace kjit
