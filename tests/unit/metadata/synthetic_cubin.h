// Test support: builds small cubin-shaped ELF images by hand, so the reader's
// parsing and its failure paths are tested on any host, toolkit or not.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace kjit::testing {

// .nv.info records, encoded as ptxas writes them.
std::string sized_record(uint8_t attribute, std::initializer_list<uint32_t> words);
std::string half_record(uint8_t attribute, uint16_t value);
std::string byte_record(uint8_t attribute, uint8_t value);

class SyntheticCubin {
 public:
  // ABI version 8 keeps the SM in e_flags bits 8-15, version 7 in bits 0-7.
  SyntheticCubin& header(uint16_t machine, uint32_t e_flags, uint8_t abi_version);
  // A kernel symbol (STT_FUNC, st_other 0x10) with a .text.<name> section;
  // returns its symbol index, which global .nv.info records refer to.
  uint32_t add_kernel(const std::string& name);
  // A device function: STT_FUNC without the entry bit.
  uint32_t add_function(const std::string& name);
  void add_object_symbol(const std::string& name, uint64_t value);
  // A section with file contents, and an SHT_NOBITS one of `size` bytes.
  void add_section(const std::string& name, uint32_t type, const std::string& contents);
  void add_nobits_section(const std::string& name, uint64_t size);

  std::string build() const;

 private:
  struct SectionSpec {
    std::string name;
    uint32_t type;
    std::string contents;
    uint64_t nobits_size;
  };
  struct SymbolSpec {
    std::string name;
    unsigned char info;
    unsigned char other;
    uint64_t value;
  };
  uint16_t machine_ = 190;
  uint32_t e_flags_ = 90u << 8;
  uint8_t abi_version_ = 8;
  std::vector<SectionSpec> sections_;
  std::vector<SymbolSpec> symbols_ = {{"", 0, 0, 0}};
};

}  // namespace kjit::testing
