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

// The triple every module is compiled for: what the CUDA driver loads.
inline constexpr const char* k_cuda_triple = "nvptx64-nvidia-cuda";

// What to give LLVM for one target (from the target table).
struct LlvmTarget {
  std::string triple = k_cuda_triple;
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

// The triple a module is compiled for, given the one it names. Front ends
// spell CUDA's several ways (clang --target=nvptx64 writes
// "nvptx64-unknown-unknown"): any nvptx64 triple whose OS is cuda or unknown
// is `triple`, as is no triple at all. 32-bit nvptx, OpenCL's nvcl and other
// architectures are invalid_argument saying why and what to send instead.
Result<std::string> normalize_module_triple(std::string_view module_triple, std::string_view name,
                                            const std::string& triple);

// The LLVM that wrote `bytes`, when it says: a bitcode identification block's
// producer ("LLVM21.1.0"), or in text a "clang version 21.1.0" (llvm.ident,
// a compile unit's producer). Empty when it does not say.
std::string llvm_producer(std::string_view bytes);
// The major version in a producer string, 0 when there is none.
unsigned producer_major_version(std::string_view producer);

// Parses text or bitcode (detected by magic) and verifies it. The triple is
// normalised to `triple`; calls to llvm.* functions LLVM does not know as
// intrinsics are refused by name. Input a newer LLVM wrote that does not
// parse says so, naming both versions.
Result<std::unique_ptr<llvm::Module>> parse_llvm_module(llvm::LLVMContext& context, std::string_view bytes,
                                                        std::string_view name, const std::string& triple);

// Parses `bytes` for `target` and sets the target's data layout: what every
// LLVM pass does first.
struct ParsedModule {
  ParsedModule();
  ParsedModule(ParsedModule&&) noexcept;
  ParsedModule& operator=(ParsedModule&&) noexcept;
  ~ParsedModule();  // where TargetMachine is complete
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> machine;
};
Result<ParsedModule> parse_for_target(llvm::LLVMContext& context, std::string_view bytes, std::string_view name,
                                      const LlvmTarget& target);

// An NVPTX target machine for the target; an unknown CPU or feature is an
// error, not LLVM's "ignoring processor" warning.
Result<std::unique_ptr<llvm::TargetMachine>> make_target_machine(const LlvmTarget& target);

std::string write_bitcode(const llvm::Module& module);

// Runs `body` under LLVM's crash recovery. A fatal error the back end raises
// for what the input asks of the target ("Cannot select: intrinsic ...",
// "... not supported") is invalid_argument; other fatal errors and crashes
// are internal, naming `what`, except on input a newer LLVM wrote, which is
// invalid_argument naming both versions. `input` is the IR being compiled.
Status run_llvm_guarded(std::string_view what, const std::function<Status()>& body, std::string_view input = {});

// How every LLVM step starts: under run_llvm_guarded, a fresh context whose
// diagnostics are collected, `ir` parsed for `target`; then `body` on the
// parsed module.
Status with_parsed_module(std::string_view what, std::string_view ir, std::string_view name, const LlvmTarget& target,
                          const std::function<Status(ParsedModule&, LlvmDiagnostics&)>& body);

// Whether a report_fatal_error reason is the input's doing (see above).
bool fatal_error_is_input_error(std::string_view reason);

// LLVM's version, "19.1.7".
std::string llvm_version();

}  // namespace kjit
