// LLVM IR -> AMDGPU object -> hsaco in the process: the code objects' ELF
// headers for each processor and code object version, what is refused and
// with whose words, and lld run again and again in one process.
#include <gtest/gtest.h>
#include <llvm/BinaryFormat/ELF.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/amdgpu/amdgpu_codegen.h"
#include "backends/amdgpu/hsaco_link.h"
#include "backends/llvm/llvm_optimizer.h"

namespace kjit {
namespace {

// A kernel with 32 KiB of LDS that every work-group uses as a staging
// buffer, for work-groups of up to 256 work-items. No triple: the back end
// gives it one.
constexpr const char* k_kernel_body = R"(
@stage = internal addrspace(3) global [8192 x float] undef, align 16

define amdgpu_kernel void @reverse_scale(ptr addrspace(1) %out, ptr addrspace(1) %in, float %factor) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %index = zext i32 %tid to i64
  %src = getelementptr float, ptr addrspace(1) %in, i64 %index
  %value = load float, ptr addrspace(1) %src, align 4
  %slot = getelementptr [8192 x float], ptr addrspace(3) @stage, i32 0, i32 %tid
  store float %value, ptr addrspace(3) %slot, align 4
  call void @llvm.amdgcn.s.barrier()
  %mirror = sub i32 255, %tid
  %other = getelementptr [8192 x float], ptr addrspace(3) @stage, i32 0, i32 %mirror
  %read = load float, ptr addrspace(3) %other, align 4
  %scaled = fmul float %read, %factor
  %dst = getelementptr float, ptr addrspace(1) %out, i64 %index
  store float %scaled, ptr addrspace(1) %dst, align 4
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
)";

std::string kernel_ir() {
  return std::string("target triple = \"amdgcn-amd-amdhsa\"\n") + k_kernel_body;
}

struct ElfFacts {
  uint16_t type = 0;
  uint16_t machine = 0;
  uint32_t mach = 0;  // the processor field of e_flags
  uint8_t os_abi = 0;
  uint8_t abi_version = 0;
};

std::optional<ElfFacts> elf_facts(const std::string& bytes) {
  llvm::ELF::Elf64_Ehdr header;
  if (bytes.size() < sizeof header || bytes.compare(0, 4,
                                                    "\x7f"
                                                    "ELF") != 0)
    return std::nullopt;
  std::memcpy(&header, bytes.data(), sizeof header);
  return ElfFacts{header.e_type, header.e_machine, header.e_flags & llvm::ELF::EF_AMDGPU_MACH,
                  header.e_ident[llvm::ELF::EI_OSABI], header.e_ident[llvm::ELF::EI_ABIVERSION]};
}

// The group segment size the code object's metadata note gives the kernel:
// msgpack ".group_segment_fixed_size" followed by its value.
std::optional<uint32_t> group_segment_size(const std::string& hsaco) {
  const std::string key = ".group_segment_fixed_size";
  size_t at = hsaco.find(key);
  if (at == std::string::npos || at + key.size() + 3 > hsaco.size()) return std::nullopt;
  auto byte = [&](size_t i) { return static_cast<uint8_t>(hsaco[at + key.size() + i]); };
  if (byte(0) < 0x80) return byte(0);                                         // positive fixint
  if (byte(0) == 0xcd) return static_cast<uint32_t>(byte(1) << 8 | byte(2));  // uint16
  return std::nullopt;
}

AmdgpuCodegenRequest request_for(const std::string& ir, std::string processor) {
  AmdgpuCodegenRequest request;
  request.ir = ir;
  request.name = "kernel.ll";
  request.processor = std::move(processor);
  return request;
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

struct Processor {
  const char* name;
  uint32_t mach;
};

TEST(AmdgpuCodegen, KernelLinksIntoCodeObjectForEachProcessor) {
  const std::string ir = kernel_ir();
  for (Processor processor : {Processor{"gfx90a", llvm::ELF::EF_AMDGPU_MACH_AMDGCN_GFX90A},
                              Processor{"gfx942", llvm::ELF::EF_AMDGPU_MACH_AMDGCN_GFX942},
                              Processor{"gfx1100", llvm::ELF::EF_AMDGPU_MACH_AMDGCN_GFX1100},
                              Processor{"gfx1200", llvm::ELF::EF_AMDGPU_MACH_AMDGCN_GFX1200}}) {
    SCOPED_TRACE(processor.name);
    auto object = amdgpu_codegen(request_for(ir, processor.name));
    ASSERT_TRUE(object) << object.error().message << "\n" << object.error().log;
    auto object_facts = elf_facts(*object);
    ASSERT_TRUE(object_facts);
    EXPECT_EQ(object_facts->type, llvm::ELF::ET_REL);
    EXPECT_EQ(object_facts->machine, llvm::ELF::EM_AMDGPU);
    EXPECT_EQ(object_facts->mach, processor.mach);

    auto linked = link_hsaco(*object, "kernel.o");
    ASSERT_TRUE(linked) << linked.error().message << "\n" << linked.error().log;
    ASSERT_EQ(linked->hsaco.compare(0, 4,
                                    "\x7f"
                                    "ELF"),
              0);
    auto facts = elf_facts(linked->hsaco);
    ASSERT_TRUE(facts);
    EXPECT_EQ(facts->type, llvm::ELF::ET_DYN);
    EXPECT_EQ(facts->machine, 224);
    EXPECT_EQ(facts->mach, processor.mach);
    EXPECT_EQ(facts->os_abi, llvm::ELF::ELFOSABI_AMDGPU_HSA);
    EXPECT_EQ(facts->abi_version, 3) << "code object v5";
    EXPECT_NE(linked->hsaco.find("reverse_scale.kd"), std::string::npos) << "the kernel descriptor's symbol";
    EXPECT_EQ(group_segment_size(linked->hsaco), 32768u) << "the 32 KiB of LDS";
  }
}

TEST(AmdgpuCodegen, CodeObjectVersionSetsAbiVersionOverridingTheModulesFlag) {
  // The module asks for v5; the request's version wins.
  const std::string ir = kernel_ir() +
                         "!llvm.module.flags = !{!0}\n"
                         "!0 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}\n";
  for (auto [version, abi_version] : {std::pair{4u, 2}, std::pair{5u, 3}, std::pair{6u, 4}}) {
    SCOPED_TRACE(version);
    AmdgpuCodegenRequest request = request_for(ir, "gfx90a");
    request.code_object_version = version;
    auto object = amdgpu_codegen(request);
    ASSERT_TRUE(object) << object.error().message << "\n" << object.error().log;
    auto linked = link_hsaco(*object, "kernel.o");
    ASSERT_TRUE(linked) << linked.error().message << "\n" << linked.error().log;
    EXPECT_EQ(elf_facts(linked->hsaco)->abi_version, abi_version);
  }
}

TEST(AmdgpuCodegen, CodeObjectVersionLlvmDoesNotWriteIsInvalidArgument) {
  const std::string ir = kernel_ir();
  for (uint32_t version : {0u, 3u, 7u}) {
    AmdgpuCodegenRequest request = request_for(ir, "gfx90a");
    request.code_object_version = version;
    auto object = amdgpu_codegen(request);
    ASSERT_FALSE(object) << version;
    EXPECT_EQ(object.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(object.error().message.find("version " + std::to_string(version)), std::string::npos);
  }
}

TEST(AmdgpuCodegen, ModuleWithoutTripleOrWithoutOsIsCompiledForHsa) {
  for (std::string ir : {std::string(k_kernel_body), "target triple = \"amdgcn\"\n" + std::string(k_kernel_body)}) {
    auto object = amdgpu_codegen(request_for(ir, "gfx942"));
    ASSERT_TRUE(object) << object.error().message << "\n" << object.error().log;
    auto linked = link_hsaco(*object, "kernel.o");
    ASSERT_TRUE(linked) << linked.error().message;
    EXPECT_EQ(elf_facts(linked->hsaco)->os_abi, llvm::ELF::ELFOSABI_AMDGPU_HSA);
  }
}

TEST(AmdgpuCodegen, FeaturesReachTheBackEnd) {
  const std::string ir = kernel_ir();
  AmdgpuCodegenRequest request = request_for(ir, "gfx90a");
  request.features = "-xnack";
  auto off = amdgpu_codegen(request);
  ASSERT_TRUE(off) << off.error().message << "\n" << off.error().log;
  request.features = "+xnack";
  auto on = amdgpu_codegen(request);
  ASSERT_TRUE(on) << on.error().message << "\n" << on.error().log;
  // Code object v4 and later record the xnack setting in e_flags.
  auto xnack = [](const std::string& object) {
    return elf_facts(object) ? (std::string(object.data() + offsetof(llvm::ELF::Elf64_Ehdr, e_flags), 4)) : "";
  };
  EXPECT_NE(xnack(*off), xnack(*on));
}

TEST(AmdgpuCodegen, UnknownProcessorIsInvalidArgument) {
  const std::string ir = kernel_ir();
  for (const char* processor : {"gfx950", "gfx9999", "sm_90", ""}) {
    SCOPED_TRACE(processor);
    auto object = amdgpu_codegen(request_for(ir, processor));
    ASSERT_FALSE(object);
    EXPECT_EQ(object.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(object.error().message.find("not a recognized processor"), std::string::npos) << object.error().message;
  }
}

TEST(AmdgpuCodegen, FunctionsWrittenForAnotherProcessorAreRefused) {
  const std::string ir =
      "target triple = \"amdgcn-amd-amdhsa\"\n"
      "define amdgpu_kernel void @k() #0 { ret void }\n"
      "attributes #0 = { \"target-cpu\"=\"gfx942\" }\n";
  auto object = amdgpu_codegen(request_for(ir, "gfx90a"));
  ASSERT_FALSE(object);
  EXPECT_EQ(object.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(object.error().message.find("'k' is written for gfx942"), std::string::npos) << object.error().message;
  EXPECT_TRUE(amdgpu_codegen(request_for(ir, "gfx942"))) << "the processor the IR names builds";
}

TEST(AmdgpuCodegen, UnknownFeatureIsInvalidArgument) {
  const std::string ir = kernel_ir();
  AmdgpuCodegenRequest request = request_for(ir, "gfx90a");
  request.features = "+no-such-feature";
  auto object = amdgpu_codegen(request);
  ASSERT_FALSE(object);
  EXPECT_EQ(object.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(object.error().message.find("no-such-feature"), std::string::npos) << object.error().message;
}

TEST(AmdgpuCodegen, ModuleForAnotherArchitectureIsRefused) {
  for (const char* triple : {"nvptx64-nvidia-cuda", "x86_64-unknown-linux-gnu", "amdgcn-amd-amdpal"}) {
    SCOPED_TRACE(triple);
    const std::string ir = "target triple = \"" + std::string(triple) + "\"\ndefine void @f() {\n  ret void\n}\n";
    auto object = amdgpu_codegen(request_for(ir, "gfx90a"));
    ASSERT_FALSE(object);
    EXPECT_EQ(object.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(object.error().message.find(triple), std::string::npos) << object.error().message;
  }
}

TEST(AmdgpuCodegen, MalformedIrGivesLlvmsParseMessage) {
  const std::string ir = "define amdgpu_kernel void @k() {\n  frobnicate i32 0\n  ret void\n}\n";
  auto object = amdgpu_codegen(request_for(ir, "gfx90a"));
  ASSERT_FALSE(object);
  EXPECT_EQ(object.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(object.error().message.find("kernel.ll: 2:3: expected instruction opcode"), std::string::npos)
      << object.error().message;
}

TEST(AmdgpuCodegen, IrThatDoesNotVerifyIsInvalidArgument) {
  const std::string ir = "define amdgpu_kernel void @k() {\n  %x = add i32 %x, 1\n  ret void\n}\n";
  auto object = amdgpu_codegen(request_for(ir, "gfx90a"));
  ASSERT_FALSE(object);
  EXPECT_EQ(object.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(object.error().message.find("not valid"), std::string::npos) << object.error().message;
}

TEST(AmdgpuCodegen, LdsOverTheProcessorsLimitIsInvalidArgument) {
  // 128 KiB: twice what gfx90a has.
  std::string ir = kernel_ir();
  ir.replace(ir.find("[8192 x float] undef"), 20, "[32768 x float] undef");
  for (size_t at = ir.find("[8192 x float]"); at != std::string::npos; at = ir.find("[8192 x float]"))
    ir.replace(at, 14, "[32768 x float]");
  auto object = amdgpu_codegen(request_for(ir, "gfx90a"));
  ASSERT_FALSE(object);
  EXPECT_EQ(object.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(object.error().message.find("local memory"), std::string::npos) << object.error().message;
}

TEST(AmdgpuCodegen, InlineAssemblyIsAssembledIntoTheObject) {
  const std::string ir =
      "target triple = \"amdgcn-amd-amdhsa\"\n"
      "define amdgpu_kernel void @k() {\n  call void asm sideeffect \"s_nop 0\", \"\"()\n  ret void\n}\n";
  auto object = amdgpu_codegen(request_for(ir, "gfx90a"));
  ASSERT_TRUE(object) << object.error().message << "\n" << object.error().log;
  EXPECT_TRUE(link_hsaco(*object, "k.o"));
}

TEST(AmdgpuCodegen, OptimizerRunsForAmdgcnAndItsBitcodeCompiles) {
  LlvmOptimizeRequest optimize;
  const std::string ir = k_kernel_body;
  optimize.ir = ir;
  optimize.name = "kernel.ll";
  optimize.target = LlvmTarget{std::string(k_amdgpu_triple), "gfx90a", ""};
  auto bitcode = run_llvm_passes(optimize);
  ASSERT_TRUE(bitcode) << bitcode.error().message << "\n" << bitcode.error().log;

  auto object = amdgpu_codegen(request_for(*bitcode, "gfx90a"));
  ASSERT_TRUE(object) << object.error().message << "\n" << object.error().log;
  auto linked = link_hsaco(*object, "kernel.o");
  ASSERT_TRUE(linked) << linked.error().message;
  EXPECT_EQ(group_segment_size(linked->hsaco), 32768u);
}

TEST(AmdgpuCodegen, TimesCodegenAndLinkOnGfx90a) {
  const std::string ir = kernel_ir();
  for (const char* round : {"first", "second"}) {
    auto start = std::chrono::steady_clock::now();
    auto object = amdgpu_codegen(request_for(ir, "gfx90a"));
    double codegen_ms = milliseconds_since(start);
    ASSERT_TRUE(object) << object.error().message;
    start = std::chrono::steady_clock::now();
    auto linked = link_hsaco(*object, "kernel.o");
    double link_ms = milliseconds_since(start);
    ASSERT_TRUE(linked) << linked.error().message;
    std::printf("gfx90a %s call: codegen %.1f ms, link %.1f ms (object %zu bytes, hsaco %zu bytes)\n", round,
                codegen_ms, link_ms, object->size(), linked->hsaco.size());
  }
}

TEST(AmdgpuCodegen, ConcurrentCallsGiveWhatSerialCallsGive) {
  const std::string ir = kernel_ir();
  const std::vector<std::string> processors = {"gfx90a", "gfx942", "gfx1100", "gfx1200"};
  std::vector<std::string> serial;
  for (const std::string& processor : processors) {
    auto object = amdgpu_codegen(request_for(ir, processor));
    ASSERT_TRUE(object) << object.error().message;
    serial.push_back(*object);
  }
  std::vector<std::string> concurrent(processors.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < processors.size(); ++i) {
    threads.emplace_back([&, i] {
      auto object = amdgpu_codegen(request_for(ir, processors[i]));
      if (object) concurrent[i] = *object;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(concurrent, serial);
}

// A kernel calling a device function no object defines.
std::string object_calling_missing_function() {
  const std::string ir =
      "target triple = \"amdgcn-amd-amdhsa\"\n"
      "declare void @missing_helper(ptr addrspace(1))\n"
      "define amdgpu_kernel void @k(ptr addrspace(1) %p) {\n"
      "  call void @missing_helper(ptr addrspace(1) %p)\n  ret void\n}\n";
  auto object = amdgpu_codegen(request_for(ir, "gfx90a"));
  EXPECT_TRUE(object) << object.error().message << "\n" << object.error().log;
  return object ? *object : std::string();
}

TEST(HsacoLink, UndefinedFunctionIsInvalidArgumentWithLldsMessage) {
  auto linked = link_hsaco(object_calling_missing_function(), "kernel.o");
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(linked.error().message.find("undefined symbol: missing_helper"), std::string::npos)
      << linked.error().message;
  // lld's messages name the object as the caller did, not the temporary file.
  EXPECT_NE(linked.error().log.find("kernel.o"), std::string::npos) << linked.error().log;
  EXPECT_EQ(linked.error().log.find("kjit-hsaco-"), std::string::npos) << linked.error().log;
}

TEST(HsacoLink, LinksAgainAfterALinkFailedAndFromAnotherThread) {
  auto object = amdgpu_codegen(request_for(kernel_ir(), "gfx90a"));
  ASSERT_TRUE(object) << object.error().message;
  auto first = link_hsaco(*object, "kernel.o");
  auto second = link_hsaco(*object, "kernel.o");
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(first->hsaco, second->hsaco) << "lld's output is the same each time";

  EXPECT_FALSE(link_hsaco(object_calling_missing_function(), "bad.o"));
  auto after_failure = link_hsaco(*object, "kernel.o");
  ASSERT_TRUE(after_failure) << after_failure.error().message;
  EXPECT_EQ(after_failure->hsaco, first->hsaco);

  std::optional<Result<HsacoLinkOutput>> elsewhere;
  std::thread([&] { elsewhere.emplace(link_hsaco(*object, "kernel.o")); }).join();
  ASSERT_TRUE(*elsewhere) << (*elsewhere).error().message;
  EXPECT_EQ((**elsewhere).hsaco, first->hsaco);
}

TEST(HsacoLink, ConcurrentLinksAllSucceed) {
  auto object = amdgpu_codegen(request_for(kernel_ir(), "gfx90a"));
  ASSERT_TRUE(object) << object.error().message;
  std::vector<std::thread> threads;
  std::vector<int> succeeded(8, 0);
  for (size_t i = 0; i < succeeded.size(); ++i)
    threads.emplace_back([&, i] { succeeded[i] = link_hsaco(*object, "kernel.o").ok() ? 1 : 0; });
  for (std::thread& thread : threads) thread.join();
  for (int ok : succeeded) EXPECT_EQ(ok, 1);
}

TEST(HsacoLink, InputThatIsNotAnAmdgpuObjectIsInvalidArgument) {
  for (std::string input : {std::string("not an object"), std::string()}) {
    auto linked = link_hsaco(input, "junk.o");
    ASSERT_FALSE(linked);
    EXPECT_EQ(linked.error().code, ErrorCode::invalid_argument);
  }
  // A code object already linked is not relocatable.
  auto object = amdgpu_codegen(request_for(kernel_ir(), "gfx90a"));
  ASSERT_TRUE(object);
  auto linked = link_hsaco(*object, "kernel.o");
  ASSERT_TRUE(linked);
  EXPECT_FALSE(link_hsaco(linked->hsaco, "kernel.hsaco"));
  EXPECT_TRUE(link_hsaco(*object, "kernel.o")) << "lld still runs";
}

// lld's fatal errors (here on a symbol table whose sh_info is past its end)
// leave it unable to run again unless its context is freed afterwards.
TEST(HsacoLink, LinksAgainAfterLldsFatalError) {
  auto object = amdgpu_codegen(request_for(kernel_ir(), "gfx90a"));
  ASSERT_TRUE(object);
  auto before = link_hsaco(*object, "kernel.o");
  ASSERT_TRUE(before) << before.error().message;

  std::string corrupt = *object;
  llvm::ELF::Elf64_Ehdr header;
  std::memcpy(&header, corrupt.data(), sizeof header);
  bool found = false;
  for (unsigned i = 0; i < header.e_shnum; ++i) {
    const size_t at = header.e_shoff + i * sizeof(llvm::ELF::Elf64_Shdr);
    llvm::ELF::Elf64_Shdr section;
    std::memcpy(&section, corrupt.data() + at, sizeof section);
    if (section.sh_type != llvm::ELF::SHT_SYMTAB) continue;
    section.sh_info = 1000;
    std::memcpy(corrupt.data() + at, &section, sizeof section);
    found = true;
  }
  ASSERT_TRUE(found);
  for (int round = 0; round < 2; ++round) {
    auto failed = link_hsaco(corrupt, "corrupt.o");
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(failed.error().message.find("sh_info"), std::string::npos) << failed.error().message;
    auto after = link_hsaco(*object, "kernel.o");
    ASSERT_TRUE(after) << after.error().message;
    EXPECT_EQ(after->hsaco, before->hsaco);
  }
}

TEST(HsacoLink, LeavesNothingInTheTemporaryDirectory) {
  auto object = amdgpu_codegen(request_for(kernel_ir(), "gfx90a"));
  ASSERT_TRUE(object);
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("kjit-hsaco-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  const char* saved = std::getenv("TMPDIR");
  std::string saved_value = saved ? saved : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  auto good = link_hsaco(*object, "kernel.o");
  auto bad = link_hsaco(object_calling_missing_function(), "bad.o");
  if (saved)
    ::setenv("TMPDIR", saved_value.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  EXPECT_TRUE(good);
  EXPECT_FALSE(bad);
  EXPECT_TRUE(std::filesystem::is_empty(tmp));
  std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace kjit
