// Cubin parsing: the ELF header and section table, the symbol table, and the
// .nv.info records ptxas writes for the driver. Every read goes through
// read_at() / slice(), which check bounds, so garbage input fails cleanly.
//
// What was established against cubins built here by NVRTC + nvJitLink and
// nvcc (CUDA 13.0) for sm_75 ... sm_121, and is asserted by the tests:
// - e_flags: the SM number is in bits 8-15 from ELF ABI version 8 (CUDA 13);
//   earlier cubins (ABI version 7) keep it in bits 0-7.
// - A kernel is an STT_FUNC symbol with st_other bit 0x10; non-inlined device
//   functions are STT_FUNC without it (and may have an .nv.info.<name> too).
// - Records are `u8 format, u8 attribute, u16 value`, and for the "sized"
//   format the u16 is a payload length and the payload follows.
// - .nv.shared.<kernel> includes 1 KiB of driver-reserved shared memory on
//   sm_90 and newer; such cubins carry `.nv.reservedSmem.*` symbols (on
//   sm_100+ `.nv.reservedSmem.cap`, whose value is the reserved size and
//   which the code uses as the base of the kernel's own shared memory).
#include "metadata/cubin_reader.h"

#include <elf.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "metadata/kernel_name.h"

namespace kjit {
namespace {

static_assert(std::endian::native == std::endian::little, "the reader copies little-endian ELF structures as they are");

constexpr uint16_t k_em_cuda = 190;  // EM_CUDA
// From this EI_ABIVERSION on, e_flags keeps the SM number in bits 8-15.
constexpr unsigned char k_abi_version_sm_in_bits_8_15 = 8;
// e_flags bits for an arch-specific ("a") build, per ABI generation.
constexpr uint32_t k_flag_accelerators_v8 = 0x8;
constexpr uint32_t k_flag_accelerators_v7 = 0x800;
// st_other bit that marks an entry function (a kernel).
constexpr unsigned char k_sto_cuda_entry = 0x10;

// .nv.info record formats.
constexpr uint8_t k_format_none = 0x01;   // no value
constexpr uint8_t k_format_byte = 0x02;   // value in the low byte of the u16
constexpr uint8_t k_format_half = 0x03;   // u16 value
constexpr uint8_t k_format_sized = 0x04;  // u16 payload size, then the payload

// .nv.info attributes read here (EIATTR_* in NVIDIA's tools).
constexpr uint8_t k_attr_max_threads = 0x05;       // per kernel: u32 x, y, z
constexpr uint8_t k_attr_reqntid = 0x10;           // per kernel: u32 x, y, z
constexpr uint8_t k_attr_frame_size = 0x11;        // global: u32 symbol, u32 bytes
constexpr uint8_t k_attr_cbank_param_size = 0x19;  // per kernel: u16 bytes
constexpr uint8_t k_attr_maxreg_count = 0x1b;      // per kernel: u16 registers
constexpr uint8_t k_attr_regcount = 0x2f;          // global: u32 symbol, u32 registers
constexpr uint8_t k_attr_cta_per_cluster = 0x3d;   // per kernel: u32 x, y, z
constexpr uint8_t k_attr_max_cluster_rank = 0x3f;  // per kernel: u32 blocks
// .nv.compat attribute: 1 for an arch-specific ("a") build.
constexpr uint8_t k_compat_arch_specific = 0x09;

// MAXREG_COUNT when nothing capped registers below the architecture's 255.
constexpr uint16_t k_no_register_cap = 0xff;
// Reserved shared memory when the cubin uses the reserved-shared layout but
// does not state the size (sm_90 has no `.nv.reservedSmem.cap` symbol).
constexpr uint32_t k_default_reserved_shared_bytes = 1024;

constexpr std::string_view k_reserved_smem_symbol_prefix = ".nv.reservedSmem.";
constexpr std::string_view k_reserved_smem_cap_symbol = ".nv.reservedSmem.cap";
constexpr std::string_view k_reserved_shared_section_prefix = ".nv.shared.reserved.";

Error malformed(std::string message) {
  return make_error(ErrorCode::invalid_argument, "cubin: " + std::move(message));
}

// Copies a T from `bytes` at `offset`; false if it does not fit.
template <typename T>
bool read_at(std::string_view bytes, uint64_t offset, T& out) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

std::optional<std::string_view> slice(std::string_view bytes, uint64_t offset, uint64_t size) {
  if (offset > bytes.size() || bytes.size() - offset < size) return std::nullopt;
  return bytes.substr(offset, size);
}

// The NUL-terminated string at `offset` in a string table.
std::optional<std::string_view> string_at(std::string_view table, uint64_t offset) {
  if (offset >= table.size()) return std::nullopt;
  size_t end = table.find('\0', offset);
  if (end == std::string_view::npos) return std::nullopt;
  return table.substr(offset, end - offset);
}

struct Section {
  Elf64_Shdr header;
  std::string_view name;
  std::string_view contents;  // empty for SHT_NOBITS
};

struct Symbol {
  uint32_t index;
  std::string_view name;
  unsigned char type;
  unsigned char other;
  uint64_t value;
};

struct InfoRecord {
  uint8_t format;
  uint8_t attribute;
  uint16_t value;            // the value, or the payload size for k_format_sized
  std::string_view payload;  // k_format_sized only
};

// The ELF header and section table, checked once so that later lookups only
// deal in validated sections.
struct ElfImage {
  Elf64_Ehdr header{};
  std::vector<Section> sections;
  std::unordered_map<std::string_view, size_t> index_by_name;  // first of each name

