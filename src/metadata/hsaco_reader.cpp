// Code object parsing: the ELF header and section table, the note sections,
// the dynamic symbol table, and the msgpack metadata document in the
// NT_AMDGPU_METADATA note. Every ELF read goes through read_at() / slice(),
// which check bounds; the msgpack decoder runs under limits derived from the
// note's size, and whatever it throws becomes an error.
//
// What was established against code objects built here by llc-19 + ld.lld-19
// for gfx90a, gfx942 and gfx1100, and is asserted by the tests:
// - EI_OSABI is 64 (AMDGPU HSA) and EI_ABIVERSION 3 (code object v5, LLVM
//   19's default); e_flags carry the processor, which the metadata repeats.
// - The metadata is the only note in section ".note"; the document is a map
//   with "amdhsa.version" ([1, 2]), "amdhsa.target" ("amdgcn-amd-amdhsa--gfx90a"
//   when no feature is pinned) and "amdhsa.kernels", one map per kernel.
// - Each kernel map has ".name", ".symbol" ("<name>.kd", an STT_OBJECT in
//   .dynsym and .symtab), ".group_segment_fixed_size",
//   ".private_segment_fixed_size", ".kernarg_segment_size", ".vgpr_count",
//   ".sgpr_count", ".max_flat_workgroup_size" and ".wavefront_size", all
//   unsigned; ".reqd_workgroup_size" ([x, y, z]) only for kernels with
//   !reqd_work_group_size, which leaves ".max_flat_workgroup_size" at 1024.
#include "metadata/hsaco_reader.h"

#include <elf.h>

#include <algorithm>
#include <exception>
#include <msgpack.hpp>
#include <optional>
#include <unordered_set>
#include <utility>

#include "metadata/elf_image.h"
#include "metadata/kernel_name.h"

