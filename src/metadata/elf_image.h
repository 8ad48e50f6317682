// The ELF checks both code-object readers share: header, section table,
// program headers and section contents, each bounds-checked against the input,
// plus the bounds-checked accessors the readers use for what lies inside.
// Stateless; safe to call from any thread. A failure is an invalid_argument
// Error whose message starts with the reader's name.
#pragma once

#include <elf.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kjit/status.h"

namespace kjit {

static_assert(std::endian::native == std::endian::little, "the readers copy little-endian ELF structures as they are");

struct ElfSection {
  Elf64_Shdr header{};
  std::string_view contents;  // empty for SHT_NOBITS
  std::string_view name;      // empty unless section names were read
};

// The ELF header and section table, checked once so that later lookups only
// deal in validated sections.
struct ElfImage {
  Elf64_Ehdr header{};
  std::vector<ElfSection> sections;
  std::unordered_map<std::string_view, size_t> index_by_name;  // first of each name; empty unless names were read

  const ElfSection* find(std::string_view name) const;
};

struct ElfSymbol {
  Elf64_Sym raw{};
  std::string_view name;  // empty where st_name is 0
};

// What a reader accepts, and how its errors read.
struct ElfExpectation {
  std::string_view reader;        // "cubin", "hsaco": the prefix of every error message
  uint16_t machine = 0;           // e_machine
  std::string_view machine_name;  // "NVIDIA CUDA", "AMDGPU"
  // Whether e_shstrndx must name a section and every section but the first a
  // valid name in it; the names then fill ElfSection::name and index_by_name.
  bool section_names_required = false;
};

// The invalid_argument Error a reader returns for bad input: "<reader>: <message>".
Error malformed_elf(std::string_view reader, std::string message);

// Checks the identification and machine of the header at the start of `bytes`.
Result<Elf64_Ehdr> read_elf_header(std::string_view bytes, const ElfExpectation& expected);

// Checks that the section header table, the program header table, every
// segment and every section lie inside `bytes`, and reads the sections (and
// their names, when expected). `header` is what read_elf_header returned; a
// reader's own header checks go between the two calls.
Result<ElfImage> read_elf_image(std::string_view bytes, const Elf64_Ehdr& header, const ElfExpectation& expected);

// The entries of the symbol table `table` of `image`, with their names from
// the string table its sh_link names; `reader` prefixes error messages.
Result<std::vector<ElfSymbol>> read_elf_symbols(const ElfImage& image, const ElfSection& table,
                                                std::string_view reader);

// Copies a T from `bytes` at `offset`; false if it does not fit.
template <typename T>
bool read_at(std::string_view bytes, uint64_t offset, T& out) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

// The `size` bytes at `offset`; nullopt if they do not fit.
std::optional<std::string_view> slice(std::string_view bytes, uint64_t offset, uint64_t size);

// The NUL-terminated string at `offset` in a string table.
std::optional<std::string_view> string_at(std::string_view table, uint64_t offset);

}  // namespace kjit