  const Section* find(std::string_view name) const {
    auto it = index_by_name.find(name);
    return it == index_by_name.end() ? nullptr : &sections[it->second];
  }
};

Result<ElfImage> parse_elf(std::string_view bytes) {
  ElfImage image;
  if (bytes.size() < SELFMAG || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return malformed("not an ELF file (no \\x7fELF magic)");
  if (!read_at(bytes, 0, image.header))
    return malformed("truncated ELF header (" + std::to_string(bytes.size()) + " bytes)");
  const Elf64_Ehdr& header = image.header;
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
    return malformed("not a 64-bit little-endian ELF");
  if (header.e_machine != k_em_cuda)
    return malformed("ELF for machine " + std::to_string(header.e_machine) + ", not NVIDIA CUDA (" +
                     std::to_string(k_em_cuda) + ")");
  if (header.e_shnum == 0) return malformed("no section headers");
  if (header.e_shentsize != sizeof(Elf64_Shdr))
    return malformed("section header entry size " + std::to_string(header.e_shentsize) + ", expected " +
                     std::to_string(sizeof(Elf64_Shdr)));
  if (header.e_shstrndx >= header.e_shnum)
    return malformed("section name table index " + std::to_string(header.e_shstrndx) + " is out of range");

  const uint64_t table_size = uint64_t{header.e_shnum} * sizeof(Elf64_Shdr);
  if (!slice(bytes, header.e_shoff, table_size))
    return malformed("section header table (" + std::to_string(header.e_shnum) + " entries at offset " +
                     std::to_string(header.e_shoff) + ") runs past the end of the " + std::to_string(bytes.size()) +
                     "-byte input");

  // Program headers are not read, but the driver loads by them: an image
  // whose segments are cut off is as broken as one with missing sections.
  if (header.e_phnum != 0) {
    if (header.e_phentsize != sizeof(Elf64_Phdr))
      return malformed("program header entry size " + std::to_string(header.e_phentsize) + ", expected " +
                       std::to_string(sizeof(Elf64_Phdr)));
    if (!slice(bytes, header.e_phoff, uint64_t{header.e_phnum} * sizeof(Elf64_Phdr)))
      return malformed("program header table (" + std::to_string(header.e_phnum) + " entries at offset " +
                       std::to_string(header.e_phoff) + ") runs past the end of the " + std::to_string(bytes.size()) +
                       "-byte input");
    for (size_t i = 0; i < header.e_phnum; ++i) {
      Elf64_Phdr segment{};
      read_at(bytes, header.e_phoff + i * sizeof(Elf64_Phdr), segment);
      if (!slice(bytes, segment.p_offset, segment.p_filesz))
        return malformed("segment " + std::to_string(i) + " runs past the end of the input");
    }
  }

  image.sections.resize(header.e_shnum);
  for (size_t i = 0; i < image.sections.size(); ++i) {
    Section& section = image.sections[i];
    read_at(bytes, header.e_shoff + i * sizeof(Elf64_Shdr), section.header);
    if (section.header.sh_type == SHT_NOBITS) continue;  // occupies no file bytes
    auto contents = slice(bytes, section.header.sh_offset, section.header.sh_size);
    if (!contents)
      return malformed("section " + std::to_string(i) + " (offset " + std::to_string(section.header.sh_offset) +
                       ", size " + std::to_string(section.header.sh_size) + ") runs past the end of the " +
                       std::to_string(bytes.size()) + "-byte input");
    section.contents = *contents;
  }

  std::string_view names = image.sections[header.e_shstrndx].contents;
  for (size_t i = 0; i < image.sections.size(); ++i) {
    auto name = string_at(names, image.sections[i].header.sh_name);
    if (!name && i != 0) return malformed("section " + std::to_string(i) + " has no valid name");
    image.sections[i].name = name.value_or("");
    image.index_by_name.emplace(image.sections[i].name, i);
  }
  return image;
}

Result<std::vector<Symbol>> read_symbols(const ElfImage& image) {
  const Section* table = nullptr;
  for (const auto& section : image.sections) {
    if (section.header.sh_type != SHT_SYMTAB) continue;
    if (table) return malformed("more than one symbol table");
    table = &section;
  }
  if (!table) return malformed("no symbol table");
  if (table->header.sh_entsize != sizeof(Elf64_Sym) || table->contents.size() % sizeof(Elf64_Sym) != 0)
    return malformed("symbol table entry size " + std::to_string(table->header.sh_entsize) + " or table size " +
                     std::to_string(table->contents.size()) + " does not fit " + std::to_string(sizeof(Elf64_Sym)) +
                     "-byte entries");
  if (table->header.sh_link >= image.sections.size())
    return malformed("symbol table names a string table that does not exist");
  std::string_view names = image.sections[table->header.sh_link].contents;

  std::vector<Symbol> symbols;
  const size_t count = table->contents.size() / sizeof(Elf64_Sym);
  symbols.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    Elf64_Sym raw{};
    read_at(table->contents, i * sizeof(Elf64_Sym), raw);
    auto name = string_at(names, raw.st_name);
    if (!name && raw.st_name != 0)
      return malformed("symbol " + std::to_string(i) + " has a name outside the string table");
    symbols.push_back(Symbol{static_cast<uint32_t>(i), name.value_or(""),
                             static_cast<unsigned char>(ELF64_ST_TYPE(raw.st_info)), raw.st_other, raw.st_value});
  }
  return symbols;
}

Result<std::vector<InfoRecord>> parse_records(const Section& section) {
  std::vector<InfoRecord> records;
  std::string_view bytes = section.contents;
  uint64_t offset = 0;
  while (offset < bytes.size()) {
    InfoRecord record{};
    uint16_t value = 0;
    if (!read_at(bytes, offset, record.format) || !read_at(bytes, offset + 1, record.attribute) ||
        !read_at(bytes, offset + 2, value))
      return malformed(std::string(section.name) + ": truncated record at offset " + std::to_string(offset));
    record.value = value;
    offset += 4;
    switch (record.format) {
      case k_format_none:
      case k_format_byte:
      case k_format_half:
        break;
      case k_format_sized: {
        auto payload = slice(bytes, offset, value);
        if (!payload)
          return malformed(std::string(section.name) + ": record at offset " + std::to_string(offset - 4) + " has a " +
                           std::to_string(value) + "-byte payload past the end of the section");
        record.payload = *payload;
        offset += value;
        break;
      }
      default:
        return malformed(std::string(section.name) + ": unknown record format " + std::to_string(record.format) +
                         " at offset " + std::to_string(offset - 4));
    }
    records.push_back(record);
  }
  return records;
}

std::string describe(const Section& section, const InfoRecord& record) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string id = "0x";
  id += k_hex[record.attribute >> 4];
  id += k_hex[record.attribute & 0xf];
  return "record " + id + " in " + std::string(section.name);
}

// Reads the u32 words of a sized record that must hold exactly `count` of them.
Result<std::vector<uint32_t>> words_of(const Section& section, const InfoRecord& record, size_t count) {
  if (record.format != k_format_sized || record.payload.size() != count * sizeof(uint32_t))
    return malformed(describe(section, record) + ": expected " + std::to_string(count * sizeof(uint32_t)) +
                     "-byte payload");
  std::vector<uint32_t> words(count);
  for (size_t i = 0; i < count; ++i) read_at(record.payload, i * sizeof(uint32_t), words[i]);
  return words;
}

Result<Dim3> dim3_of(const Section& section, const InfoRecord& record) {
  auto words = words_of(section, record, 3);
  if (!words) return words.error();
  return Dim3{(*words)[0], (*words)[1], (*words)[2]};
}

Result<uint16_t> half_of(const Section& section, const InfoRecord& record) {
  if (record.format != k_format_half) return malformed(describe(section, record) + ": expected a u16 value");
  return record.value;
}

// Figures the global .nv.info keeps per kernel, keyed by symbol index.
struct PerSymbolFigures {
  std::unordered_map<uint32_t, uint32_t> registers;
  std::unordered_map<uint32_t, uint32_t> frame_bytes;
};

Result<PerSymbolFigures> read_global_info(const ElfImage& image) {
  PerSymbolFigures figures;
  for (const auto& section : image.sections) {
    if (section.name != ".nv.info") continue;
    auto records = parse_records(section);
    if (!records) return records.error();
    for (const auto& record : *records) {
      auto* target = record.attribute == k_attr_regcount     ? &figures.registers
                     : record.attribute == k_attr_frame_size ? &figures.frame_bytes
                                                             : nullptr;
      if (!target) continue;
      auto words = words_of(section, record, 2);  // symbol index, value
      if (!words) return words.error();
      (*target)[(*words)[0]] = (*words)[1];
    }
  }
  return figures;
}

// Applies the records of .nv.info.<kernel> to `kernel`.
Status read_kernel_info(const Section& section, KernelInfo& kernel) {
  auto records = parse_records(section);
  if (!records) return records.error();
  for (const auto& record : *records) {
    switch (record.attribute) {
      case k_attr_max_threads: {
        // The .maxntid box; what limits a launch is its volume.
        auto box = dim3_of(section, record);
        if (!box) return box.error();
        // x * y fits 64 bits; checked before z multiplies it, which might
        // not (the product would wrap and pass the check).
        const uint64_t area = uint64_t{box->x} * box->y;
        if (area > UINT32_MAX || area * box->z > UINT32_MAX)
          return malformed(describe(section, record) + ": too large");
        const uint64_t volume = area * box->z;
        kernel.max_threads_per_block = static_cast<uint32_t>(volume);
        break;
      }
      case k_attr_reqntid: {
        auto dims = dim3_of(section, record);
        if (!dims) return dims.error();
        kernel.required_threads = *dims;
        break;
      }
      case k_attr_cta_per_cluster: {
        auto dims = dim3_of(section, record);
        if (!dims) return dims.error();
        kernel.cluster_dims = *dims;
        break;
      }
      case k_attr_max_cluster_rank: {
        auto rank = words_of(section, record, 1);
        if (!rank) return rank.error();
        kernel.max_cluster_rank = (*rank)[0];
        break;
      }
      case k_attr_maxreg_count: {
        // The cap ptxas compiled under: .maxnreg, -maxrregcount, or one
        // derived from __launch_bounds__; 0xff is the architecture's own.
        auto cap = half_of(section, record);
        if (!cap) return cap.error();
        kernel.max_registers = *cap == k_no_register_cap ? 0 : *cap;
        break;
      }
      case k_attr_cbank_param_size: {
        auto size = half_of(section, record);
        if (!size) return size.error();
        kernel.param_bytes = *size;
        break;
      }
      default:
        break;  // many more attributes exist; none matter for launching
    }
  }
  return Ok{};
}

Result<bool> compat_says_arch_specific(const ElfImage& image) {
  const Section* compat = image.find(".nv.compat");
  if (!compat) return false;
  auto records = parse_records(*compat);
  if (!records) return records.error();
  for (const auto& record : *records)
    if (record.attribute == k_compat_arch_specific && record.format == k_format_byte) return (record.value & 0xff) != 0;
  return false;
}

// The suffix of the SM ptxas was run for ('a', 'f' or '\0'), from the
// command line it records in the .note.nv.tkinfo note ("-arch sm_100f").
char ptxas_arch_suffix(const ElfImage& image) {
  const Section* note = image.find(".note.nv.tkinfo");
  if (!note) return '\0';
  for (std::string_view option : {"-arch sm_", "-arch=sm_"}) {
    size_t at = note->contents.find(option);
    if (at == std::string_view::npos) continue;
    size_t end = at + option.size();
    while (end < note->contents.size() && std::isdigit(static_cast<unsigned char>(note->contents[end]))) ++end;
    if (end < note->contents.size() && (note->contents[end] == 'a' || note->contents[end] == 'f'))
      return note->contents[end];
    return '\0';
  }
  return '\0';
}

// How much of each .nv.shared.<kernel> section is the driver's reserved
// shared memory rather than the kernel's own variables.
uint32_t reserved_shared_bytes(const ElfImage& image, const std::vector<Symbol>& symbols) {
  bool uses_reserved_layout = false;
  for (const auto& symbol : symbols) {
    if (symbol.name == k_reserved_smem_cap_symbol && symbol.value != 0 && symbol.value <= UINT32_MAX)
      return static_cast<uint32_t>(symbol.value);
    if (symbol.name.starts_with(k_reserved_smem_symbol_prefix)) uses_reserved_layout = true;
  }
  for (const auto& section : image.sections)
    if (section.name.starts_with(k_reserved_shared_section_prefix)) uses_reserved_layout = true;
  return uses_reserved_layout ? k_default_reserved_shared_bytes : 0;
}

}  // namespace

