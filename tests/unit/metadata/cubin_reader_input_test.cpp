// The cubin reader on hand-built images: record decoding, the e_flags
// layouts, and rejection of malformed input. Runs without a CUDA toolkit.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <ostream>
#include <random>
#include <string>

#include "metadata/cubin_reader.h"
#include "synthetic_cubin.h"

namespace kjit {
namespace {

using testing::byte_record;
using testing::half_record;
using testing::sized_record;
using testing::SyntheticCubin;

// A cubin with one kernel "k" described by the given per-kernel records and
// global REGCOUNT = 40, FRAME_SIZE = 96.
std::string cubin_with_kernel_records(const std::string& records) {
  SyntheticCubin cubin;
  uint32_t symbol = cubin.add_kernel("k");
  cubin.add_section(".nv.info", SHT_LOPROC, sized_record(0x2f, {symbol, 40}) + sized_record(0x11, {symbol, 96}));
  cubin.add_section(".nv.info.k", SHT_LOPROC, records);
  return cubin.build();
}

void expect_invalid(std::string_view bytes, std::string_view message_part) {
  auto result = read_cubin(bytes);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(result.error().message.find(message_part), std::string::npos) << result.error().message;
}

TEST(CubinReaderInput, RecordsFillTheKernelInfo) {
  auto result = read_cubin(cubin_with_kernel_records(sized_record(0x05, {16, 8, 2}) + sized_record(0x10, {64, 2, 1}) +
                                                     sized_record(0x3d, {2, 3, 4}) + half_record(0x1b, 48) +
                                                     half_record(0x19, 28)));
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->kernels.size(), 1u);
  const KernelInfo& kernel = result->kernels[0];
  EXPECT_EQ(kernel.lowered_name, "k");
  EXPECT_EQ(kernel.name, "k");
  EXPECT_EQ(kernel.registers, 40u);
  EXPECT_EQ(kernel.local_bytes, 96u);
  EXPECT_EQ(kernel.max_threads_per_block, 16u * 8 * 2);
  EXPECT_EQ(kernel.required_threads, (Dim3{64, 2, 1}));
  EXPECT_EQ(kernel.cluster_dims, (Dim3{2, 3, 4}));
  EXPECT_EQ(kernel.max_registers, 48u);
  EXPECT_EQ(kernel.param_bytes, 28u);
}

TEST(CubinReaderInput, RegisterCapOf255MeansUnconstrained) {
  auto result = read_cubin(cubin_with_kernel_records(half_record(0x1b, 0xff)));
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->kernels[0].max_registers, 0u);
}

TEST(CubinReaderInput, UnknownAttributesAreSkipped) {
  auto result =
      read_cubin(cubin_with_kernel_records(sized_record(0x37, {0x82}) + byte_record(0x4c, 1) + half_record(0x19, 8)));
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->kernels[0].param_bytes, 8u);
}

// Where e_flags holds the SM, by ELF ABI version.
struct SmLayout {
  const char* name;
  uint32_t e_flags;
  uint8_t abi_version;
  uint32_t sm;
  bool arch_specific;
};

void PrintTo(const SmLayout& layout, std::ostream* os) {
  *os << layout.name;
}

constexpr SmLayout k_sm_layouts[] = {
    {"SmComesFromBits8To15InAbiVersion8", 0x06007802, 8, 120, false},
    // SM in the low byte and the "a" bit at 0x800, as CUDA 12 laid them out.
    {"SmComesFromTheLowByteInAbiVersion7", 0x00000500 | 0x800 | 90, 7, 90, true},
};

class CubinReaderSm : public ::testing::TestWithParam<SmLayout> {};

TEST_P(CubinReaderSm, ReadsTheSmAndArchSpecificBitFromTheHeader) {
  SyntheticCubin cubin;
  cubin.header(190, GetParam().e_flags, GetParam().abi_version);
  cubin.add_kernel("k");
  auto result = read_cubin(cubin.build());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->sm, GetParam().sm);
  EXPECT_EQ(result->arch_specific, GetParam().arch_specific);
}

INSTANTIATE_TEST_SUITE_P(CubinReaderInput, CubinReaderSm, ::testing::ValuesIn(k_sm_layouts),
                         [](const ::testing::TestParamInfo<SmLayout>& info) { return std::string(info.param.name); });

TEST(CubinReaderInput, CompatRecordMarksArchSpecificBuild) {
  SyntheticCubin cubin;
  cubin.add_kernel("k");
  cubin.add_section(".nv.compat", SHT_LOPROC + 0x86, byte_record(0x09, 1));
  auto result = read_cubin(cubin.build());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->arch_specific);
}

TEST(CubinReaderInput, ReservedSharedMemoryIsSubtractedFromTheSection) {
  SyntheticCubin cubin;
  cubin.add_kernel("k");
  cubin.add_object_symbol(".nv.reservedSmem.cap", 0x400);
  cubin.add_nobits_section(".nv.shared.k", 0x400 + 4096);
  auto result = read_cubin(cubin.build());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->reserved_shared_bytes, 1024u);
  EXPECT_EQ(result->kernels[0].shared_section_bytes, 5120u);
  EXPECT_EQ(result->kernels[0].static_shared_bytes, 4096u);
}

