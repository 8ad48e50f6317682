// libdevice linked as clang links it, and __nvvm_reflect resolved from the
// target and the request's -ftz.
#include <gtest/gtest.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <filesystem>

#include "backends/llvm/libdevice.h"
#include "backends/llvm/llvm_module.h"
#include "backends/llvm/nvptx_codegen.h"
#include "backends/llvm/nvvm_reflect.h"
#include "pipeline/compile_options.h"

namespace kjit {
namespace {

const std::string k_libdevice = std::string(KJIT_TEST_CUDA_HOME) + "/nvvm/libdevice/libdevice.10.bc";
const LlvmTarget k_sm80{k_cuda_triple, "sm_80", "+ptx80"};

#define SKIP_WITHOUT_LIBDEVICE() \
  if (!std::filesystem::exists(k_libdevice)) GTEST_SKIP() << "no libdevice at " << k_libdevice

// What clang --target=nvptx64 writes for a kernel calling sinf through
// libdevice, trimmed.
constexpr const char* k_calls_sinf = R"(target triple = "nvptx64-unknown-unknown"
declare float @__nv_sinf(float)
define ptx_kernel void @k(ptr addrspace(1) %p) {
  %v = load float, ptr addrspace(1) %p
  %r = call float @__nv_sinf(float %v)
  store float %r, ptr addrspace(1) %p
  ret void
}
)";

std::unique_ptr<llvm::Module> parse(llvm::LLVMContext& context, std::string_view ir) {
  auto module = parse_llvm_module(context, ir, "out.bc", k_cuda_triple);
  EXPECT_TRUE(module) << module.error().message;
  return module ? std::move(*module) : nullptr;
}

TEST(Libdevice, OnlyWhatTheModuleCallsIsLinkedAndInternalised) {
  SKIP_WITHOUT_LIBDEVICE();
  auto linked = link_libdevice({k_calls_sinf, "k.ll", k_sm80, k_libdevice});
  ASSERT_TRUE(linked) << linked.error().message << "\n" << linked.error().log;
  EXPECT_EQ(linked->linked, std::vector<std::string>{"__nv_sinf"});
  llvm::LLVMContext context;
  auto module = parse(context, linked->ir);
  ASSERT_TRUE(module);
  const llvm::Function* sinf = module->getFunction("__nv_sinf");
  ASSERT_TRUE(sinf);
  EXPECT_FALSE(sinf->isDeclaration());
  EXPECT_TRUE(sinf->hasLocalLinkage());
  size_t libdevice_functions = 0;
  for (const llvm::Function& f : *module)
    if (f.getName().starts_with("__nv_")) ++libdevice_functions;
  // __nv_sinf and the few it calls, not libdevice's hundreds.
  EXPECT_LT(libdevice_functions, 10u);
  EXPECT_FALSE(module->getFunction("__nv_cosf"));
  EXPECT_FALSE(module->getFunction("k")->hasLocalLinkage());
}

TEST(Libdevice, AModuleCallingNoneComesBackUnchanged) {
  constexpr const char* ir = "define ptx_kernel void @k() { ret void }\n";
  auto linked = link_libdevice({ir, "k.ll", k_sm80, ""});
  ASSERT_TRUE(linked);
  EXPECT_EQ(linked->ir, ir);
  EXPECT_TRUE(linked->linked.empty());
}

TEST(Libdevice, WithoutLibdeviceACallIsTheToolkitsLimit) {
  auto linked = link_libdevice({k_calls_sinf, "k.ll", k_sm80, ""});
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(linked.error().message.find("__nv_sinf"), std::string::npos) << linked.error().message;
}

TEST(Libdevice, FunctionsLibdeviceLacksStayUndefined) {
  SKIP_WITHOUT_LIBDEVICE();
  std::string ir = k_calls_sinf;
  ir.replace(ir.find("declare float @__nv_sinf(float)"), 0, "declare float @__nv_no_such_math(float)\n");
  ir.replace(ir.find("  store float %r"), 0, "  %q = call float @__nv_no_such_math(float %r)\n");
  auto linked = link_libdevice({ir, "k.ll", k_sm80, k_libdevice});
  ASSERT_TRUE(linked) << linked.error().message;
  llvm::LLVMContext context;
  auto module = parse(context, linked->ir);
  ASSERT_TRUE(module);
  ASSERT_TRUE(module->getFunction("__nv_no_such_math"));
  EXPECT_TRUE(module->getFunction("__nv_no_such_math")->isDeclaration());
  EXPECT_FALSE(module->getFunction("__nv_sinf")->isDeclaration());
}

// A function returning __nvvm_reflect(`what`).
std::string reflecting(const char* what, const char* module_flags = "") {
  std::string length = std::to_string(std::string_view(what).size() + 1);
  return std::string("target triple = \"nvptx64-nvidia-cuda\"\n@name = private unnamed_addr addrspace(4) constant [") +
         length + " x i8] c\"" + what + "\\00\"\n" +
         "declare i32 @__nvvm_reflect(ptr)\n"
         "define i32 @f() {\n"
         "  %v = call i32 @__nvvm_reflect(ptr addrspacecast (ptr addrspace(4) @name to ptr))\n"
         "  ret i32 %v\n}\n" +
         module_flags;
}

// What f returns once reflected: the folded constant.
int64_t reflected(const std::string& ir, const LlvmTarget& target, std::optional<bool> ftz) {
  auto bitcode = run_nvvm_reflect({ir, "r.ll", target, ftz});
  EXPECT_TRUE(bitcode) << bitcode.error().message;
  if (!bitcode) return -1;
  llvm::LLVMContext context;
  auto module = parse(context, *bitcode);
  for (const llvm::BasicBlock& block : *module->getFunction("f"))
    for (const llvm::Instruction& instruction : block)
      if (const auto* ret = llvm::dyn_cast<llvm::ReturnInst>(&instruction))
        if (const auto* value = llvm::dyn_cast<llvm::ConstantInt>(ret->getReturnValue())) return value->getSExtValue();
  ADD_FAILURE() << "__nvvm_reflect was not folded";
  return -1;
}

TEST(NvvmReflect, CudaArchIsTheTargetsSm) {
  EXPECT_EQ(reflected(reflecting("__CUDA_ARCH"), k_sm80, std::nullopt), 800);
  EXPECT_EQ(reflected(reflecting("__CUDA_ARCH"), LlvmTarget{k_cuda_triple, "sm_90a", "+ptx80"}, std::nullopt), 900);
}

TEST(NvvmReflect, CudaFtzIsTheOptionElseTheModulesFlag) {
  constexpr const char* ftz_flag = "!llvm.module.flags = !{!0}\n!0 = !{i32 4, !\"nvvm-reflect-ftz\", i32 1}\n";
  EXPECT_EQ(reflected(reflecting("__CUDA_FTZ"), k_sm80, std::nullopt), 0);
  EXPECT_EQ(reflected(reflecting("__CUDA_FTZ"), k_sm80, true), 1);
  EXPECT_EQ(reflected(reflecting("__CUDA_FTZ", ftz_flag), k_sm80, std::nullopt), 1);
  EXPECT_EQ(reflected(reflecting("__CUDA_FTZ", ftz_flag), k_sm80, false), 0);
}

TEST(NvvmReflect, FtzFlushesSinglePrecisionArithmetic) {
  constexpr const char* ir = R"(target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(ptr addrspace(1) %p, float %x) {
  %v = load float, ptr addrspace(1) %p
  %r = fadd float %v, %x
  store float %r, ptr addrspace(1) %p
  ret void
}
)";
  for (bool ftz : {true, false}) {
    auto bitcode = run_nvvm_reflect({ir, "k.ll", k_sm80, ftz});
    ASSERT_TRUE(bitcode) << bitcode.error().message;
    auto ptx = nvptx_codegen(*bitcode, "k.ll", k_sm80);
    ASSERT_TRUE(ptx) << ptx.error().message;
    EXPECT_EQ(ptx->find("add.rn.ftz.f32") != std::string::npos, ftz) << *ptx;
  }
}

