// The hsaco reader on code objects LLVM 19 built from amdgpu_fixture.ll for
// gfx90a, gfx942 and gfx1100, and on hand-built images for the metadata's
// encodings and for rejection of malformed input.
#include "metadata/hsaco_reader.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <msgpack.hpp>
#include <string>
#include <utility>
#include <vector>

#include "synthetic_cubin.h"

namespace kjit {
namespace {

// --- Metadata documents and code objects built by hand --------------------

using Packer = msgpack::packer<msgpack::sbuffer>;
using Packs = std::function<void(Packer&)>;
using Field = std::pair<std::string, Packs>;

Packs text(std::string value) {
  return [value](Packer& packer) { packer.pack(value); };
}
// The smallest encoding of `value`, as LLVM writes it.
Packs number(uint64_t value) {
  return [value](Packer& packer) { packer.pack(value); };
}
Packs map_of(std::vector<Field> fields) {
  return [fields](Packer& packer) {
    packer.pack_map(static_cast<uint32_t>(fields.size()));
    for (const auto& [key, value] : fields) {
      packer.pack(key);
      value(packer);
    }
  };
}
Packs array_of(std::vector<Packs> items) {
  return [items](Packer& packer) {
    packer.pack_array(static_cast<uint32_t>(items.size()));
    for (const auto& item : items) item(packer);
  };
}

// Every key the reader requires of a kernel, with values unlike each other.
std::vector<Field> kernel_fields(const std::string& name) {
  return {
      {".name", text(name)},
      {".symbol", text(name + ".kd")},
      {".group_segment_fixed_size", number(1024)},
      {".private_segment_fixed_size", number(16)},
      {".kernarg_segment_size", number(264)},
      {".vgpr_count", number(40)},
      {".sgpr_count", number(20)},
      {".max_flat_workgroup_size", number(256)},
      {".wavefront_size", number(64)},
  };
}

void set_field(std::vector<Field>& fields, const std::string& key, Packs value) {
  for (auto& field : fields)
    if (field.first == key) {
      field.second = std::move(value);
      return;
    }
  fields.emplace_back(key, std::move(value));
}

void erase_field(std::vector<Field>& fields, const std::string& key) {
  std::erase_if(fields, [&](const Field& field) { return field.first == key; });
}

std::vector<Field> document_fields(const std::vector<std::vector<Field>>& kernels,
                                   const std::string& target = "amdgcn-amd-amdhsa--gfx90a") {
  std::vector<Packs> entries;
  for (const auto& kernel : kernels) entries.push_back(map_of(kernel));
  return {{"amdhsa.version", array_of({number(1), number(2)})},
          {"amdhsa.target", text(target)},
          {"amdhsa.kernels", array_of(entries)}};
}

std::string pack(const Packs& value) {
  msgpack::sbuffer buffer;
  Packer packer(buffer);
  value(packer);
  return std::string(buffer.data(), buffer.size());
}

template <typename T>
void append(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

void pad_to(std::string& out, size_t alignment) {
  out.resize((out.size() + alignment - 1) / alignment * alignment);
}

// A code object as ld.lld lays one out where it matters to the reader: an
// AMDGPU HSA ELF header, a .note section holding the metadata note, and a
// .dynsym defining `descriptors` as objects.
std::string synthetic_hsaco(const std::string& metadata, const std::vector<std::string>& descriptors,
                            uint8_t abi_version = 3) {
  std::string note;
  append(note, Elf64_Nhdr{7, static_cast<Elf64_Word>(metadata.size()), 32});
  note.append("AMDGPU\0", 7);
  pad_to(note, 4);
  note += metadata;
  pad_to(note, 4);

  std::string dynstr(1, '\0');
  std::string dynsym(sizeof(Elf64_Sym), '\0');
  for (const auto& name : descriptors) {
    Elf64_Sym symbol{};
    symbol.st_name = static_cast<Elf64_Word>(dynstr.size());
    symbol.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
    symbol.st_shndx = 1;
    symbol.st_size = 64;
    append(dynsym, symbol);
    dynstr += name;
    dynstr += '\0';
  }
  const std::string shstrtab("\0.note\0.dynsym\0.dynstr\0.shstrtab\0", 34);

  struct Part {
    uint32_t name, type, link, align, entsize;
    const std::string* contents;
  };
  const Part parts[] = {{1, SHT_NOTE, 0, 4, 0, &note},
                        {7, SHT_DYNSYM, 3, 8, sizeof(Elf64_Sym), &dynsym},
                        {15, SHT_STRTAB, 0, 1, 0, &dynstr},
                        {23, SHT_STRTAB, 0, 1, 0, &shstrtab}};

  std::string image(sizeof(Elf64_Ehdr), '\0');
  std::vector<Elf64_Shdr> headers(1);
  for (const Part& part : parts) {
    pad_to(image, 8);
    Elf64_Shdr header{};
    header.sh_name = part.name;
    header.sh_type = part.type;
    header.sh_link = part.link;
    header.sh_addralign = part.align;
    header.sh_entsize = part.entsize;
    header.sh_offset = image.size();
    header.sh_size = part.contents->size();
    image += *part.contents;
    headers.push_back(header);
  }
  pad_to(image, 8);

  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_ident[EI_OSABI] = 64;
  header.e_ident[EI_ABIVERSION] = abi_version;
  header.e_type = ET_DYN;
  header.e_machine = 224;
  header.e_version = EV_CURRENT;
  header.e_ehsize = sizeof(Elf64_Ehdr);
  header.e_shoff = image.size();
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = static_cast<uint16_t>(headers.size());
  header.e_shstrndx = static_cast<uint16_t>(headers.size() - 1);
  std::memcpy(image.data(), &header, sizeof(header));
  for (const auto& section : headers) append(image, section);
  return image;
}

// A code object of the given kernels, each with its descriptor defined.
std::string hsaco_of(const std::vector<std::vector<Field>>& kernels,
                     const std::string& target = "amdgcn-amd-amdhsa--gfx90a") {
  std::vector<std::string> descriptors;
  for (const auto& kernel : kernels)
    for (const auto& [key, value] : kernel)
      if (key == ".symbol") {
        const std::string packed = pack(value);
        descriptors.push_back(msgpack::unpack(packed.data(), packed.size()).get().as<std::string>());
      }
  return synthetic_hsaco(pack(map_of(document_fields(kernels, target))), descriptors);
}

void expect_invalid(std::string_view bytes, std::string_view message_part) {
  auto result = read_hsaco(bytes);
  ASSERT_FALSE(result.ok()) << "read a kernel list of " << result->kernels.size();
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(result.error().message.find(message_part), std::string::npos) << result.error().message;
}

// --- Hand-built code objects -----------------------------------------------

TEST(HsacoReaderInput, MetadataFillsTheKernelInfo) {
  auto kernel = kernel_fields("_Z5scaleIfEvPT_i");
  set_field(kernel, ".reqd_workgroup_size", array_of({number(128), number(2), number(1)}));
  auto result = read_hsaco(hsaco_of({kernel, kernel_fields("plain")}, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
  ASSERT_TRUE(result.ok()) << result.error().message;
  // Fails if the features are not cut off, or the target is rewritten.
  EXPECT_EQ(result->target_id, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
  EXPECT_EQ(result->processor, "gfx90a");
  EXPECT_EQ(result->code_object_version, 5u);
  ASSERT_EQ(result->kernels.size(), 2u);
  const KernelInfo& scale = result->kernels[0];  // sorted by lowered name: '_' < 'p'
  EXPECT_EQ(scale.lowered_name, "_Z5scaleIfEvPT_i");
  EXPECT_EQ(scale.name, "scale<float>");
  EXPECT_EQ(scale.static_shared_bytes, 1024u);
  EXPECT_EQ(scale.local_bytes, 16u);
  EXPECT_EQ(scale.param_bytes, 264u);
  EXPECT_EQ(scale.registers, 40u);
  EXPECT_EQ(scale.scalar_registers, 20u);
  EXPECT_EQ(scale.max_threads_per_block, 256u);
  EXPECT_EQ(scale.wavefront_size, 64u);
  EXPECT_EQ(scale.required_threads, (Dim3{128, 2, 1}));
  EXPECT_EQ(scale.shared_section_bytes, 0u);  // a cubin figure; an hsaco has none
  EXPECT_EQ(result->kernels[1].name, "plain");
  EXPECT_FALSE(result->kernels[1].required_threads.is_set());
}

// msgpack lets a writer pick any integer form that holds the value; the
// reader must take each (this fails if it reads only one of via.u64 / i64).
// Triton's own LLVM writes the newer spelling of the target id.
TEST(HsacoReaderInput, TheNewerTargetIdSpellingNamesItsProcessor) {
  auto result = read_hsaco(hsaco_of({kernel_fields("k")}, "amdgpu9.42-amd-amdhsa-unknown-gfx942:xnack-"));
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->processor, "gfx942");
}

TEST(HsacoReaderInput, EveryIntegerEncodingIsRead) {
  const std::vector<std::pair<const char*, Packs>> encodings = {
      {"positive fixint", [](Packer& p) { p.pack_fix_uint8(100); }},
      {"uint8", [](Packer& p) { p.pack_uint8(100); }},
      {"uint16", [](Packer& p) { p.pack_fix_uint16(100); }},
      {"uint32", [](Packer& p) { p.pack_fix_uint32(100); }},
      {"uint64", [](Packer& p) { p.pack_fix_uint64(100); }},
      {"int8", [](Packer& p) { p.pack_fix_int8(100); }},
      {"int16", [](Packer& p) { p.pack_fix_int16(100); }},
      {"int32", [](Packer& p) { p.pack_fix_int32(100); }},
      {"int64", [](Packer& p) { p.pack_fix_int64(100); }},
  };
  for (const auto& [form, packs] : encodings) {
    SCOPED_TRACE(form);
    auto kernel = kernel_fields("k");
    set_field(kernel, ".vgpr_count", packs);
    auto result = read_hsaco(hsaco_of({kernel}));
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result->kernels[0].registers, 100u);
  }
}

TEST(HsacoReaderInput, NegativeOrOversizedValuesAreRefused) {
  auto negative = kernel_fields("k");
  set_field(negative, ".group_segment_fixed_size", [](Packer& p) { p.pack_int8(-1); });  // negative fixint
  expect_invalid(hsaco_of({negative}), "\".group_segment_fixed_size\" is negative");

  auto too_large = kernel_fields("k");
  set_field(too_large, ".kernarg_segment_size", number(uint64_t{1} << 32));
  expect_invalid(hsaco_of({too_large}), "\".kernarg_segment_size\" is too large");

  auto not_a_number = kernel_fields("k");
  set_field(not_a_number, ".wavefront_size", text("64"));
  expect_invalid(hsaco_of({not_a_number}), "\".wavefront_size\" is not an integer");

  auto short_dims = kernel_fields("k");
  set_field(short_dims, ".reqd_workgroup_size", array_of({number(64), number(1)}));
  expect_invalid(hsaco_of({short_dims}), "not an array of 3 integers");
}

TEST(HsacoReaderInput, EveryRequiredKernelKeyIsChecked) {
  for (const auto& [key, value] : kernel_fields("k")) {
    SCOPED_TRACE(key);
    auto kernel = kernel_fields("k");
    erase_field(kernel, key);
    // Without .name the descriptor list is empty; either way it must fail.
    auto result = read_hsaco(synthetic_hsaco(pack(map_of(document_fields({kernel}))), {"k.kd"}));
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find("no \"" + key + "\""), std::string::npos) << result.error().message;
  }
}

TEST(HsacoReaderInput, KernelDescriptorMustBeADefinedSymbol) {
  auto kernel = kernel_fields("k");
  expect_invalid(synthetic_hsaco(pack(map_of(document_fields({kernel}))), {"other.kd"}),
                 "kernel descriptor \"k.kd\" is not a defined symbol");
}

TEST(HsacoReaderInput, MissingKernelListIsRefused) {
  auto fields = document_fields({kernel_fields("k")});
  erase_field(fields, "amdhsa.kernels");
  expect_invalid(synthetic_hsaco(pack(map_of(fields)), {"k.kd"}), "no \"amdhsa.kernels\"");
}

TEST(HsacoReaderInput, EmptyKernelListIsACodeObjectWithoutKernels) {
  auto result = read_hsaco(hsaco_of({}));
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->kernels.empty());
}

TEST(HsacoReaderInput, MalformedDocumentsAreRefused) {
  auto fields = document_fields({kernel_fields("k")});
  fields.push_back(fields[1]);  // amdhsa.target twice
  expect_invalid(synthetic_hsaco(pack(map_of(fields)), {"k.kd"}), "\"amdhsa.target\" appears twice");

  expect_invalid(hsaco_of({kernel_fields("k"), kernel_fields("k")}), "\"k\" is listed twice");
  expect_invalid(hsaco_of({kernel_fields("k")}, "amdgcn-amd-amdpal--gfx90a"), "does not start with");
  expect_invalid(hsaco_of({kernel_fields("k")}, "amdgcn-amd-amdhsa--:xnack-"), "names no gfx processor");
  expect_invalid(hsaco_of({kernel_fields("k")}, "amdgpu9.42-amd-amdhsa-unknown-:xnack-"), "names no gfx processor");
  expect_invalid(synthetic_hsaco(pack(array_of({number(1)})), {}), "not a msgpack map");
  expect_invalid(synthetic_hsaco(pack(map_of(document_fields({kernel_fields("k")}))) + "x", {"k.kd"}),
                 "bytes after its msgpack document");
}

// The decoder allocates an array's elements when it reads the array's
// header: without limits, a few bytes could make it ask for gigabytes, or
// nest until it runs out of stack.
TEST(HsacoReaderInput, DecoderLimitsHoldAgainstHostileHeaders) {
  expect_invalid(synthetic_hsaco(std::string("\xdd\xff\xff\xff\xff", 5), {}), "not valid msgpack");  // array32
  expect_invalid(synthetic_hsaco(std::string("\xdf\x7f\xff\xff\xff", 5), {}), "not valid msgpack");  // map32
  expect_invalid(synthetic_hsaco(std::string(100000, '\x91'), {}), "not valid msgpack");             // nested arrays
  expect_invalid(synthetic_hsaco(std::string("\xdb\xff\xff\xff\xf0", 5), {}), "not valid msgpack");  // str32
  expect_invalid(synthetic_hsaco("", {}), "not valid msgpack");
}

TEST(HsacoReaderInput, CodeObjectVersionFollowsTheAbiVersion) {
  const std::string metadata = pack(map_of(document_fields({kernel_fields("k")})));
  for (uint8_t abi : {1, 2, 3, 4}) {
    auto result = read_hsaco(synthetic_hsaco(metadata, {"k.kd"}, abi));
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result->code_object_version, abi + 2u);
  }
  expect_invalid(synthetic_hsaco(metadata, {"k.kd"}, 0), "code object v2 or older");
}

TEST(HsacoReaderInput, OtherBinariesAreRefused) {
  expect_invalid("", "not an ELF file");
  expect_invalid(std::string("\x7f") + "ELF", "truncated ELF header");
  // A cubin: well-formed ELF, another machine.
  expect_invalid(testing::SyntheticCubin().build(), "ELF for machine 190, not AMDGPU (224)");
}

// --- Code objects built by LLVM 19 -----------------------------------------

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class HsacoReaderCompiled : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
#ifdef KJIT_TEST_HSACO_DIR
    const std::string path = std::string(KJIT_TEST_HSACO_DIR) + "/amdgpu_fixture_" + GetParam() + ".hsaco";
    bytes_ = read_file(path);
    ASSERT_FALSE(bytes_.empty()) << "the build did not produce " << path;
#else
    GTEST_SKIP() << "llc-19 or ld.lld not found at configure time: no compiled code objects";
#endif
  }

  uint32_t expected_wavefront() const {
    return std::string_view(GetParam()).starts_with("gfx1") ? 32 : 64;
  }

  std::string bytes_;
};

