#include "backends/llvm/llvm_module.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Bitcode/LLVMBitCodes.h>
#include <llvm/Bitstream/BitstreamReader.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/Intrinsics.h>
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

#include <cctype>
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
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();  // inline asm in an object file
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

Result<std::string> normalize_module_triple(std::string_view module_triple, std::string_view name,
                                            const std::string& triple) {
  if (module_triple.empty()) return triple;
  llvm::Triple given(llvm::Triple::normalize(llvm::StringRef(module_triple.data(), module_triple.size())));
  const std::string in = "LLVM IR in " + std::string(name) + " targets '" + std::string(module_triple) + "'";
  auto refuse = [&](const std::string& why) { return make_error(ErrorCode::invalid_argument, in + ", " + why); };
  // An AMDGPU target takes modules for amdgcn under the HSA runtime or no OS.
  if (llvm::Triple(triple).getArch() == llvm::Triple::amdgcn) {
    if (given.getArch() == llvm::Triple::amdgcn &&
        (given.getOS() == llvm::Triple::AMDHSA || given.getOS() == llvm::Triple::UnknownOS))
      return triple;
    return refuse("not AMDGPU for the HSA runtime; send IR for " + triple + " (or no triple)");
  }
  if (given.getArch() == llvm::Triple::nvptx) {
    return refuse(
        "32-bit NVPTX: the CUDA driver of a 64-bit host loads only 64-bit device code, and libdevice is 64-bit; "
        "send IR for " +
        triple + " (clang --target=" + triple + ")");
  }
  if (given.getArch() != llvm::Triple::nvptx64) {
    return refuse("not NVPTX; kjit compiles LLVM IR for NVIDIA GPUs: send IR for " + triple +
                  " (or nvptx64-unknown-unknown, or no triple)");
  }
  if (given.getOS() == llvm::Triple::NVCL) {
    return refuse(
        "the OpenCL driver interface (nvcl), which lowers kernel parameters, images and samplers for "
        "OpenCL's runtime, not for the CUDA driver kjit builds for; send IR for " +
        triple);
  }
  if (given.getOS() != llvm::Triple::CUDA && given.getOS() != llvm::Triple::UnknownOS) {
    return refuse("whose OS '" + given.getOSName().str() + "' is not one NVPTX code runs under; send IR for " + triple +
                  " (or nvptx64-unknown-unknown)");
  }
  return triple;
}

namespace {

// The producer string of the identification block that starts `bytes`,
// read record by record: getBitcodeProducerString walks the whole stream,
// and a stream a newer LLVM wrote may not walk.
std::string bitcode_producer(std::string_view bytes) {
  const auto* begin = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto* end = begin + bytes.size();
  if (llvm::isBitcodeWrapper(begin, end) && llvm::SkipBitcodeWrapperHeader(begin, end, /*VerifyBufferSize=*/true))
    return {};
  llvm::BitstreamCursor cursor(llvm::ArrayRef<uint8_t>(begin, static_cast<size_t>(end - begin)));
  if (llvm::Error error = cursor.JumpToBit(32)) {  // past "BC" 0xC0DE
    llvm::consumeError(std::move(error));
    return {};
  }
  llvm::Expected<llvm::BitstreamEntry> entry = cursor.advance();
  if (!entry) {
    llvm::consumeError(entry.takeError());
    return {};
  }
  if (entry->Kind != llvm::BitstreamEntry::SubBlock || entry->ID != llvm::bitc::IDENTIFICATION_BLOCK_ID) return {};
  if (llvm::Error error = cursor.EnterSubBlock(llvm::bitc::IDENTIFICATION_BLOCK_ID)) {
    llvm::consumeError(std::move(error));
    return {};
  }
  llvm::SmallVector<uint64_t, 32> record;
  for (int records = 0; records < 16; ++records) {
    llvm::Expected<llvm::BitstreamEntry> next = cursor.advanceSkippingSubblocks();
    if (!next) {
      llvm::consumeError(next.takeError());
      return {};
    }
    if (next->Kind != llvm::BitstreamEntry::Record) return {};
    record.clear();
    llvm::Expected<unsigned> code = cursor.readRecord(next->ID, record);
    if (!code) {
      llvm::consumeError(code.takeError());
      return {};
    }
    if (*code == llvm::bitc::IDENTIFICATION_CODE_STRING) {
      std::string producer;
      for (uint64_t c : record) producer += static_cast<char>(c);
      return producer;
    }
  }
  return {};
}

}  // namespace

std::string llvm_producer(std::string_view bytes) {
  const auto* begin = reinterpret_cast<const unsigned char*>(bytes.data());
  if (llvm::isBitcode(begin, begin + bytes.size())) return bitcode_producer(bytes);
  // Text IR names its producer only in strings: llvm.ident, DICompileUnit.
  for (std::string_view marker : {"clang version ", "LLVM version ", "flang version "}) {
    size_t at = bytes.find(marker);
    if (at == std::string_view::npos) continue;
    size_t end = at + marker.size();
    while (end < bytes.size() && (std::isdigit(static_cast<unsigned char>(bytes[end])) || bytes[end] == '.')) ++end;
    if (end > at + marker.size()) return std::string(bytes.substr(at, end - at));
  }
  return {};
}

unsigned producer_major_version(std::string_view producer) {
  size_t at = producer.rfind("version ");
  if (at != std::string_view::npos) {
    at += 8;
  } else if ((at = producer.find("LLVM")) != std::string_view::npos) {
    at += 4;
    while (at < producer.size() && producer[at] == ' ') ++at;
  } else {
    return 0;
  }
  unsigned major = 0;
  bool any = false;
  for (; at < producer.size() && std::isdigit(static_cast<unsigned char>(producer[at])); ++at) {
    major = major * 10 + static_cast<unsigned>(producer[at] - '0');
    any = true;
    if (major > 10000) return 0;
  }
  return any ? major : 0;
}

