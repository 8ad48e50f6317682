// Example plugin: replaces the input digest of LLVM IR text with one that
// ignores debug locations (`, !dbg !N` attachments and DILocation lines), so
// two modules that differ only in line numbers share one cache key.
#include <kjit/plugin.h>

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

namespace {

std::string without_debug_locations(const std::string& ir) {
  std::istringstream in(ir);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.find("= !DILocation(") != std::string::npos) continue;
    for (size_t at; (at = line.find(", !dbg !")) != std::string::npos;) {
      size_t end = at + 8;
      while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
      line.erase(at, end - at);
    }
    out += line + "\n";
  }
  return out;
}

// FNV-1a, 64-bit: stable across runs and machines, which is all a digest
// needs here.
std::string fnv1a(const std::string& bytes) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

int digest(const kjit_key_input* input, const kjit_key_output* output) {
  if (std::string(input->input_kind) != "llvm-ir") return 0;  // other inputs keep kjit's digest
  std::string normalized = without_debug_locations(std::string(input->input, input->input_size));
  output->replace_input_digest(output->host, ("fnv1a-nodbg:" + fnv1a(normalized)).c_str());
  return 0;
}

const kjit_plugin_info k_info = {KJIT_PLUGIN_API_VERSION, "test-nodbg-digest", "1.0", nullptr, 0, nullptr, 0, digest,
                                 nullptr};

}  // namespace

extern "C" const kjit_plugin_info* kjit_plugin_get_info(void) { return &k_info; }
