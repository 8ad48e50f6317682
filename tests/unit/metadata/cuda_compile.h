// Test support: compiles CUDA C++ or PTX to a cubin in-process (NVRTC, then
// nvJitLink) and parses ptxas's "-v" report, so tests can check the cubin
// reader against what the assembler itself said about each kernel.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::testing {

// What `ptxas -v` printed for one entry function.
struct PtxasReport {
  uint32_t registers = 0;
  uint32_t shared_bytes = 0;  // the "N bytes smem" figure; 0 when not printed
  uint32_t stack_bytes = 0;   // "N bytes stack frame"
};

struct CompiledCubin {
  bool ok = false;
  std::string error;  // which step failed, with its log
  std::string cubin;
  std::string link_log;                              // nvJitLink's info log, with ptxas's -v report
  std::map<std::string, PtxasReport> ptxas;          // by lowered name
  std::map<std::string, std::string> lowered_names;  // name expression -> symbol
};

struct CudaCompileOptions {
  std::vector<std::string> nvrtc_options;  // besides -arch
  std::vector<std::string> link_options;   // besides -arch and -Xptxas=-v
  std::vector<std::string> name_expressions;
};

// Compiles CUDA C++ for `arch` ("sm_90", "sm_90a").
CompiledCubin compile_cuda(std::string_view source, std::string_view arch, const CudaCompileOptions& options = {});

// Assembles and links hand-written PTX for `arch`.
CompiledCubin link_ptx(std::string_view ptx, std::string_view arch, const std::vector<std::string>& link_options = {});

// Parses ptxas's verbose report into per-entry figures.
std::map<std::string, PtxasReport> parse_ptxas_report(std::string_view log);

}  // namespace kjit::testing