namespace {

// "; it was written by LLVM 21.1.0, newer than kjit's LLVM 19.1.7, ..." when
// the input says a newer LLVM wrote it, else empty.
std::string newer_producer_note(std::string_view bytes) {
  std::string producer = llvm_producer(bytes);
  if (producer_major_version(producer) <= LLVM_VERSION_MAJOR) return {};
  if (producer.starts_with("LLVM") && producer.size() > 4 && producer[4] != ' ') producer.insert(4, " ");
  return "; it was written by " + producer + ", newer than kjit's LLVM " + llvm_version() +
         ", which reads IR of its own version and older: send IR written by LLVM " +
         std::to_string(LLVM_VERSION_MAJOR) + " or older, or the PTX your compiler emits";
}

}  // namespace

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
    return make_error(ErrorCode::invalid_argument,
                      "LLVM could not parse " + std::string(name) + newer_producer_note(bytes), out.str());
  }
  std::string verify_log;
  llvm::raw_string_ostream verify_out(verify_log);
  if (llvm::verifyModule(*module, &verify_out)) {
    return make_error(ErrorCode::invalid_argument,
                      "LLVM IR in " + std::string(name) + " is not valid" + newer_producer_note(bytes),
                      verify_out.str());
  }
  Result<std::string> normalized = normalize_module_triple(module->getTargetTriple(), name, triple);
  if (!normalized) return normalized.error();
  module->setTargetTriple(*normalized);

  // An llvm.* name LLVM does not know would reach the PTX as a plain call
  // and fail at link time under a mangled name.
  std::string unknown;
  for (const llvm::Function& function : *module) {
    if (function.getName().starts_with("llvm.") && function.getIntrinsicID() == llvm::Intrinsic::not_intrinsic)
      unknown += (unknown.empty() ? "" : ", ") + function.getName().str();
  }
  if (!unknown.empty()) {
    return make_error(ErrorCode::invalid_argument,
                      "LLVM IR in " + std::string(name) + " calls " + unknown + ", which LLVM " + llvm_version() +
                          " does not know as intrinsics (misspelled, or a newer LLVM's)" + newer_producer_note(bytes));
  }
  return module;
}

ParsedModule::ParsedModule() = default;
ParsedModule::ParsedModule(ParsedModule&&) noexcept = default;
ParsedModule& ParsedModule::operator=(ParsedModule&&) noexcept = default;
ParsedModule::~ParsedModule() = default;

Result<ParsedModule> parse_for_target(llvm::LLVMContext& context, std::string_view bytes, std::string_view name,
                                      const LlvmTarget& target) {
  ParsedModule parsed;
  auto module = parse_llvm_module(context, bytes, name, target.triple);
  if (!module) return module.error();
  auto machine = make_target_machine(target);
  if (!machine) return machine.error();
  parsed.module = std::move(*module);
  parsed.machine = std::move(*machine);
  // The target's layout, as llc gives it: a module without one gets it, and
  // one written for other pointer sizes cannot run on this target anyway.
  parsed.module->setDataLayout(parsed.machine->createDataLayout());
  return parsed;
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

bool fatal_error_is_input_error(std::string_view reason) {
  return reason.starts_with("Cannot select") || reason.find("not supported") != std::string_view::npos ||
         reason.find("unsupported") != std::string_view::npos || reason.find("Unsupported") != std::string_view::npos;
}

Status run_llvm_guarded(std::string_view what, const std::function<Status()>& body, std::string_view input) {
  initialize_llvm_once();
  Status result = Ok{};
  t_fatal_reason.clear();
  llvm::CrashRecoveryContext context;
  bool completed = context.RunSafely([&] { result = body(); });
  if (!completed) {
    const std::string reason = t_fatal_reason.empty() ? std::string("a crash") : "LLVM ERROR: " + t_fatal_reason;
    if (!t_fatal_reason.empty() && fatal_error_is_input_error(t_fatal_reason)) {
      return make_error(ErrorCode::invalid_argument,
                        std::string(what) + ": LLVM " + llvm_version() +
                            " cannot compile the input for this target: " + reason +
                            " (the input uses an operation or intrinsic that the target or its PTX version lacks)",
                        reason);
    }
    if (std::string note = newer_producer_note(input); !note.empty())
      return make_error(ErrorCode::invalid_argument, "LLVM failed inside " + std::string(what) + " on " + reason + note,
                        reason);
    return make_error(ErrorCode::internal,
                      "LLVM failed inside " + std::string(what) + ": " + reason +
                          " (recovered; the input may use what the target lacks, or trigger an LLVM bug)",
                      reason);
  }
  return result;
}

Status with_parsed_module(std::string_view what, std::string_view ir, std::string_view name, const LlvmTarget& target,
                          const std::function<Status(ParsedModule&, LlvmDiagnostics&)>& body) {
  return run_llvm_guarded(
      what,
      [&]() -> Status {
        llvm::LLVMContext context;
        LlvmDiagnostics diagnostics(context);
        Result<ParsedModule> parsed = parse_for_target(context, ir, name, target);
        if (!parsed) return parsed.error();
        return body(*parsed, diagnostics);
      },
      ir);
}

std::string llvm_version() { return LLVM_VERSION_STRING; }

}  // namespace kjit
