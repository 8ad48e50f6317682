// The PTX reader on hand-written PTX. The shared memory figures expected
// here are what ptxas 13.0 -v reported for the same PTX on sm_90.
#include "metadata/ptx_reader.h"

#include <gtest/gtest.h>

#include "launch/launch_plan.h"
#include "support/fails_with.h"

namespace kjit {
namespace {

using test::fails_with;

std::string module_text(std::string_view target, std::string_view body) {
  return ".version 9.0\n.target " + std::string(target) + "\n.address_size 64\n" + std::string(body);
}

// A copy: callers pass read_ptx's result, a temporary.
PtxKernel only_kernel(const Result<PtxModule>& module) {
  if (!module.ok()) {
    ADD_FAILURE() << module.error().message;
    return {};
  }
  EXPECT_EQ(module->kernels.size(), 1u);
  return module->kernels.empty() ? PtxKernel{} : module->kernels.front();
}

TEST(PtxReader, ReadsVersionTargetAndEntryNames) {
  auto module = read_ptx(module_text("sm_90a, debug", R"(
// .globl _Z5scaleIfEvPT_S0_
.visible .entry _Z5scaleIfEvPT_S0_(
  .param .u64 _Z5scaleIfEvPT_S0__param_0,
  .param .f32 _Z5scaleIfEvPT_S0__param_1
)
{
  ret;
}
.visible .entry plain() { ret; }
)"));
  ASSERT_TRUE(module.ok()) << module.error().message;
  EXPECT_EQ(module->version, "9.0");
  EXPECT_EQ(module->target, "sm_90a");
  EXPECT_EQ(module->sm, 90u);
  EXPECT_EQ(module->address_size, 64u);
  ASSERT_EQ(module->kernels.size(), 2u);
  EXPECT_EQ(module->kernels[0].info.lowered_name, "_Z5scaleIfEvPT_S0_");
  EXPECT_EQ(module->kernels[0].info.name, "scale<float>");
  EXPECT_EQ(module->kernels[0].info.param_bytes, 12u);
  EXPECT_EQ(module->kernels[1].info.name, "plain");
  EXPECT_NE(module->find("scale<float>"), nullptr);
  EXPECT_NE(module->find("plain"), nullptr);
  EXPECT_EQ(module->find("missing"), nullptr);
}

TEST(PtxReader, ReadsLaunchBoundsRequiredThreadsAndRegisterCap) {
  const PtxKernel kernel = only_kernel(read_ptx(module_text("sm_80", R"(
.visible .entry k(.param .u32 n)
.maxntid 128, 2, 1
.reqntid 64, 2
.maxnreg 32
.minnctapersm 4
{ ret; }
)")));
  EXPECT_EQ(kernel.info.max_threads_per_block, 256u);
  EXPECT_EQ(kernel.info.required_threads, (Dim3{64, 2, 1}));
  EXPECT_EQ(kernel.info.max_registers, 32u);
  EXPECT_EQ(kernel.min_blocks_per_sm, 4u);
  EXPECT_EQ(kernel.info.registers, 0u);  // only ptxas knows
}

TEST(PtxReader, ReadsClusterDirectives) {
  const PtxKernel kernel = only_kernel(read_ptx(module_text("sm_90", R"(
.visible .entry k()
.explicitcluster
.reqnctapercluster 2, 1, 1
.maxclusterrank 8
{ ret; }
)")));
  EXPECT_EQ(kernel.info.cluster_dims, (Dim3{2, 1, 1}));
  EXPECT_TRUE(kernel.explicit_cluster);
  EXPECT_EQ(kernel.max_cluster_rank, 8u);
}

TEST(PtxReader, LaysOutSharedArraysInDeclarationOrderWithAlignment) {
  // ptxas -v: 19 bytes (3, padding to 16, 3).
  const PtxKernel aligned = only_kernel(read_ptx(module_text("sm_80", R"(
.visible .entry k()
{
  .shared .align 1 .b8 a[3];
  .shared .align 16 .b8 b[3];
  ret;
}
)")));
  EXPECT_EQ(aligned.info.static_shared_bytes, 19u);
  // ptxas -v: 48 bytes (.f32 x3 = 12, .v2.f64 x2 = 32 at 16).
  const PtxKernel typed = only_kernel(read_ptx(module_text("sm_80", R"(
.visible .entry k()
{
  .shared .f32 a[3];
  .shared .v2 .f64 b[2];
  ret;
}
)")));
  EXPECT_EQ(typed.info.static_shared_bytes, 48u);
}

TEST(PtxReader, CountsModuleSharedOnlyWhereAnEntryOrItsCalleesNameIt) {
  auto module = read_ptx(module_text("sm_80", R"(
.shared .align 4 .b8 table[8];
.func helper()
{
  .reg .b32 %q;
  mov.u32 %q, table;
  st.shared.u8 [%q], 1;
  ret;
}
.visible .entry calls_helper()
{
  .shared .align 4 .b8 a[20];
  call helper;
  ret;
}
.visible .entry names_table()
{
  .reg .b32 %r<2>;
  .shared .align 4 .b8 a[20];
  mov.u32 %r1, table;
  ret;
}
.visible .entry ignores_table()
{
  .shared .align 4 .b8 a[20];
  ret;
}
)"));
  ASSERT_TRUE(module.ok()) << module.error().message;
  // ptxas -v: 28, 28, 20.
  EXPECT_EQ(module->find("calls_helper")->info.static_shared_bytes, 28u);
  EXPECT_EQ(module->find("names_table")->info.static_shared_bytes, 28u);
  EXPECT_EQ(module->find("ignores_table")->info.static_shared_bytes, 20u);
}

TEST(PtxReader, DynamicSharedIsNotCountedButAlignsTheStaticPart) {
  auto module = read_ptx(module_text("sm_80", R"(
.extern .shared .align 16 .b8 dynamic_smem[];
.visible .entry with_static()
{
  .shared .align 4 .b8 a[20];
  ret;
}
.visible .entry without_static() { ret; }
)"));
  ASSERT_TRUE(module.ok());
  EXPECT_TRUE(module->declares_dynamic_shared);
  // ptxas -v: 32 bytes, and none for the kernel without static shared memory.
  EXPECT_EQ(module->find("with_static")->info.static_shared_bytes, 32u);
  EXPECT_EQ(module->find("without_static")->info.static_shared_bytes, 0u);
}

TEST(PtxReader, SectionIsOneKiBLargerFromSm90) {
  const char* body = R"(
.visible .entry k()
{
  .shared .align 4 .b8 tile[4096];
  ret;
}
)";
  const PtxKernel hopper = only_kernel(read_ptx(module_text("sm_90", body)));
  EXPECT_EQ(hopper.info.static_shared_bytes, 4096u);
  EXPECT_EQ(hopper.info.shared_section_bytes, 5120u);
  const PtxKernel ampere = only_kernel(read_ptx(module_text("sm_80", body)));
  EXPECT_EQ(ampere.info.shared_section_bytes, 4096u);
}

TEST(PtxReader, ParameterBlockAlignsEachParameter) {
  // (struct {double; int;}, char, float*): 16 at 0, 1 at 16, 8 at 24.
  const PtxKernel kernel = only_kernel(read_ptx(module_text("sm_90", R"(
.visible .entry k(
  .param .align 8 .b8 k_param_0[16],
  .param .u8 k_param_1,
  .param .u64 .ptr .global .align 16 k_param_2
)
{ ret; }
)")));
  EXPECT_EQ(kernel.info.param_bytes, 32u);
}

TEST(PtxReader, IgnoresCommentsStringsAndInstructionsOnSharedMemory) {
  const PtxKernel kernel = only_kernel(read_ptx(module_text("sm_90", R"(
.file 1 "/src//kernel.cu"
/* .shared .align 4 .b8 in_a_comment[1000]; */
.visible .entry k()
{
  .reg .b32 %r<3>;
  // .shared .align 4 .b8 also_a_comment[1000];
  .shared .align 4 .b8 real[64];
  mov.u32 %r1, real;
  st.shared.u32 [%r1], %r2;
  ld.shared::cta.u32 %r2, [%r1+4];
  ret;
}
)")));
  EXPECT_EQ(kernel.info.static_shared_bytes, 64u);
}

TEST(PtxReader, FunctionPrototypesAndGlobalsAreSkipped) {
  auto module = read_ptx(module_text("sm_90", R"(
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);
.global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
.const .align 4 .u32 limit = 5;
.visible .entry k() { ret; }
)"));
  ASSERT_TRUE(module.ok()) << module.error().message;
  ASSERT_EQ(module->kernels.size(), 1u);
  EXPECT_EQ(module->kernels[0].info.static_shared_bytes, 0u);
}

TEST(PtxReader, RejectsTextThatIsNotPtx) {
  auto module = read_ptx("int main() { return 0; }");
  ASSERT_TRUE(fails_with(module, ErrorCode::invalid_argument, "no .version"));
}

TEST(PtxReader, MalformedDeclarationNamesTheLine) {
  auto module = read_ptx(module_text("sm_90", R"(
.visible .entry k()
{
  .shared .align 4 .b8 tile[n];
  ret;
}
)"));
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.error().message, "PTX line 7: array size of 'tile' is not a number");
}

TEST(PtxReader, UnterminatedBodyIsAnError) {
  auto module = read_ptx(module_text("sm_90", ".visible .entry k()\n{\n  ret;\n"));
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.error().message.find("never ends"), std::string::npos);
}

// The path the PTX reader is for: sm_107 has no cubin with CUDA 13.0, so the
// plan rests on PTX.
TEST(PtxReader, PlanForSm107RestsOnPtx) {
  auto module = read_ptx(module_text("sm_107a", R"(
.extern .shared .align 16 .b8 smem[];
.visible .entry attention()
.maxntid 256, 1, 1
{
  .shared .align 8 .b8 barriers[64];
  ret;
}
)"));
  ASSERT_TRUE(module.ok()) << module.error().message;
  EXPECT_EQ(module->sm, 107u);
  const KernelInfo& info = module->kernels.at(0).info;
  EXPECT_EQ(info.static_shared_bytes, 64u);
  EXPECT_EQ(info.shared_section_bytes, 64u + 1024u);
  LaunchConfig config;
  config.grid = {132};
  config.block = {256};
  config.dynamic_shared_bytes = 300 * 1024;
  auto plan = plan_launch(info, limits_for_target(*parse_target("cuda:107a")), config, KernelInfoSource::ptx);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan->rests_on_ptx);
  EXPECT_TRUE(plan->oversized_shared_memory);
  EXPECT_EQ(plan->static_shared_bytes, 1088u);
}

}  // namespace
}  // namespace kjit
