// Reading LLVM IR (text or bitcode) into a module, with LLVM's diagnostics
// collected, and running LLVM code so that a fatal error or crash inside it
// becomes an error value instead of the end of the daemon.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kjit/status.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}  // namespace llvm

namespace kjit {

// What to give LLVM for one target (from the target table).
struct LlvmTarget {
  std::string triple = "nvptx64-nvidia-cuda";
  std::string cpu;       // "sm_90"
  std::string features;  // "+ptx85"
};

// Collects warnings and errors LLVM reports through the context; warnings
// count as errors (llc exits 0 on an unknown processor and writes bad PTX).
class LlvmDiagnostics {
 public:
  explicit LlvmDiagnostics(llvm::LLVMContext& context);
  bool has_errors() const { return !log_.empty(); }
  const std::string& log() const { return log_; }
  void add(std::string message) { log_ += message + "\n"; }

 private:
  std::string log_;
};

// Parses text or bitcode (detected by magic); the module must target `triple`.
Result<std::unique_ptr<llvm::Module>> parse_llvm_module(llvm::LLVMContext& context, std::string_view bytes,
                                                         std::string_view name, const std::string& triple);

// An NVPTX target machine for the target; an unknown CPU or feature is an
// error, not LLVM's "ignoring processor" warning.
Result<std::unique_ptr<llvm::TargetMachine>> make_target_machine(const LlvmTarget& target);

std::string write_bitcode(const llvm::Module& module);

// Runs `body` under LLVM's crash recovery: report_fatal_error or a crash in
// LLVM returns an internal error naming `what`.
Status run_llvm_guarded(std::string_view what, const std::function<Status()>& body);

// LLVM's version, "19.1.7".
std::string llvm_version();

}  // namespace kjit