TEST_P(HsacoReaderCompiled, TargetAndVersionMatchTheBuild) {
  auto result = read_hsaco(bytes_);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->processor, GetParam());
  EXPECT_TRUE(result->target_id.starts_with("amdgcn-amd-amdhsa--gfx")) << result->target_id;
  // LLVM 19 writes v5 by default (ELF ABI version 3); fails with another
  // llc whose default differs.
  EXPECT_EQ(result->code_object_version, 5u);
}

TEST_P(HsacoReaderCompiled, KernelsCarryTheirLaunchFigures) {
  auto result = read_hsaco(bytes_);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->kernels.size(), 2u);

  const KernelInfo& tile = result->kernels[0];
  EXPECT_EQ(tile.lowered_name, "_Z10tile_scalePfS_f");
  EXPECT_EQ(tile.name, "tile_scale");
  EXPECT_GE(tile.static_shared_bytes, 32768u);           // the 32 KiB @tile
  EXPECT_EQ(tile.max_threads_per_block, 256u);           // "amdgpu-flat-work-group-size"="1,256"
  EXPECT_EQ(tile.wavefront_size, expected_wavefront());  // gfx11 defaults to wave32
  // v5 kernargs: the explicit ones (8 + 8 + 4, rounded to 8) and then 256
  // bytes of hidden arguments; fails if the wrong key is read.
  EXPECT_EQ(tile.param_bytes, 24u + 256u);
  EXPECT_GT(tile.registers, 0u);
  EXPECT_GT(tile.scalar_registers, 0u);
  EXPECT_EQ(tile.local_bytes, 0u);
  EXPECT_FALSE(tile.required_threads.is_set());

  const KernelInfo& add = result->kernels[1];
  EXPECT_EQ(add.lowered_name, "vector_add");
  EXPECT_EQ(add.name, "vector_add");
  EXPECT_EQ(add.static_shared_bytes, 0u);
  EXPECT_EQ(add.required_threads, (Dim3{64, 1, 1}));  // !reqd_work_group_size
  EXPECT_EQ(add.max_threads_per_block, 1024u);        // LLVM keeps its default beside it
  EXPECT_EQ(add.param_bytes, 32u + 256u);
  EXPECT_EQ(add.wavefront_size, expected_wavefront());
  EXPECT_GT(add.registers, 0u);
  EXPECT_GT(add.scalar_registers, 0u);
}

