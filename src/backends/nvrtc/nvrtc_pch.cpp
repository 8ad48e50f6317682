#include "backends/nvrtc/nvrtc_pch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>

namespace kjit {
namespace {

namespace fs = std::filesystem;

struct PchState {
  std::mutex mutex;
  std::optional<NvrtcPchSettings> settings;
  NvrtcPchCounts counts;
  // When each PCH file was last used or written, in compiles: the order in
  // which they go when the files exceed the bound.
  std::map<std::string, uint64_t> last_use;
  uint64_t clock = 0;
  std::set<std::string> header_sets;  // compiled at least once (note_header_set)
};

// More header sets than a worker's PCH bound holds many times over: past
// it the record starts again, which only counts a set as a first again.
constexpr size_t k_max_header_sets = 4096;

PchState& state() {
  static PchState s;
  return s;
}

// The file a "using/creating precompiled header file "X"" line names.
std::string quoted_file(std::string_view line) {
  const size_t open = line.find("file \"");
  if (open == std::string_view::npos) return {};
  const size_t start = open + 6;
  const size_t close = line.find('"', start);
  return std::string(line.substr(start, close == std::string_view::npos ? std::string_view::npos : close - start));
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

bool mentions_pch(std::string_view line) {
  return contains(line, "precompiled header") || contains(line, "(PCH)") || contains(line, "PCH file");
}

// Removes the least recently used PCH files under `root` while they exceed
// `max_bytes`; under the state's lock.
void evict(PchState& s, const std::string& root, uint64_t max_bytes) {
  std::error_code ec;
  struct File {
    std::string path;
    uint64_t size, last_use;
  };
  std::vector<File> files;
  uint64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const uint64_t size = it->file_size(ec);
    if (ec) continue;
    const std::string path = it->path().string();
    auto used = s.last_use.find(path);
    files.push_back({path, size, used == s.last_use.end() ? 0 : used->second});
    total += size;
  }
  if (total <= max_bytes) return;
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.last_use < b.last_use; });
  for (const File& file : files) {
    if (total <= max_bytes) break;
    if (fs::remove(file.path, ec)) {
      total -= file.size;
      ++s.counts.evictions;
      s.last_use.erase(file.path);
      // A directory left empty goes too (one per header set and options).
      const fs::path parent = fs::path(file.path).parent_path();
      if (parent != fs::path(root) && fs::is_empty(parent, ec)) fs::remove(parent, ec);
    }
  }
}

}  // namespace

void enable_nvrtc_auto_pch(NvrtcPchSettings settings) {
  PchState& s = state();
  std::lock_guard lock(s.mutex);
  s.settings = std::move(settings);
}

std::optional<NvrtcPchSettings> nvrtc_auto_pch() {
  PchState& s = state();
  std::lock_guard lock(s.mutex);
  return s.settings;
}

NvrtcPchCounts nvrtc_pch_counts() {
  PchState& s = state();
  std::lock_guard lock(s.mutex);
  return s.counts;
}

void note_header_set(const std::string& digest) {
  PchState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.header_sets.contains(digest)) return;
  if (s.header_sets.size() >= k_max_header_sets) s.header_sets.clear();
  s.header_sets.insert(digest);
  ++s.counts.firsts;
}

PchLog take_pch_lines(std::string& log) {
  PchLog out;
  std::vector<std::string> kept;
  bool dropped_warning = false, skip_blank = false;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (skip_blank && line.empty()) {
      skip_blank = false;
      continue;
    }
    skip_blank = false;
    if (contains(line, "\": using precompiled header file \"")) {
      out.used.push_back(quoted_file(line));
      continue;
    }
    if (contains(line, "\": creating precompiled header file \"")) {
      out.created.push_back(quoted_file(line));
      continue;
    }
    const bool warning = contains(line, "Warning #") || contains(line, "warning #");
    if (warning && mentions_pch(line)) {
      if (contains(line, "#20282")) out.ignored = true;
      dropped_warning = true;
      skip_blank = true;
      continue;
    }
    if (!warning && mentions_pch(line) && (contains(line, "rror") || contains(line, "atastrophic"))) out.refused = true;
    kept.push_back(std::move(line));
  }
  // NVRTC's closing remark about suppressing warnings, once no warning is left.
  if (dropped_warning &&
      std::none_of(kept.begin(), kept.end(), [](const std::string& l) { return contains(l, "arning #"); }))
    std::erase_if(kept, [](const std::string& l) { return l.starts_with("Remark: The warnings can be suppressed"); });
  while (!kept.empty() && kept.front().empty()) kept.erase(kept.begin());
  while (kept.size() > 1 && kept.back().empty() && kept[kept.size() - 2].empty()) kept.pop_back();
  std::string rebuilt;
  for (const std::string& l : kept) rebuilt += l + "\n";
  if (!log.empty() && log.back() != '\n' && !rebuilt.empty()) rebuilt.pop_back();
  log = std::move(rebuilt);
  return out;
}

void note_pch_compile(const PchLog& log, bool heap_exhausted) {
  PchState& s = state();
  std::lock_guard lock(s.mutex);
  ++s.clock;
  if (!log.used.empty()) ++s.counts.hits;
  s.counts.creations += log.created.size();
  if (log.ignored || heap_exhausted) ++s.counts.fallbacks;
  if (heap_exhausted) spdlog::debug("NVRTC's PCH heap is too small for the headers of a compile; no PCH written");
  for (const std::string& file : log.used) s.last_use[file] = s.clock;
  for (const std::string& file : log.created) s.last_use[file] = s.clock;
  if (s.settings && s.settings->max_bytes > 0) evict(s, s.settings->directory, s.settings->max_bytes);
}

void discard_pch_directory(const std::string& directory) {
  PchState& s = state();
  std::lock_guard lock(s.mutex);
  ++s.counts.fallbacks;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    s.last_use.erase(entry.path().string());
    fs::remove_all(entry.path(), ec);
  }
}

}  // namespace kjit
