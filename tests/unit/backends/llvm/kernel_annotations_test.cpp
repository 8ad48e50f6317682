// Kernels and launch bounds in both of the forms front ends write, read the
// same and written to the PTX.
#include <gtest/gtest.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "backends/llvm/llvm_module.h"
#include "backends/llvm/nvptx_codegen.h"
#include "backends/llvm/nvvm_annotations.h"

namespace kjit {
namespace {

const LlvmTarget k_sm90{k_cuda_triple, "sm_90", "+ptx80"};

// The same kernel, bounds as !nvvm.annotations (clang 19 and older, NVVM,
// Numba) ...
constexpr const char* k_annotated = R"(target triple = "nvptx64-nvidia-cuda"
define void @k(ptr addrspace(1) %p) { ret void }
define void @helper() { ret void }
!nvvm.annotations = !{!0, !1, !2, !3, !4, !5}
!0 = !{ptr @k, !"kernel", i32 1}
!1 = !{ptr @k, !"maxntidx", i32 128, !"maxntidy", i32 2}
!2 = !{ptr @k, !"minctasm", i32 3}
!3 = !{ptr @k, !"maxnreg", i32 40}
!4 = !{ptr @k, !"maxclusterrank", i32 4}
!5 = !{ptr @k, !"cluster_dim_x", i32 2, !"cluster_dim_y", i32 1, !"cluster_dim_z", i32 1}
)";

// ... and as the function attributes newer LLVMs write.
constexpr const char* k_attributed = R"(target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(ptr addrspace(1) %p) #0 { ret void }
define void @helper() { ret void }
attributes #0 = { "nvvm.maxntid"="128,2" "nvvm.minctasm"="3" "nvvm.maxnreg"="40" "nvvm.maxclusterrank"="4" "nvvm.cluster_dim"="2,1,1" }
)";

std::vector<NvvmKernel> kernels_of(std::string_view ir) {
  llvm::LLVMContext context;
  auto module = parse_llvm_module(context, ir, "k.ll", k_cuda_triple);
  EXPECT_TRUE(module) << module.error().message;
  if (!module) return {};
  auto kernels = read_nvvm_kernels(**module);
  EXPECT_TRUE(kernels) << kernels.error().message;
  return kernels ? *kernels : std::vector<NvvmKernel>{};
}

TEST(KernelAnnotations, BothFormsReadTheSame) {
  for (const char* ir : {k_annotated, k_attributed}) {
    auto kernels = kernels_of(ir);
    ASSERT_EQ(kernels.size(), 1u) << ir;
    const NvvmKernel& k = kernels[0];
    EXPECT_EQ(k.name, "k");
    EXPECT_EQ(k.maxntid, (std::array<uint32_t, 3>{128, 2, 1}));
    EXPECT_EQ(k.reqntid, (std::array<uint32_t, 3>{0, 0, 0}));
    EXPECT_EQ(k.cluster_dim, (std::array<uint32_t, 3>{2, 1, 1}));
    EXPECT_TRUE(k.has_cluster_dim);
    EXPECT_EQ(k.minctasm, 3u);
    EXPECT_EQ(k.maxnreg, 40u);
    EXPECT_EQ(k.maxclusterrank, 4u);
  }
}

TEST(KernelAnnotations, BothFormsReachThePtx) {
  for (const char* ir : {k_annotated, k_attributed}) {
    auto ptx = nvptx_codegen(ir, "k.ll", k_sm90);
    ASSERT_TRUE(ptx) << ptx.error().message;
    for (const char* directive : {".entry k(", ".maxntid 128, 2, 1", ".minnctapersm 3", ".maxnreg 40",
                                  ".maxclusterrank 4", ".explicitcluster", ".reqnctapercluster 2, 1, 1"})
      EXPECT_NE(ptx->find(directive), std::string::npos) << directive << " in\n" << *ptx;
    EXPECT_EQ(ptx->find(".entry helper"), std::string::npos);
  }
}