TEST(NvvmReflect, LibdeviceBranchesOnTheRequestsFtz) {
  SKIP_WITHOUT_LIBDEVICE();
  auto linked = link_libdevice({k_calls_sinf, "k.ll", k_sm80, k_libdevice});
  ASSERT_TRUE(linked) << linked.error().message;
  for (bool ftz : {true, false}) {
    auto bitcode = run_nvvm_reflect({linked->ir, "k.ll", k_sm80, ftz});
    ASSERT_TRUE(bitcode) << bitcode.error().message;
    llvm::LLVMContext context;
    auto module = parse(context, *bitcode);
    EXPECT_FALSE(module->getFunction("__nvvm_reflect") && !module->getFunction("__nvvm_reflect")->use_empty())
        << "calls to __nvvm_reflect are left";
    auto ptx = nvptx_codegen(*bitcode, "k.ll", k_sm80);
    ASSERT_TRUE(ptx) << ptx.error().message;
    EXPECT_EQ(ptx->find(".ftz.f32") != std::string::npos, ftz);
  }
}

TEST(LlvmOptions, FtzIsAcceptedForLlvmInputAndChecked) {
  auto checked = check_options(InputKind::llvm_ir, {"-ftz=true"});
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_EQ(checked->llvm, std::vector<std::string>{"-ftz=true"});
  EXPECT_TRUE(checked->nvjitlink.empty());
  EXPECT_TRUE(check_options(InputKind::llvm_bitcode, {"--ftz=false"}));
  EXPECT_FALSE(check_options(InputKind::llvm_ir, {"-ftz=yes"}));
  auto on_ptx = check_options(InputKind::ptx, {"-ftz=true"});
  ASSERT_FALSE(on_ptx);
  EXPECT_NE(on_ptx.error().message.find("no effect on ptx input"), std::string::npos);
  // Still NVRTC's for CUDA C++.
  auto cuda = check_options(InputKind::cuda_source, {"-ftz=true"});
  ASSERT_TRUE(cuda);
  EXPECT_EQ(cuda->nvrtc, std::vector<std::string>{"-ftz=true"});
  EXPECT_TRUE(cuda->llvm.empty());
}

}  // namespace
}  // namespace kjit