namespace kjit {
namespace {

constexpr uint16_t k_em_amdgpu = 224;                // EM_AMDGPU
constexpr unsigned char k_osabi_amdgpu_hsa = 64;     // ELFOSABI_AMDGPU_HSA
constexpr uint32_t k_nt_amdgpu_metadata = 32;        // NT_AMDGPU_METADATA
constexpr std::string_view k_note_owner = "AMDGPU";  // the note's name, without its NUL
// EI_ABIVERSION 0 is code object v2, whose metadata is YAML in another note;
// from 1 on, the code object version is the ABI version plus 2.
constexpr unsigned char k_first_msgpack_abi_version = 1;
constexpr uint32_t k_abi_to_code_object_version = 2;

constexpr std::string_view k_target_prefix = "amdgcn-amd-amdhsa--";

// The document is at most six containers deep (root map, kernel list, kernel
// map, argument list, argument map, a value's array); a little slack, no more:
// each open container may hold an allocation of up to k_max_elements.
constexpr size_t k_max_depth = 8;
// More kernels or arguments than any real code object has; it bounds what
// one array or map header can make the decoder allocate up front.
constexpr size_t k_max_elements = size_t{1} << 16;

constexpr ElfExpectation k_hsaco_elf{"hsaco", k_em_amdgpu, "AMDGPU", /*section_names_required=*/false};

Error malformed(std::string message) {
  return malformed_elf(k_hsaco_elf.reader, std::move(message));
}

// The code object's own header checks, made after the shared ones on the
// identification and machine and before the section table is read.
Status check_amdgpu_header(const Elf64_Ehdr& header) {
  if (header.e_ident[EI_OSABI] != k_osabi_amdgpu_hsa)
    return malformed("ELF OS ABI " + std::to_string(header.e_ident[EI_OSABI]) + ", not AMDGPU HSA (" +
                     std::to_string(k_osabi_amdgpu_hsa) + ")");
  if (header.e_ident[EI_ABIVERSION] < k_first_msgpack_abi_version)
    return malformed("code object v2 or older (ELF ABI version " + std::to_string(header.e_ident[EI_ABIVERSION]) +
                     "), whose metadata is not msgpack");
  return Ok{};
}

// The names of the kernel descriptors the loader can find: defined
// STT_OBJECT symbols of .dynsym, or of .symtab in an object without one.
Result<std::unordered_set<std::string_view>> descriptor_symbols(const ElfImage& image) {
  const ElfSection* table = nullptr;
  for (uint32_t type : {SHT_DYNSYM, SHT_SYMTAB}) {
    for (const auto& section : image.sections) {
      if (section.header.sh_type != type) continue;
      if (table) return malformed("more than one symbol table of type " + std::to_string(type));
      table = &section;
    }
    if (table) break;
  }
  if (!table) return malformed("no symbol table");
  auto entries = read_elf_symbols(image, *table, k_hsaco_elf.reader);
  if (!entries) return entries.error();

  std::unordered_set<std::string_view> symbols;
  for (const ElfSymbol& entry : *entries)
    if (ELF64_ST_TYPE(entry.raw.st_info) == STT_OBJECT && entry.raw.st_shndx != SHN_UNDEF && !entry.name.empty())
      symbols.insert(entry.name);
  return symbols;
}

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// The descriptor of the one NT_AMDGPU_METADATA note among the note sections.
Result<std::string_view> metadata_note(const ElfImage& image) {
  std::optional<std::string_view> found;
  for (size_t index = 0; index < image.sections.size(); ++index) {
    const ElfSection& section = image.sections[index];
    if (section.header.sh_type != SHT_NOTE) continue;
    const std::string where = "note section " + std::to_string(index);
    // Entries are padded to the section's alignment: 4, or 8 for some
    // 64-bit notes (GNU properties).
    const uint64_t alignment = section.header.sh_addralign == 8 ? 8 : 4;
    std::string_view bytes = section.contents;
    uint64_t offset = 0;
    while (offset < bytes.size()) {
      Elf64_Nhdr note{};
      if (!read_at(bytes, offset, note))
        return malformed(where + ": truncated note header at offset " + std::to_string(offset));
      const uint64_t name_offset = offset + sizeof(Elf64_Nhdr);
      const uint64_t desc_offset = name_offset + align_up(note.n_namesz, alignment);
      auto name = slice(bytes, name_offset, note.n_namesz);
      auto desc = slice(bytes, desc_offset, note.n_descsz);
      if (!name || !desc)
        return malformed(where + ": note at offset " + std::to_string(offset) + " (name " +
                         std::to_string(note.n_namesz) + " bytes, descriptor " + std::to_string(note.n_descsz) +
                         " bytes) runs past the end of the section");
      offset = desc_offset + align_up(note.n_descsz, alignment);
      if (!name->empty() && name->back() == '\0') name->remove_suffix(1);
      if (*name != k_note_owner || note.n_type != k_nt_amdgpu_metadata) continue;
      if (found) return malformed("more than one NT_AMDGPU_METADATA note");
      found = *desc;
    }
  }
  if (!found) return malformed("no NT_AMDGPU_METADATA note (owner \"AMDGPU\", type 32)");
  return *found;
}

std::string_view text_of(const msgpack::object& object) {
  return object.via.str.size == 0 ? std::string_view() : std::string_view(object.via.str.ptr, object.via.str.size);
}

// The value of `key` in the map `map`, nullptr where absent. A key given
// twice is an error: which of the two the runtime would use is unknowable.
Result<const msgpack::object*> find_key(const msgpack::object& map, std::string_view key, const std::string& where) {
  const msgpack::object* value = nullptr;
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv& entry = map.via.map.ptr[i];
    if (entry.key.type != msgpack::type::STR || text_of(entry.key) != key) continue;
    if (value) return malformed(where + ": key \"" + std::string(key) + "\" appears twice");
    value = &entry.val;
  }
  return value;
}

Result<const msgpack::object*> require_key(const msgpack::object& map, std::string_view key, const std::string& where) {
  auto value = find_key(map, key, where);
  if (!value) return value.error();
  if (!*value) return malformed(where + ": no \"" + std::string(key) + "\"");
  return *value;
}

Result<std::string_view> string_of(const msgpack::object& value, std::string_view key, const std::string& where) {
  if (value.type != msgpack::type::STR) return malformed(where + ": \"" + std::string(key) + "\" is not a string");
  if (text_of(value).empty()) return malformed(where + ": \"" + std::string(key) + "\" is empty");
  return text_of(value);
}

// A 32-bit unsigned value, whichever msgpack integer encoding holds it.
Result<uint32_t> u32_of(const msgpack::object& value, std::string_view key, const std::string& where) {
  if (value.type == msgpack::type::NEGATIVE_INTEGER)
    return malformed(where + ": \"" + std::string(key) + "\" is negative (" + std::to_string(value.via.i64) + ")");
  if (value.type != msgpack::type::POSITIVE_INTEGER)
    return malformed(where + ": \"" + std::string(key) + "\" is not an integer");
  if (value.via.u64 > UINT32_MAX)
    return malformed(where + ": \"" + std::string(key) + "\" is too large (" + std::to_string(value.via.u64) + ")");
  return static_cast<uint32_t>(value.via.u64);
}

Result<uint32_t> required_u32(const msgpack::object& map, std::string_view key, const std::string& where) {
  auto value = require_key(map, key, where);
  if (!value) return value.error();
  return u32_of(**value, key, where);
}

Result<Dim3> dim3_of(const msgpack::object& value, std::string_view key, const std::string& where) {
  if (value.type != msgpack::type::ARRAY || value.via.array.size != 3)
    return malformed(where + ": \"" + std::string(key) + "\" is not an array of 3 integers");
  uint32_t dims[3] = {};
  for (uint32_t i = 0; i < 3; ++i) {
    auto dim = u32_of(value.via.array.ptr[i], key, where);
    if (!dim) return dim.error();
    dims[i] = *dim;
  }
  return Dim3{dims[0], dims[1], dims[2]};
}

Result<KernelInfo> read_kernel(const msgpack::object& entry, size_t index,
                               const std::unordered_set<std::string_view>& descriptors) {
  std::string where = "amdhsa.kernels[" + std::to_string(index) + "]";
  if (entry.type != msgpack::type::MAP) return malformed(where + " is not a map");

  auto name_value = require_key(entry, ".name", where);
  if (!name_value) return name_value.error();
  auto name = string_of(**name_value, ".name", where);
  if (!name) return name.error();
  where += " (" + std::string(*name) + ")";

  // The kernel descriptor is what the runtime looks up to launch the kernel:
  // metadata that names one the ELF lacks describes a kernel nobody can run.
  auto symbol_value = require_key(entry, ".symbol", where);
  if (!symbol_value) return symbol_value.error();
  auto symbol = string_of(**symbol_value, ".symbol", where);
  if (!symbol) return symbol.error();
  if (!descriptors.contains(*symbol))
    return malformed(where + ": kernel descriptor \"" + std::string(*symbol) + "\" is not a defined symbol");

  KernelInfo kernel;
  kernel.lowered_name = std::string(*name);
  kernel.name = source_name_of(*name);
  const std::pair<std::string_view, uint32_t KernelInfo::*> fields[] = {
      {".group_segment_fixed_size", &KernelInfo::static_shared_bytes},
      {".private_segment_fixed_size", &KernelInfo::local_bytes},
      {".kernarg_segment_size", &KernelInfo::param_bytes},
      {".vgpr_count", &KernelInfo::registers},
      {".sgpr_count", &KernelInfo::scalar_registers},
      {".max_flat_workgroup_size", &KernelInfo::max_threads_per_block},
      {".wavefront_size", &KernelInfo::wavefront_size},
  };
  for (const auto& [key, member] : fields) {
    auto value = required_u32(entry, key, where);
    if (!value) return value.error();
    kernel.*member = *value;
  }

  auto required_threads = find_key(entry, ".reqd_workgroup_size", where);
  if (!required_threads) return required_threads.error();
  if (*required_threads) {
    auto dims = dim3_of(**required_threads, ".reqd_workgroup_size", where);
    if (!dims) return dims.error();
    kernel.required_threads = *dims;
  }
  return kernel;
}

// "amdgcn-amd-amdhsa--gfx90a:xnack-" -> "gfx90a". Newer LLVMs (Triton's own)
// spell the architecture and environment into the id instead:
// "amdgpu9.42-amd-amdhsa-unknown-gfx942".
constexpr std::string_view k_newer_target_infix = "-amd-amdhsa-";
Result<std::string> processor_of(std::string_view target_id) {
  std::string_view processor;
  if (target_id.starts_with(k_target_prefix)) {
    processor = target_id.substr(k_target_prefix.size());
  } else if (target_id.starts_with("amdgpu") && target_id.find(k_newer_target_infix) != std::string_view::npos) {
    processor = target_id.substr(0, target_id.find(':'));
    processor = processor.substr(processor.rfind('-') + 1);
  } else {
    return malformed("amdhsa.target \"" + std::string(target_id) + "\" does not start with \"" +
                     std::string(k_target_prefix) + "\"");
  }
  processor = processor.substr(0, processor.find(':'));
  if (!processor.starts_with("gfx") || processor.size() == 3)
    return malformed("amdhsa.target \"" + std::string(target_id) + "\" names no gfx processor");
  return std::string(processor);
}

Status read_document(const msgpack::object& root, const std::unordered_set<std::string_view>& descriptors,
                     HsacoInfo& info) {
  const std::string where = "metadata";
  if (root.type != msgpack::type::MAP) return malformed("metadata is not a msgpack map");

  auto target_value = require_key(root, "amdhsa.target", where);
  if (!target_value) return target_value.error();
  auto target_id = string_of(**target_value, "amdhsa.target", where);
  if (!target_id) return target_id.error();
  auto processor = processor_of(*target_id);
  if (!processor) return processor.error();
  info.target_id = std::string(*target_id);
  info.processor = std::move(*processor);

  auto kernels = require_key(root, "amdhsa.kernels", where);
  if (!kernels) return kernels.error();
  if ((*kernels)->type != msgpack::type::ARRAY) return malformed("metadata: \"amdhsa.kernels\" is not an array");
  const msgpack::object_array& entries = (*kernels)->via.array;
  info.kernels.reserve(entries.size);
  for (uint32_t i = 0; i < entries.size; ++i) {
    auto kernel = read_kernel(entries.ptr[i], i, descriptors);
    if (!kernel) return kernel.error();
    info.kernels.push_back(std::move(*kernel));
  }
  std::sort(info.kernels.begin(), info.kernels.end(),
            [](const KernelInfo& a, const KernelInfo& b) { return a.lowered_name < b.lowered_name; });
  for (size_t i = 1; i < info.kernels.size(); ++i)
    if (info.kernels[i - 1].lowered_name == info.kernels[i].lowered_name)
      return malformed("metadata: kernel \"" + info.kernels[i].lowered_name + "\" is listed twice");
  return Ok{};
}

// Decodes the note's msgpack document and reads it into `info`. Everything
// that touches msgpack objects runs inside the try: the decoder reports bad
// data (and allocation failure) by throwing.
Status read_metadata(std::string_view note, const std::unordered_set<std::string_view>& descriptors, HsacoInfo& info) {
  // An element takes at least one byte of the note, so no honest container
  // declares more elements than the note has bytes.
  const size_t elements = std::min(note.size(), k_max_elements);
  const msgpack::unpack_limit limit(elements, elements, note.size(), note.size(), note.size(), k_max_depth);
  try {
    size_t offset = 0;
    msgpack::object_handle handle = msgpack::unpack(note.data(), note.size(), offset, nullptr, nullptr, limit);
    // LLVM writes the document alone; NUL padding after it is harmless.
    if (note.find_first_not_of('\0', offset) != std::string_view::npos)
      return malformed("metadata note has " + std::to_string(note.size() - offset) +
                       " bytes after its msgpack document");
    return read_document(handle.get(), descriptors, info);
  } catch (const std::exception& error) {
    return malformed(std::string("metadata note is not valid msgpack: ") + error.what());
  } catch (...) {
    return malformed("metadata note is not valid msgpack");
  }
}

}  // namespace

Result<HsacoInfo> read_hsaco(std::string_view bytes) {
  auto header = read_elf_header(bytes, k_hsaco_elf);
  if (!header) return header.error();
  auto amdgpu_header = check_amdgpu_header(*header);
  if (!amdgpu_header) return amdgpu_header.error();
  auto image = read_elf_image(bytes, *header, k_hsaco_elf);
  if (!image) return image.error();
  auto note = metadata_note(*image);
  if (!note) return note.error();
  auto descriptors = descriptor_symbols(*image);
  if (!descriptors) return descriptors.error();

  HsacoInfo info;
  info.code_object_version = uint32_t{image->header.e_ident[EI_ABIVERSION]} + k_abi_to_code_object_version;
  auto status = read_metadata(*note, *descriptors, info);
  if (!status) return status.error();
  return info;
}

}  // namespace kjit
