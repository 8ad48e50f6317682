// How the LLVM path reads what front ends write: triples, producers, the
// intrinsics it knows, and whose fault LLVM's fatal errors are.
#include "backends/llvm/llvm_module.h"

#include <gtest/gtest.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Bitcode/LLVMBitCodes.h>
#include <llvm/Bitstream/BitstreamReader.h>
#include <llvm/Bitstream/BitstreamWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/ErrorHandling.h>

#include "backends/llvm/nvptx_codegen.h"

namespace kjit {
namespace {

constexpr const char* k_cuda = "nvptx64-nvidia-cuda";

TEST(LlvmTriple, Nvptx64WithCudaOrUnknownOsIsCuda) {
  for (const char* spelling :
       {"nvptx64-nvidia-cuda", "nvptx64-unknown-unknown", "nvptx64", "nvptx64--", "nvptx64--cuda",
        "nvptx64-unknown-cuda", "nvptx64-nvidia-unknown", "nvptx64-nvidia-cuda-gnu"}) {
    auto triple = normalize_module_triple(spelling, "m.ll", k_cuda);
    ASSERT_TRUE(triple) << spelling << ": " << triple.error().message;
    EXPECT_EQ(*triple, k_cuda) << spelling;
  }
}

TEST(LlvmTriple, NoTripleGetsTheTargets) {
  auto triple = normalize_module_triple("", "m.ll", k_cuda);
  ASSERT_TRUE(triple);
  EXPECT_EQ(*triple, k_cuda);
}

TEST(LlvmTriple, RefusalsSayWhyAndWhatToSend) {
  struct Case {
    const char* triple;
    const char* why;
  };
  for (const Case& c : {Case{"nvptx-nvidia-cuda", "32-bit"}, Case{"nvptx", "32-bit"},
                        Case{"nvptx64-nvidia-nvcl", "OpenCL"}, Case{"x86_64-pc-linux-gnu", "not NVPTX"},
                        Case{"amdgcn-amd-amdhsa", "not NVPTX"}, Case{"nvptx64-unknown-linux", "OS 'linux'"}}) {
    auto triple = normalize_module_triple(c.triple, "m.ll", k_cuda);
    ASSERT_FALSE(triple) << c.triple;
    EXPECT_EQ(triple.error().code, ErrorCode::invalid_argument);
    const std::string& message = triple.error().message;
    EXPECT_NE(message.find(c.triple), std::string::npos) << message;
    EXPECT_NE(message.find(c.why), std::string::npos) << message;
    EXPECT_NE(message.find("send IR for nvptx64-nvidia-cuda"), std::string::npos) << message;
  }
}

TEST(LlvmModule, ParsedModulesNameTheNormalisedTripleAndTheTargetsLayout) {
  llvm::LLVMContext context;
  for (const char* header : {"target triple = \"nvptx64-unknown-unknown\"\n", "target triple = \"nvptx64\"\n", ""}) {
    std::string ir = std::string(header) + "define ptx_kernel void @k() { ret void }\n";
    auto parsed = parse_for_target(context, ir, "m.ll", LlvmTarget{k_cuda, "sm_80", "+ptx80"});
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->module->getTargetTriple(), k_cuda);
    EXPECT_FALSE(parsed->module->getDataLayoutStr().empty());
  }
}

TEST(LlvmModule, UnknownLlvmFunctionsAreRefusedByName) {
  llvm::LLVMContext context;
  constexpr const char* ir = R"(target triple = "nvptx64-nvidia-cuda"
declare float @llvm.nvvm.no.such.thing(float)
define ptx_kernel void @k(ptr addrspace(1) %p) {
  %v = load float, ptr addrspace(1) %p
  %r = call float @llvm.nvvm.no.such.thing(float %v)
  store float %r, ptr addrspace(1) %p
  ret void
}
)";
  auto parsed = parse_llvm_module(context, ir, "m.ll", k_cuda);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(parsed.error().message.find("llvm.nvvm.no.such.thing"), std::string::npos) << parsed.error().message;
  EXPECT_NE(parsed.error().message.find("does not know as intrinsics"), std::string::npos) << parsed.error().message;
}