// ld.lld puts the section header table last, so every proper prefix lacks
// part of it: each must be refused, none may read past its end (the sanitizer
// presets catch a read that does).
TEST_P(HsacoReaderCompiled, EveryTruncationIsRefused) {
  for (size_t length = 0; length < bytes_.size(); ++length) {
    auto result = read_hsaco(std::string_view(bytes_).substr(0, length));
    ASSERT_FALSE(result.ok()) << "a " << length << "-byte prefix was read";
    ASSERT_EQ(result.error().code, ErrorCode::invalid_argument);
    ASSERT_FALSE(result.error().message.empty());
  }
}

// Where the metadata note's descriptor lies in a code object.
std::pair<size_t, size_t> metadata_span(const std::string& bytes) {
  Elf64_Ehdr header{};
  std::memcpy(&header, bytes.data(), sizeof(header));
  for (size_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section{};
    std::memcpy(&section, bytes.data() + header.e_shoff + i * sizeof(section), sizeof(section));
    if (section.sh_type != SHT_NOTE) continue;
    Elf64_Nhdr note{};
    std::memcpy(&note, bytes.data() + section.sh_offset, sizeof(note));
    return {section.sh_offset + sizeof(note) + (note.n_namesz + 3) / 4 * 4, note.n_descsz};
  }
  return {0, 0};
}

