#include "backends/amdgpu/hsaco_link.h"

#include <lld/Common/CommonLinkerContext.h>
#include <lld/Common/Driver.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <vector>

#include "backends/llvm/llvm_module.h"

LLD_HAS_DRIVER(elf)

namespace kjit {
namespace {

std::mutex g_lld_mutex;
bool g_lld_spent = false;  // lld cannot run again in this process; guarded by g_lld_mutex

// After one of lld's fatal errors (an input it cannot read), lldMain returns
// without freeing its context, which also resets the ELF driver's globals,
// and says it cannot run again. A fatal error is an orderly exit through
// crash recovery, so the context is whole: freeing it, as lldMain does after
// any other link, lets lld run again. After a crash (a signal, code 128 and
// up) memory may be corrupt, and lld is not run again.
bool recover_after_fatal_error(int exit_code) {
  if (exit_code >= 128) return false;
  llvm::CrashRecoveryContext recovery;
  return recovery.RunSafely([] { lld::CommonLinkerContext::destroy(); });
}

// A directory only this process uses, removed with everything in it.
class PrivateDirectory {
 public:
  static Result<PrivateDirectory> create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kjit-hsaco-XXXXXX";
    std::vector<char> path(pattern.begin(), pattern.end());
    path.push_back('\0');
    if (!mkdtemp(path.data())) {
      return make_error(ErrorCode::internal,
                        "hsaco-link: cannot create a directory like " + pattern + ": " + std::strerror(errno));
    }
    return PrivateDirectory(path.data());
  }
  PrivateDirectory(PrivateDirectory&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  PrivateDirectory& operator=(PrivateDirectory&&) = delete;
  ~PrivateDirectory() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  explicit PrivateDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

Status write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return make_error(ErrorCode::internal, "hsaco-link: cannot write " + path + ": " + std::strerror(errno));
  return Ok{};
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint16_t read_u16_le(std::string_view bytes, size_t at) {
  return static_cast<uint16_t>(static_cast<unsigned char>(bytes[at]) |
                               (static_cast<unsigned char>(bytes[at + 1]) << 8));
}

bool is_amdgpu_relocatable(std::string_view object) {
  return object.size() >= sizeof(llvm::ELF::Elf64_Ehdr) &&
         object.substr(0, 4) ==
             "\x7f"
             "ELF" &&
         object[llvm::ELF::EI_CLASS] == llvm::ELF::ELFCLASS64 && object[llvm::ELF::EI_DATA] == llvm::ELF::ELFDATA2LSB &&
         read_u16_le(object, offsetof(llvm::ELF::Elf64_Ehdr, e_type)) == llvm::ELF::ET_REL &&
         read_u16_le(object, offsetof(llvm::ELF::Elf64_Ehdr, e_machine)) == llvm::ELF::EM_AMDGPU;
}

// The bytes an AMDGPU relocation writes.
uint64_t relocation_width(uint32_t type) {
  switch (type) {
    case llvm::ELF::R_AMDGPU_NONE:
      return 0;
    case llvm::ELF::R_AMDGPU_REL16:
      return 2;
    case llvm::ELF::R_AMDGPU_ABS64:
    case llvm::ELF::R_AMDGPU_REL64:
    case llvm::ELF::R_AMDGPU_RELATIVE64:
      return 8;
    default:
      return 4;
  }
}

// lld ends in a fatal error on an object whose structure it cannot read, and
// after one it cannot run again in this process. LLVM's ELF reader finds the
// same faults and returns them, so the object is read here first, as far as
// lld reads it: the section table and names, contents, symbols and their
// names and sections, relocations and their symbols, section groups.
Status check_object(std::string_view object, std::string_view name) {
  using Elf = llvm::object::ELF64LEFile;
  auto refuse = [&](const std::string& why) {
    return make_error(ErrorCode::invalid_argument, "hsaco-link: " + std::string(name) + " " + why);
  };
  auto malformed = [&](llvm::Error error) {
    return refuse("is not a well-formed ELF object: " + llvm::toString(std::move(error)));
  };
  if (!is_amdgpu_relocatable(object)) return refuse("is not an AMDGPU ELF relocatable object");
  llvm::Expected<Elf> file = Elf::create(llvm::StringRef(object.data(), object.size()));
  if (!file) return malformed(file.takeError());
  auto sections = file->sections();
  if (!sections) return malformed(sections.takeError());
  const size_t section_count = sections->size();
  size_t symbol_count = 0;
  for (const Elf::Elf_Shdr& section : *sections) {
    if (auto section_name = file->getSectionName(section); !section_name) return malformed(section_name.takeError());
    if (section.sh_type == llvm::ELF::SHT_NOBITS) continue;
    if (auto contents = file->getSectionContents(section); !contents) return malformed(contents.takeError());
    if (section.sh_type != llvm::ELF::SHT_SYMTAB) continue;
    auto symbols = file->symbols(&section);
    if (!symbols) return malformed(symbols.takeError());
    auto strings = file->getStringTableForSymtab(section);
    if (!strings) return malformed(strings.takeError());
    for (const Elf::Elf_Sym& symbol : *symbols) {
      if (auto symbol_name = symbol.getName(*strings); !symbol_name) return malformed(symbol_name.takeError());
      const uint16_t index = symbol.st_shndx;
      if (index == llvm::ELF::SHN_XINDEX || (index < llvm::ELF::SHN_LORESERVE && index >= section_count))
        return refuse("has a symbol in a section that is not in its section table");
    }
    symbol_count += symbols->size();
  }
  for (const Elf::Elf_Shdr& section : *sections) {
    if (section.sh_type == llvm::ELF::SHT_RELA || section.sh_type == llvm::ELF::SHT_REL) {
      if (section.sh_info >= section_count) return refuse("relocates a section that is not in its section table");
      // lld writes where a relocation points without checking (and crashes).
      const uint64_t target_size = (*sections)[section.sh_info].sh_size;
      auto relocations_fit = [&](const auto& relocations) {
        for (const auto& relocation : relocations) {
          if (relocation.getSymbol(/*isMips64EL=*/false) >= symbol_count) return false;
          if (relocation.r_offset > target_size ||
              target_size - relocation.r_offset < relocation_width(relocation.getType(/*isMips64EL=*/false)))
            return false;
        }
        return true;
      };
      bool fit = true;
      if (section.sh_type == llvm::ELF::SHT_RELA) {
        auto relocations = file->relas(section);
        if (!relocations) return malformed(relocations.takeError());
        fit = relocations_fit(*relocations);
      } else {
        auto relocations = file->rels(section);
        if (!relocations) return malformed(relocations.takeError());
        fit = relocations_fit(*relocations);
      }
      if (!fit) return refuse("has a relocation outside its section or naming a symbol it lacks");
    } else if (section.sh_type == llvm::ELF::SHT_GROUP) {
      auto members = file->template getSectionContentsAsArray<Elf::Elf_Word>(section);
      if (!members) return malformed(members.takeError());
      for (size_t i = 1; i < members->size(); ++i)
        if ((*members)[i] >= section_count) return refuse("has a section group naming a section that it lacks");
    }
  }
  return Ok{};
}

void replace_all(std::string& text, const std::string& from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

std::string first_line(std::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

}  // namespace

Result<HsacoLinkOutput> link_hsaco(std::string_view object, std::string_view name) {
  if (Status checked = check_object(object, name); !checked) return checked.error();
  auto directory = PrivateDirectory::create();
  if (!directory) return directory.error();
  const std::string input = directory->path() + "/input.o";
  const std::string output = directory->path() + "/output.hsaco";
  if (Status s = write_file(input, object); !s) return s.error();

  // One object, nothing to share out: a single thread, and no pool of
  // lld's threads left behind in the daemon.
  const char* args[] = {"ld.lld", "-shared", "--no-undefined", "--threads=1", input.c_str(), "-o", output.c_str()};
  std::string messages;
  int exit_code = 0;
  {
    std::lock_guard lock(g_lld_mutex);
    if (g_lld_spent) {
      return make_error(
          ErrorCode::internal,
          "hsaco-link: lld crashed earlier in this process and cannot run again here; restart the process");
    }
    llvm::raw_string_ostream out(messages);
    // Under run_llvm_guarded, which enables LLVM's crash recovery: lld
    // returns through it from its fatal errors instead of exiting.
    Status ran = run_llvm_guarded("hsaco-link", [&]() -> Status {
      lld::Result result = lld::lldMain(args, out, out, {{lld::Gnu, &lld::elf::link}});
      exit_code = result.retCode;
      if (!result.canRunAgain) g_lld_spent = !recover_after_fatal_error(result.retCode);
      return Ok{};
    });
    if (!ran) return ran.error();
    out.flush();
  }
  replace_all(messages, input, name);
  if (exit_code >= 128) {
    return make_error(
        ErrorCode::internal,
        "hsaco-link: lld crashed linking " + std::string(name) + " (signal " + std::to_string(exit_code - 128) + ")",
        messages);
  }
  if (exit_code != 0) {
    return make_error(
        ErrorCode::invalid_argument,
        "hsaco-link: lld could not link " + std::string(name) + (messages.empty() ? "" : ": " + first_line(messages)),
        messages);
  }
  std::optional<std::string> hsaco = read_file(output);
  if (!hsaco || hsaco->empty()) {
    return make_error(ErrorCode::internal, "hsaco-link: lld reported success but wrote no " + output, messages);
  }
  return HsacoLinkOutput{std::move(*hsaco), std::move(messages)};
}

}  // namespace kjit