TEST(KernelAnnotations, ReqntidInEitherForm) {
  for (const char* ir : {"define ptx_kernel void @k() #0 { ret void }\nattributes #0 = { \"nvvm.reqntid\"=\"32,4\" }\n",
                         "define void @k() { ret void }\n!nvvm.annotations = !{!0}\n"
                         "!0 = !{ptr @k, !\"kernel\", i32 1, !\"reqntidx\", i32 32, !\"reqntidy\", i32 4}\n"}) {
    auto kernels = kernels_of(ir);
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(kernels[0].reqntid, (std::array<uint32_t, 3>{32, 4, 1}));
    auto ptx = nvptx_codegen(ir, "k.ll", k_sm90);
    ASSERT_TRUE(ptx) << ptx.error().message;
    EXPECT_NE(ptx->find(".reqntid 32, 4, 1"), std::string::npos) << *ptx;
  }
}

TEST(KernelAnnotations, AnAnnotationWinsOverTheAttributeSayingTheSame) {
  auto kernels = kernels_of(
      "define ptx_kernel void @k() #0 { ret void }\nattributes #0 = { \"nvvm.maxnreg\"=\"64\" }\n"
      "!nvvm.annotations = !{!0}\n!0 = !{ptr @k, !\"maxnreg\", i32 32}\n");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].maxnreg, 32u);
}

TEST(KernelAnnotations, MalformedAttributesAreTheInputsFault) {
  llvm::LLVMContext context;
  auto module = parse_llvm_module(
      context, "define ptx_kernel void @k() #0 { ret void }\nattributes #0 = { \"nvvm.maxntid\"=\"lots\" }\n", "k.ll",
      k_cuda_triple);
  ASSERT_TRUE(module);
  auto kernels = read_nvvm_kernels(**module);
  ASSERT_FALSE(kernels);
  EXPECT_EQ(kernels.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(kernels.error().message.find("nvvm.maxntid"), std::string::npos);
}

TEST(KernelAnnotations, ClustersBeforeSm90AreRefused) {
  auto ptx = nvptx_codegen(k_attributed, "k.ll", LlvmTarget{k_cuda_triple, "sm_80", "+ptx80"});
  ASSERT_FALSE(ptx);
  EXPECT_EQ(ptx.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(ptx.error().message.find("sm_90"), std::string::npos) << ptx.error().message;
}

TEST(KernelAnnotations, ClusterDirectivesAreAddedOnce) {
  NvvmKernel k;
  k.name = "k";
  k.has_cluster_dim = true;
  k.cluster_dim = {4, 2, 1};
  const std::string ptx = ".visible .entry k(\n\t.param .u64 k_param_0\n)\n.maxntid 64, 1, 1\n{\n\tret;\n}\n";
  std::string once = add_cluster_directives(ptx, {k});
  EXPECT_NE(once.find(".maxntid 64, 1, 1\n.explicitcluster\n.reqnctapercluster 4, 2, 1\n{"), std::string::npos) << once;
  EXPECT_EQ(add_cluster_directives(once, {k}), once);
  k.cluster_dim = {0, 0, 0};  // the shape is chosen at launch
  std::string explicit_only = add_cluster_directives(ptx, {k});
  EXPECT_NE(explicit_only.find(".explicitcluster\n{"), std::string::npos) << explicit_only;
  EXPECT_EQ(explicit_only.find(".reqnctapercluster"), std::string::npos);
}

TEST(KernelAnnotations, ModulesWithoutKernelsCompile) {
  auto ptx =
      nvptx_codegen("define float @twice(float %x) {\n  %y = fmul float %x, 2.0\n  ret float %y\n}\n", "f.ll", k_sm90);
  ASSERT_TRUE(ptx) << ptx.error().message;
  EXPECT_EQ(ptx->find(".entry"), std::string::npos);
  EXPECT_NE(ptx->find(".func"), std::string::npos);
}

}  // namespace
}  // namespace kjit