TEST(LlvmProducer, ReadFromBitcodeAndFromText) {
  llvm::LLVMContext context;
  auto parsed = parse_llvm_module(context, "define void @f() { ret void }\n", "m.ll", k_cuda);
  ASSERT_TRUE(parsed);
  std::string bitcode = write_bitcode(**parsed);
  EXPECT_EQ(llvm_producer(bitcode), "LLVM" LLVM_VERSION_STRING);
  EXPECT_EQ(producer_major_version(llvm_producer(bitcode)), static_cast<unsigned>(LLVM_VERSION_MAJOR));

  EXPECT_EQ(llvm_producer("!0 = !{!\"clang version 21.1.2 (https://github.com/llvm/llvm-project)\"}"),
            "clang version 21.1.2");
  EXPECT_EQ(producer_major_version("clang version 21.1.2"), 21u);
  EXPECT_EQ(producer_major_version("LLVM20.1.0"), 20u);
  EXPECT_EQ(producer_major_version("LLVM 7.0.1"), 7u);
  EXPECT_EQ(llvm_producer("define void @f() { ret void }"), "");
  EXPECT_EQ(producer_major_version(""), 0u);
  EXPECT_EQ(producer_major_version("rustc"), 0u);
}

// Bitcode a newer LLVM wrote: this LLVM's, its identification block
// replaced by one naming LLVM 99, and (`truncate`) cut short so that it
// does not parse, as a newer format would not.
std::string newer_bitcode(bool truncate) {
  llvm::LLVMContext context;
  auto parsed = parse_llvm_module(context, "define ptx_kernel void @k() { ret void }\n", "m.ll", k_cuda);
  EXPECT_TRUE(parsed);
  std::string bitcode = write_bitcode(**parsed);

  // Where this LLVM's identification block, the first after the magic, ends.
  llvm::BitstreamCursor cursor(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(bitcode.data()), bitcode.size()));
  EXPECT_FALSE(cursor.JumpToBit(32));
  llvm::Expected<llvm::BitstreamEntry> entry = cursor.advance();
  EXPECT_TRUE(entry && entry->Kind == llvm::BitstreamEntry::SubBlock &&
              entry->ID == llvm::bitc::IDENTIFICATION_BLOCK_ID);
  EXPECT_FALSE(cursor.SkipBlock());
  const size_t end = cursor.GetCurrentBitNo() / 8;

  // Written as LLVM writes it, the version as long as this one's, so that
  // the offsets the module block keeps from the start still hold.
  llvm::SmallVector<char, 64> block;
  llvm::BitstreamWriter writer(block);
  writer.EnterSubblock(llvm::bitc::IDENTIFICATION_BLOCK_ID, 5);
  auto string_abbrev = std::make_shared<llvm::BitCodeAbbrev>();
  string_abbrev->Add(llvm::BitCodeAbbrevOp(llvm::bitc::IDENTIFICATION_CODE_STRING));
  string_abbrev->Add(llvm::BitCodeAbbrevOp(llvm::BitCodeAbbrevOp::Array));
  string_abbrev->Add(llvm::BitCodeAbbrevOp(llvm::BitCodeAbbrevOp::Char6));
  unsigned string_id = writer.EmitAbbrev(std::move(string_abbrev));
  std::string producer = "LLVM" LLVM_VERSION_STRING;
  producer.replace(4, 2, "99");
  std::vector<unsigned> chars(producer.begin(), producer.end());
  writer.EmitRecord(llvm::bitc::IDENTIFICATION_CODE_STRING, chars, string_id);
  auto epoch_abbrev = std::make_shared<llvm::BitCodeAbbrev>();
  epoch_abbrev->Add(llvm::BitCodeAbbrevOp(llvm::bitc::IDENTIFICATION_CODE_EPOCH));
  epoch_abbrev->Add(llvm::BitCodeAbbrevOp(llvm::BitCodeAbbrevOp::VBR, 6));
  unsigned epoch_id = writer.EmitAbbrev(std::move(epoch_abbrev));
  writer.EmitRecord(llvm::bitc::IDENTIFICATION_CODE_EPOCH, std::vector<unsigned>{llvm::bitc::BITCODE_CURRENT_EPOCH},
                    epoch_id);
  writer.ExitBlock();
  EXPECT_EQ(block.size() + 4, end);
  std::string newer = bitcode.substr(0, 4) + std::string(block.begin(), block.end()) + bitcode.substr(end);
  if (truncate) newer.resize(newer.size() * 2 / 3);
  return newer;
}