Result<CubinInfo> read_cubin(std::string_view elf_bytes) {
  auto image = parse_elf(elf_bytes);
  if (!image) return image.error();
  auto symbols = read_symbols(*image);
  if (!symbols) return symbols.error();

  CubinInfo info;
  const uint32_t flags = image->header.e_flags;
  const bool abi_v8 = image->header.e_ident[EI_ABIVERSION] >= k_abi_version_sm_in_bits_8_15;
  info.sm = abi_v8 ? (flags >> 8) & 0xff : flags & 0xff;
  if (info.sm == 0) return malformed("e_flags carry no SM number (" + std::to_string(flags) + ")");

  auto compat_arch_specific = compat_says_arch_specific(*image);
  if (!compat_arch_specific) return compat_arch_specific.error();
  info.arch_specific =
      *compat_arch_specific || (flags & (abi_v8 ? k_flag_accelerators_v8 : k_flag_accelerators_v7)) != 0;
  info.family_specific = ptxas_arch_suffix(*image) == 'f';
  info.reserved_shared_bytes = reserved_shared_bytes(*image, *symbols);

  auto per_symbol = read_global_info(*image);
  if (!per_symbol) return per_symbol.error();

  for (const auto& symbol : *symbols) {
    if (symbol.type != STT_FUNC || (symbol.other & k_sto_cuda_entry) == 0) continue;
    if (symbol.name.empty()) return malformed("kernel symbol " + std::to_string(symbol.index) + " has no name");
    KernelInfo kernel;
    kernel.lowered_name = std::string(symbol.name);
    kernel.name = source_name_of(symbol.name);
    if (auto it = per_symbol->registers.find(symbol.index); it != per_symbol->registers.end())
      kernel.registers = it->second;
    if (auto it = per_symbol->frame_bytes.find(symbol.index); it != per_symbol->frame_bytes.end())
      kernel.local_bytes = it->second;

    if (const Section* section = image->find(".nv.info." + kernel.lowered_name)) {
      auto status = read_kernel_info(*section, kernel);
      if (!status) return status.error();
    }
    if (const Section* shared = image->find(".nv.shared." + kernel.lowered_name)) {
      if (shared->header.sh_size > UINT32_MAX) return malformed(std::string(shared->name) + " is larger than 4 GiB");
      kernel.shared_section_bytes = static_cast<uint32_t>(shared->header.sh_size);
      kernel.static_shared_bytes = kernel.shared_section_bytes >= info.reserved_shared_bytes
                                       ? kernel.shared_section_bytes - info.reserved_shared_bytes
                                       : 0;
    }
    info.kernels.push_back(std::move(kernel));
  }
  std::sort(info.kernels.begin(), info.kernels.end(),
            [](const KernelInfo& a, const KernelInfo& b) { return a.lowered_name < b.lowered_name; });
  return info;
}

}  // namespace kjit
