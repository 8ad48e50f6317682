// Checks an ELF image's structure once, for the cubin and code object readers.
#include "metadata/elf_image.h"

#include <string>
#include <utility>

namespace kjit {

const ElfSection* ElfImage::find(std::string_view name) const {
  auto it = index_by_name.find(name);
  return it == index_by_name.end() ? nullptr : &sections[it->second];
}

Error malformed_elf(std::string_view reader, std::string message) {
  return make_error(ErrorCode::invalid_argument, std::string(reader) + ": " + std::move(message));
}

std::optional<std::string_view> slice(std::string_view bytes, uint64_t offset, uint64_t size) {
  if (offset > bytes.size() || bytes.size() - offset < size) return std::nullopt;
  return bytes.substr(offset, size);
}

std::optional<std::string_view> string_at(std::string_view table, uint64_t offset) {
  if (offset >= table.size()) return std::nullopt;
  size_t end = table.find('\0', offset);
  if (end == std::string_view::npos) return std::nullopt;
  return table.substr(offset, end - offset);
}

Result<Elf64_Ehdr> read_elf_header(std::string_view bytes, const ElfExpectation& expected) {
  auto malformed = [&](std::string message) { return malformed_elf(expected.reader, std::move(message)); };
  Elf64_Ehdr header{};
  if (bytes.size() < SELFMAG || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return malformed("not an ELF file (no \\x7fELF magic)");
  if (!read_at(bytes, 0, header)) return malformed("truncated ELF header (" + std::to_string(bytes.size()) + " bytes)");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
    return malformed("not a 64-bit little-endian ELF");
  if (header.e_machine != expected.machine)
    return malformed("ELF for machine " + std::to_string(header.e_machine) + ", not " +
                     std::string(expected.machine_name) + " (" + std::to_string(expected.machine) + ")");
  return header;
}

Result<ElfImage> read_elf_image(std::string_view bytes, const Elf64_Ehdr& header, const ElfExpectation& expected) {
  auto malformed = [&](std::string message) { return malformed_elf(expected.reader, std::move(message)); };
  if (header.e_shnum == 0) return malformed("no section headers");
  if (header.e_shentsize != sizeof(Elf64_Shdr))
    return malformed("section header entry size " + std::to_string(header.e_shentsize) + ", expected " +
                     std::to_string(sizeof(Elf64_Shdr)));
  if (expected.section_names_required && header.e_shstrndx >= header.e_shnum)
    return malformed("section name table index " + std::to_string(header.e_shstrndx) + " is out of range");

  const uint64_t table_size = uint64_t{header.e_shnum} * sizeof(Elf64_Shdr);
  if (!slice(bytes, header.e_shoff, table_size))
    return malformed("section header table (" + std::to_string(header.e_shnum) + " entries at offset " +
                     std::to_string(header.e_shoff) + ") runs past the end of the " + std::to_string(bytes.size()) +
                     "-byte input");

  // Program headers are not read, but loaders map the image by them: one
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

  ElfImage image;
  image.header = header;
  image.sections.resize(header.e_shnum);
  for (size_t i = 0; i < image.sections.size(); ++i) {
    ElfSection& section = image.sections[i];
    read_at(bytes, header.e_shoff + i * sizeof(Elf64_Shdr), section.header);
    if (section.header.sh_type == SHT_NOBITS) continue;  // occupies no file bytes
    auto contents = slice(bytes, section.header.sh_offset, section.header.sh_size);
    if (!contents)
      return malformed("section " + std::to_string(i) + " (offset " + std::to_string(section.header.sh_offset) +
                       ", size " + std::to_string(section.header.sh_size) + ") runs past the end of the " +
                       std::to_string(bytes.size()) + "-byte input");
    section.contents = *contents;
  }
  if (!expected.section_names_required) return image;

  std::string_view names = image.sections[header.e_shstrndx].contents;
  for (size_t i = 0; i < image.sections.size(); ++i) {
    auto name = string_at(names, image.sections[i].header.sh_name);
    if (!name && i != 0) return malformed("section " + std::to_string(i) + " has no valid name");
    image.sections[i].name = name.value_or("");
    image.index_by_name.emplace(image.sections[i].name, i);
  }
  return image;
}

Result<std::vector<ElfSymbol>> read_elf_symbols(const ElfImage& image, const ElfSection& table,
                                                std::string_view reader) {
  auto malformed = [&](std::string message) { return malformed_elf(reader, std::move(message)); };
  if (table.header.sh_entsize != sizeof(Elf64_Sym) || table.contents.size() % sizeof(Elf64_Sym) != 0)
    return malformed("symbol table entry size " + std::to_string(table.header.sh_entsize) + " or table size " +
                     std::to_string(table.contents.size()) + " does not fit " + std::to_string(sizeof(Elf64_Sym)) +
                     "-byte entries");
  if (table.header.sh_link >= image.sections.size())
    return malformed("symbol table names a string table that does not exist");
  std::string_view names = image.sections[table.header.sh_link].contents;

  std::vector<ElfSymbol> symbols(table.contents.size() / sizeof(Elf64_Sym));
  for (size_t i = 0; i < symbols.size(); ++i) {
    read_at(table.contents, i * sizeof(Elf64_Sym), symbols[i].raw);
    auto name = string_at(names, symbols[i].raw.st_name);
    if (!name && symbols[i].raw.st_name != 0)
      return malformed("symbol " + std::to_string(i) + " has a name outside the string table");
    symbols[i].name = name.value_or("");
  }
  return symbols;
}

}  // namespace kjit