// Every byte of the msgpack document replaced by values that change its
// structure (nil, a reserved byte, array/map/str headers with huge sizes):
// each result is a clean refusal or a full read, never a crash or a throw.
TEST_P(HsacoReaderCompiled, CorruptMetadataBytesFailCleanly) {
  const auto [offset, size] = metadata_span(bytes_);
  ASSERT_GT(size, 0u) << "no note section found";
  size_t refused = 0;
  for (size_t i = offset; i < offset + size; ++i) {
    for (char value : {'\x00', '\xc0', '\xc1', '\xdc', '\xdd', '\xdb', '\xdf', '\xff', '\x7f'}) {
      std::string corrupt = bytes_;
      if (corrupt[i] == value) continue;
      corrupt[i] = value;
      auto result = read_hsaco(corrupt);
      if (result.ok()) continue;  // a string's contents changed, say
      ++refused;
      ASSERT_EQ(result.error().code, ErrorCode::invalid_argument) << "byte " << i;
    }
  }
  EXPECT_GT(refused, 0u);  // fails if corruption went unnoticed everywhere
  // The reserved byte 0xc1 in place of the root map's header is never msgpack.
  std::string corrupt = bytes_;
  corrupt[offset] = '\xc1';
  expect_invalid(corrupt, "not valid msgpack");
}

TEST_P(HsacoReaderCompiled, AnotherMachineIsRefused) {
  std::string cubin_like = bytes_;
  const uint16_t cuda = 190;
  std::memcpy(cubin_like.data() + offsetof(Elf64_Ehdr, e_machine), &cuda, sizeof(cuda));
  expect_invalid(cubin_like, "not AMDGPU");
}

INSTANTIATE_TEST_SUITE_P(HsacoTargets, HsacoReaderCompiled, ::testing::Values("gfx90a", "gfx942", "gfx1100"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace kjit
