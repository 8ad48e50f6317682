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
#include <cctype>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/hex.h"
#include "metadata/elf_image.h"
#include "metadata/kernel_name.h"

namespace kjit {
namespace {

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

constexpr ElfExpectation k_cubin_elf{"cubin", k_em_cuda, "NVIDIA CUDA", /*section_names_required=*/true};

Error malformed(std::string message) {
  return malformed_elf(k_cubin_elf.reader, std::move(message));
}

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

Result<std::vector<Symbol>> read_symbols(const ElfImage& image) {
  const ElfSection* table = nullptr;
  for (const auto& section : image.sections) {
    if (section.header.sh_type != SHT_SYMTAB) continue;
    if (table) return malformed("more than one symbol table");
    table = &section;
  }
  if (!table) return malformed("no symbol table");
  auto entries = read_elf_symbols(image, *table, k_cubin_elf.reader);
  if (!entries) return entries.error();

  std::vector<Symbol> symbols;
  symbols.reserve(entries->size());
  for (size_t i = 0; i < entries->size(); ++i) {
    const ElfSymbol& entry = (*entries)[i];
    symbols.push_back(Symbol{static_cast<uint32_t>(i), entry.name,
                             static_cast<unsigned char>(ELF64_ST_TYPE(entry.raw.st_info)), entry.raw.st_other,
                             entry.raw.st_value});
  }
  return symbols;
}

Result<std::vector<InfoRecord>> parse_records(const ElfSection& section) {
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

std::string describe(const ElfSection& section, const InfoRecord& record) {
  return "record 0x" + hex_lower(&record.attribute, 1) + " in " + std::string(section.name);
}

// Reads the u32 words of a sized record that must hold exactly `count` of them.
Result<std::vector<uint32_t>> words_of(const ElfSection& section, const InfoRecord& record, size_t count) {
  if (record.format != k_format_sized || record.payload.size() != count * sizeof(uint32_t))
    return malformed(describe(section, record) + ": expected " + std::to_string(count * sizeof(uint32_t)) +
                     "-byte payload");
  std::vector<uint32_t> words(count);
  for (size_t i = 0; i < count; ++i) read_at(record.payload, i * sizeof(uint32_t), words[i]);
  return words;
}

Result<Dim3> dim3_of(const ElfSection& section, const InfoRecord& record) {
  auto words = words_of(section, record, 3);
  if (!words) return words.error();
  return Dim3{(*words)[0], (*words)[1], (*words)[2]};
}

Result<uint16_t> half_of(const ElfSection& section, const InfoRecord& record) {
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
Status read_kernel_info(const ElfSection& section, KernelInfo& kernel) {
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
  const ElfSection* compat = image.find(".nv.compat");
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
  const ElfSection* note = image.find(".note.nv.tkinfo");
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
  auto header = read_elf_header(elf_bytes, k_cubin_elf);
  if (!header) return header.error();
  auto image = read_elf_image(elf_bytes, *header, k_cubin_elf);
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

    if (const ElfSection* section = image->find(".nv.info." + kernel.lowered_name)) {
      auto status = read_kernel_info(*section, kernel);
      if (!status) return status.error();
    }
    if (const ElfSection* shared = image->find(".nv.shared." + kernel.lowered_name)) {
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
