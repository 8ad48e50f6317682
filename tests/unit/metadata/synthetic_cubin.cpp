// Lays out: ELF header, then each section's bytes, then the section table.
// Section 1 is .shstrtab, 2 .strtab, 3 .symtab, then what the test added.
#include "synthetic_cubin.h"

#include <elf.h>

#include <cstring>

namespace kjit::testing {
namespace {

template <typename T>
void append(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

uint32_t add_string(std::string& table, const std::string& text) {
  auto offset = static_cast<uint32_t>(table.size());
  table += text;
  table += '\0';
  return offset;
}

std::string record_header(uint8_t format, uint8_t attribute, uint16_t value) {
  std::string out;
  append(out, format);
  append(out, attribute);
  append(out, value);
  return out;
}

}  // namespace

std::string sized_record(uint8_t attribute, std::initializer_list<uint32_t> words) {
  std::string out = record_header(0x04, attribute, static_cast<uint16_t>(words.size() * 4));
  for (uint32_t word : words) append(out, word);
  return out;
}

std::string half_record(uint8_t attribute, uint16_t value) {
  return record_header(0x03, attribute, value);
}

std::string byte_record(uint8_t attribute, uint8_t value) {
  return record_header(0x02, attribute, value);
}

SyntheticCubin& SyntheticCubin::header(uint16_t machine, uint32_t e_flags, uint8_t abi_version) {
  machine_ = machine;
  e_flags_ = e_flags;
  abi_version_ = abi_version;
  return *this;
}

uint32_t SyntheticCubin::add_kernel(const std::string& name) {
  add_section(".text." + name, SHT_PROGBITS, std::string(16, '\0'));
  symbols_.push_back({name, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0x10, 0});
  return static_cast<uint32_t>(symbols_.size() - 1);
}

uint32_t SyntheticCubin::add_function(const std::string& name) {
  add_section(".text." + name, SHT_PROGBITS, std::string(16, '\0'));
  symbols_.push_back({name, ELF64_ST_INFO(STB_LOCAL, STT_FUNC), 0, 0});
  return static_cast<uint32_t>(symbols_.size() - 1);
}

void SyntheticCubin::add_object_symbol(const std::string& name, uint64_t value) {
  symbols_.push_back({name, ELF64_ST_INFO(STB_WEAK, STT_OBJECT), 0, value});
}

void SyntheticCubin::add_section(const std::string& name, uint32_t type, const std::string& contents) {
  sections_.push_back({name, type, contents, 0});
}

void SyntheticCubin::add_nobits_section(const std::string& name, uint64_t size) {
  sections_.push_back({name, SHT_NOBITS, {}, size});
}

std::string SyntheticCubin::build() const {
  std::string section_names(1, '\0');
  std::string symbol_names(1, '\0');
  std::string symbol_table;
  for (const auto& symbol : symbols_) {
    Elf64_Sym raw{};
    raw.st_name = symbol.name.empty() ? 0 : add_string(symbol_names, symbol.name);
    raw.st_info = symbol.info;
    raw.st_other = symbol.other;
    raw.st_value = symbol.value;
    append(symbol_table, raw);
  }

  std::vector<SectionSpec> all = {{"", SHT_NULL, {}, 0},
                                  {".shstrtab", SHT_STRTAB, {}, 0},
                                  {".strtab", SHT_STRTAB, symbol_names, 0},
                                  {".symtab", SHT_SYMTAB, symbol_table, 0}};
  all.insert(all.end(), sections_.begin(), sections_.end());
  std::vector<uint32_t> name_offsets;
  for (const auto& section : all)
    name_offsets.push_back(section.name.empty() ? 0 : add_string(section_names, section.name));
  all[1].contents = section_names;

  std::string out(sizeof(Elf64_Ehdr), '\0');
  std::vector<Elf64_Shdr> headers;
  for (size_t i = 0; i < all.size(); ++i) {
    Elf64_Shdr header{};
    header.sh_name = name_offsets[i];
    header.sh_type = all[i].type;
    header.sh_offset = all[i].type == SHT_NULL ? 0 : out.size();
    header.sh_size = all[i].type == SHT_NOBITS ? all[i].nobits_size : all[i].contents.size();
    if (all[i].type == SHT_SYMTAB) {
      header.sh_entsize = sizeof(Elf64_Sym);
      header.sh_link = 2;
    }
    out += all[i].contents;
    headers.push_back(header);
  }
  const uint64_t section_table_offset = out.size();
  for (const auto& header : headers) append(out, header);

  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_ident[EI_OSABI] = 0x41;
  header.e_ident[EI_ABIVERSION] = abi_version_;
  header.e_type = ET_EXEC;
  header.e_machine = machine_;
  header.e_version = EV_CURRENT;
  header.e_flags = e_flags_;
  header.e_ehsize = sizeof(Elf64_Ehdr);
  header.e_shoff = section_table_offset;
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = static_cast<uint16_t>(headers.size());
  header.e_shstrndx = 1;
  std::memcpy(out.data(), &header, sizeof(header));
  return out;
}

}  // namespace kjit::testing
