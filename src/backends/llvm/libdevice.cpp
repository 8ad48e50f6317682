#include "backends/llvm/libdevice.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/GlobalDCE.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "backends/llvm/module_pass_runner.h"

namespace kjit {
namespace {

// libdevice's bytes, read once per path: every job that needs it parses
// them lazily into its own context.
Result<std::shared_ptr<const std::string>> libdevice_bytes(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const std::string>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in || bytes.str().empty()) return make_error(ErrorCode::failed_precondition, "cannot read libdevice at " + path);
  auto shared = std::make_shared<const std::string>(std::move(bytes).str());
  cache.emplace(path, shared);
  return shared;
}

}  // namespace

std::vector<std::string> libdevice_calls(const llvm::Module& module) {
  std::vector<std::string> names;
  for (const llvm::Function& function : module)
    if (function.isDeclaration() && function.getName().starts_with("__nv_") && !function.use_empty())
      names.push_back(function.getName().str());
  std::sort(names.begin(), names.end());
  return names;
}

Result<LibdeviceResult> link_libdevice(const LibdeviceRequest& request) {
  LibdeviceResult out;
  // The common case costs a scan, not a parse: bitcode keeps symbol names
  // as plain bytes in its string table.
  if (request.ir.find("__nv_") == std::string_view::npos) {
    out.ir = std::string(request.ir);
    return out;
  }
  Status status = with_parsed_module(
      "libdevice-link", request.ir, request.name, request.target,
      [&](ParsedModule& parsed, LlvmDiagnostics& diagnostics) -> Status {
        llvm::Module& module = *parsed.module;
        out.linked = libdevice_calls(module);
        if (out.linked.empty()) {
          out.ir = std::string(request.ir);
          return Ok{};
        }
        if (request.libdevice_path.empty()) {
          return make_error(ErrorCode::failed_precondition,
                            std::string(request.name) + " calls libdevice (" + out.linked.front() +
                                "), and the serving CUDA toolkit has no nvvm/libdevice/libdevice.10.bc");
        }
        auto bytes = libdevice_bytes(request.libdevice_path);
        if (!bytes) return bytes.error();
        // Lazily: the linker materialises only the functions it links. The
        // bytes outlive the module, which is gone after the link.
        auto library = llvm::getLazyBitcodeModule(llvm::MemoryBufferRef(**bytes, request.libdevice_path), module.getContext());
        if (!library) {
          return make_error(ErrorCode::failed_precondition, "cannot read libdevice at " + request.libdevice_path +
                                                                ": " + llvm::toString(library.takeError()));
        }
        // libdevice says "nvptx64-nvidia-gpulibs" and an older layout; the
        // linker would warn, and warnings are errors here.
        (*library)->setTargetTriple(module.getTargetTriple());
        (*library)->setDataLayout(module.getDataLayout());
        bool failed =
            llvm::Linker::linkModules(module, std::move(*library), llvm::Linker::Flags::LinkOnlyNeeded,
                                      [](llvm::Module& linked, const llvm::StringSet<>& from_libdevice) {
                                        llvm::internalizeModule(linked, [&](const llvm::GlobalValue& value) {
                                          return !value.hasName() || !from_libdevice.contains(value.getName());
                                        });
                                      });
        if (failed || diagnostics.has_errors()) {
          return make_error(ErrorCode::invalid_argument, std::string(request.name) + " does not link with libdevice",
                            diagnostics.log());
        }

        // What the module does not call goes now, so the passes after this
        // one parse kilobytes, not libdevice.
        ModulePassRunner runner(parsed.machine.get());
        llvm::ModulePassManager passes;
        passes.addPass(llvm::GlobalDCEPass());
        runner.run(passes, module);
        out.ir = write_bitcode(module);
        return Ok{};
      });
  if (!status) return status.error();
  return out;
}

}  // namespace kjit
