// The ELF header of a cubin, read directly: independent of kjit's cubin
// reader, so tests can check it.
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace kjit::test {

struct ElfHeader {
  bool is_elf64 = false;
  uint16_t machine = 0;
  uint32_t sm = 0;  // bits 8 to 15 of e_flags
};

inline ElfHeader elf_header_of(const std::string& bytes) {
  ElfHeader h;
  if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return h;
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, bytes.data(), sizeof(ehdr));
  h.is_elf64 = ehdr.e_ident[EI_CLASS] == ELFCLASS64;
  h.machine = ehdr.e_machine;
  h.sm = (ehdr.e_flags >> 8) & 0xff;
  return h;
}

}  // namespace kjit::test