TEST(LlvmProducer, UnreadableBitcodeOfANewerLlvmNamesBothVersions) {
  llvm::LLVMContext context;
  std::string bitcode = newer_bitcode(true);
  EXPECT_EQ(producer_major_version(llvm_producer(bitcode)), 99u);
  auto parsed = parse_llvm_module(context, bitcode, "kernel.bc", k_cuda);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::invalid_argument);
  const std::string& message = parsed.error().message;
  EXPECT_NE(message.find("LLVM 99."), std::string::npos) << message;
  EXPECT_NE(message.find("kjit's LLVM " LLVM_VERSION_STRING), std::string::npos) << message;
}

TEST(LlvmProducer, ReadableBitcodeOfANewerLlvmCompiles) {
  auto ptx = nvptx_codegen(newer_bitcode(false), "kernel.bc", LlvmTarget{k_cuda, "sm_80", "+ptx80"});
  ASSERT_TRUE(ptx) << ptx.error().message << "\n" << ptx.error().log;
  EXPECT_NE(ptx->find(".entry k"), std::string::npos);
}

TEST(LlvmProducer, UnparsableTextOfANewerClangNamesBothVersions) {
  // "samesign" is LLVM 20's.
  constexpr const char* ir = R"IR(target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(i32 %a, i32 %b, ptr addrspace(1) %p) {
  %c = icmp samesign ult i32 %a, %b
  store i1 %c, ptr addrspace(1) %p
  ret void
}
!llvm.ident = !{!0}
!0 = !{!"clang version 21.1.0 (https://github.com/llvm/llvm-project 3623fe661ae3)"}
)IR";
  llvm::LLVMContext context;
  auto parsed = parse_llvm_module(context, ir, "kernel.ll", k_cuda);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::invalid_argument);
  const std::string& message = parsed.error().message;
  EXPECT_NE(message.find("could not parse"), std::string::npos) << message;
  EXPECT_NE(message.find("clang version 21.1.0"), std::string::npos) << message;
  EXPECT_NE(message.find(LLVM_VERSION_STRING), std::string::npos) << message;
  EXPECT_NE(parsed.error().log.find("samesign"), std::string::npos) << parsed.error().log;
}

TEST(LlvmFatalErrors, WhatTheTargetLacksIsTheInputsFault) {
  EXPECT_TRUE(fatal_error_is_input_error("Cannot select: intrinsic %llvm.nvvm.barrier.cluster.arrive"));
  EXPECT_TRUE(fatal_error_is_input_error("Support for variadic functions is unsupported"));
  EXPECT_FALSE(fatal_error_is_input_error("Broken function found, compilation aborted!"));

  // LLVM 19 cannot select this sm_90 intrinsic for sm_75.
  constexpr const char* ir = R"(target triple = "nvptx64-nvidia-cuda"
declare void @llvm.nvvm.barrier.cluster.arrive()
define ptx_kernel void @k() {
  call void @llvm.nvvm.barrier.cluster.arrive()
  ret void
}
)";
  auto ptx = nvptx_codegen(ir, "k.ll", LlvmTarget{k_cuda, "sm_75", "+ptx80"});
  ASSERT_FALSE(ptx);
  EXPECT_EQ(ptx.error().code, ErrorCode::invalid_argument) << ptx.error().message;
  EXPECT_NE(ptx.error().message.find("Cannot select"), std::string::npos) << ptx.error().message;
}

TEST(LlvmFatalErrors, CrashesStayInternal) {
  Status crashed = run_llvm_guarded("test", []() -> Status { llvm::report_fatal_error("something kjit got wrong"); });
  ASSERT_FALSE(crashed);
  EXPECT_EQ(crashed.error().code, ErrorCode::internal);
}

}  // namespace
}  // namespace kjit