TEST(CubinReaderInput, WithoutReservedMarkersTheSectionIsTheStaticSize) {
  SyntheticCubin cubin;
  cubin.header(190, 89u << 8, 8);
  cubin.add_kernel("k");
  cubin.add_nobits_section(".nv.shared.k", 4096);
  auto result = read_cubin(cubin.build());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->reserved_shared_bytes, 0u);
  EXPECT_EQ(result->kernels[0].static_shared_bytes, 4096u);
  EXPECT_EQ(result->kernels[0].shared_section_bytes, 4096u);
}

TEST(CubinReaderInput, DeviceFunctionsAreNotKernels) {
  SyntheticCubin cubin;
  cubin.add_kernel("kernel_b");
  cubin.add_function("helper");
  cubin.add_kernel("kernel_a");
  auto result = read_cubin(cubin.build());
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->kernels.size(), 2u);
  EXPECT_EQ(result->kernels[0].lowered_name, "kernel_a");
  EXPECT_EQ(result->kernels[1].lowered_name, "kernel_b");
}

TEST(CubinReaderInput, EmptyInputIsInvalidArgument) {
  expect_invalid("", "not an ELF file");
}

TEST(CubinReaderInput, NonElfInputIsInvalidArgument) {
  expect_invalid("// PTX\n.version 9.0\n.target sm_90\n", "not an ELF file");
}

TEST(CubinReaderInput, HostExecutableIsRejectedAsWrongMachine) {
  std::ifstream self("/proc/self/exe", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  expect_invalid(bytes, "not NVIDIA CUDA");
}

TEST(CubinReaderInput, ThirtyTwoBitElfIsRejected) {
  std::string bytes = SyntheticCubin().build();
  bytes[EI_CLASS] = ELFCLASS32;
  expect_invalid(bytes, "64-bit little-endian");
}

TEST(CubinReaderInput, TruncatedHeaderIsRejected) {
  expect_invalid(SyntheticCubin().build().substr(0, 20), "truncated ELF header");
}

TEST(CubinReaderInput, SectionTablePastTheEndIsRejected) {
  std::string bytes = SyntheticCubin().build();
  expect_invalid(bytes.substr(0, bytes.size() - 1), "section header table");
}

TEST(CubinReaderInput, SectionContentsPastTheEndAreRejected) {
  SyntheticCubin cubin;
  cubin.add_section(".nv.info", SHT_LOPROC, sized_record(0x2f, {1, 2}));
  std::string bytes = cubin.build();
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  // Point the last section (.nv.info) far past the end of the input.
  Elf64_Shdr section;
  const size_t at = header.e_shoff + (header.e_shnum - 1) * sizeof(Elf64_Shdr);
  std::memcpy(&section, bytes.data() + at, sizeof(section));
  section.sh_offset = ~uint64_t{0} - 2;
  std::memcpy(bytes.data() + at, &section, sizeof(section));
  expect_invalid(bytes, "runs past the end");
}

TEST(CubinReaderInput, MissingSymbolTableIsRejected) {
  std::string bytes = SyntheticCubin().build();
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  Elf64_Shdr symtab;
  const size_t at = header.e_shoff + 3 * sizeof(Elf64_Shdr);
  std::memcpy(&symtab, bytes.data() + at, sizeof(symtab));
  symtab.sh_type = SHT_PROGBITS;
  std::memcpy(bytes.data() + at, &symtab, sizeof(symtab));
  expect_invalid(bytes, "no symbol table");
}

TEST(CubinReaderInput, TruncatedRecordPayloadIsRejected) {
  std::string record = sized_record(0x05, {256, 1, 1});
  expect_invalid(cubin_with_kernel_records(record.substr(0, record.size() - 4)), "past the end of the section");
}

TEST(CubinReaderInput, UnknownRecordFormatIsRejected) {
  std::string record = half_record(0x1b, 32);
  record[0] = 0x07;
  expect_invalid(cubin_with_kernel_records(record), "unknown record format 7");
}

TEST(CubinReaderInput, WrongPayloadSizeForKnownAttributeIsRejected) {
  expect_invalid(cubin_with_kernel_records(sized_record(0x05, {256, 1})), "record 0x05");
}

TEST(CubinReaderInput, LeftoverBytesAfterTheLastRecordAreRejected) {
  expect_invalid(cubin_with_kernel_records(half_record(0x19, 8) + "\x03\x1b"), "truncated record");
}

TEST(CubinReaderInput, RandomBytesNeverCrash) {
  std::mt19937 random(12345);
  std::string valid = cubin_with_kernel_records(sized_record(0x05, {256, 1, 1}) + half_record(0x1b, 32));
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = valid;
    // Corrupt a few bytes anywhere, then maybe cut the image short.
    for (int i = 0; i < 4; ++i) bytes[random() % bytes.size()] = static_cast<char>(random());
    if (round % 3 == 0) bytes.resize(random() % bytes.size());
    auto result = read_cubin(bytes);
    if (!result.ok()) {
      EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
    }
  }
}

}  // namespace
}  // namespace kjit
