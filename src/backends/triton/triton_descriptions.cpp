#include "backends/triton/triton_descriptions.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "backends/triton/triton_interpreter.h"

namespace kjit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Raised whenever what a record holds, or how its fingerprint is made,
// changes: a record of another format is never read.
constexpr int k_record_format = 1;
// A tree this large (an editable Triton checkout with its build directory,
// say) is not worth walking at every start: such a build is described.
constexpr size_t k_max_fingerprinted_files = 200'000;

std::string sha256_hex_of(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += k_hex[digest[i] >> 4];
    out += k_hex[digest[i] & 15];
  }
  return out;
}

// What changes when a file is written, replaced, moved or re-permissioned.
std::string stat_line(const std::string& path, const struct stat& st) {
  std::ostringstream line;
  line << path << ' ' << st.st_size << ' ' << st.st_mtim.tv_sec << '.' << st.st_mtim.tv_nsec << ' '
       << st.st_ctim.tv_sec << '.' << st.st_ctim.tv_nsec << ' ' << st.st_ino << ' ' << st.st_dev << ' '
       << st.st_mode << '\n';
  return line.str();
}

std::string file_line(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? stat_line(path, st) : path + " missing\n";
}

// Every file under `root` but Python's byte-code caches (which any run of
// the interpreter without -B may write), in a fixed order; nothing when the
// tree cannot be walked or is too large.
std::optional<std::string> tree_lines(const std::string& root) {
  std::vector<std::string> lines;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  if (ec) return std::nullopt;
  for (; it != end; it.increment(ec)) {
    if (ec) return std::nullopt;
    const fs::path& path = it->path();
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
    if (S_ISDIR(st.st_mode)) {
      if (path.filename() == "__pycache__") it.disable_recursion_pending();
      continue;
    }
    lines.push_back(stat_line(path.string(), st));
    if (lines.size() > k_max_fingerprinted_files) return std::nullopt;
  }
  if (ec) return std::nullopt;
  std::sort(lines.begin(), lines.end());
  std::string out = "tree " + root + "\n";
  for (const std::string& line : lines) out += line;
  return out;
}

// One record per list of candidates and kjitd binary: two kjitd builds
// sharing the directory (a sanitizer build beside the default one) keep
// a record each rather than replacing each other's.
std::string record_path(const std::string& directory, const std::vector<std::string>& candidates) {
  std::error_code ec;
  std::string list = fs::read_symlink("/proc/self/exe", ec).string() + "\n";
  for (const std::string& candidate : candidates) list += candidate + "\n";
  return directory + "/" + sha256_hex_of(list) + ".json";
}

}  // namespace

std::optional<std::string> triton_descriptions_fingerprint(const std::vector<TritonBuild>& builds) {
  std::string text = "format " + std::to_string(k_record_format) + "\n";
  // How the builds were asked (the worker script) and who asked (kjitd,
  // whose discovery lends ptxas and reads the answers).
  text += "script " + sha256_hex_of(triton_worker_script()) + "\n";
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  text += "kjitd " + file_line(self.string());
  for (const TritonBuild& build : builds) {
    const json description = json::parse(build.description, nullptr, false);
    const json inputs = description.is_object() ? description.value("inputs", json()) : json();
    if (!inputs.is_object()) return std::nullopt;
    const json files = inputs.value("files", json::array());
    const json trees = inputs.value("trees", json::array());
    if (!files.is_array() || !trees.is_array() || trees.empty()) return std::nullopt;
    text += "build " + build.python + "\n";
    for (const json& file : files) {
      if (!file.is_string()) return std::nullopt;
      text += file_line(file.get<std::string>());
    }
    for (const json& tree : trees) {
      if (!tree.is_string()) return std::nullopt;
      std::optional<std::string> lines = tree_lines(tree.get<std::string>());
      if (!lines) return std::nullopt;
      text += *lines;
    }
  }
  return sha256_hex_of(text);
}

std::optional<std::vector<TritonBuild>> recall_triton_builds(const std::string& directory,
                                                             const std::vector<std::string>& candidates) {
  const std::string path = record_path(directory, candidates);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const json record = json::parse(text.str(), nullptr, false);
  if (!record.is_object() || record.value("format", 0) != k_record_format ||
      record.value("candidates", json()) != json(candidates) || !record.value("builds", json()).is_array())
    return std::nullopt;
  std::vector<TritonBuild> builds;
  for (const json& entry : record["builds"]) {
    if (!entry.is_object() || !entry.value("python", json()).is_string() ||
        !entry.value("description", json()).is_string())
      return std::nullopt;
    Result<TritonBuild> build = parse_triton_build(entry["description"].get<std::string>(), entry["python"]);
    if (!build) return std::nullopt;
    builds.push_back(std::move(build.value()));
  }
  const std::optional<std::string> now = triton_descriptions_fingerprint(builds);
  if (!now || *now != record.value("fingerprint", std::string())) {
    spdlog::info("Triton builds changed since {} was written: describing them again", path);
    return std::nullopt;
  }
  spdlog::info("Triton builds unchanged since they were described: {} build(s) from {}", builds.size(), path);
  return builds;
}

void remember_triton_builds(const std::string& directory, const std::vector<std::string>& candidates,
                            const std::vector<TritonBuild>& builds) {
  const std::optional<std::string> fingerprint = triton_descriptions_fingerprint(builds);
  if (!fingerprint) return;  // nothing to tell a change by: described at every start
  json record = {{"format", k_record_format}, {"candidates", candidates}, {"fingerprint", *fingerprint}};
  json entries = json::array();
  for (const TritonBuild& build : builds) entries.push_back({{"python", build.python}, {"description", build.description}});
  record["builds"] = std::move(entries);

  std::error_code ec;
  fs::create_directories(directory, ec);
  if (!ec) fs::permissions(directory, fs::perms::owner_all, ec);
  const std::string path = record_path(directory, candidates);
  // A name of this process's own, then a rename: a reader sees the old
  // record or the new one, never part of one.
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  if (!ec) {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << record.dump();
    out.flush();
    if (!out) ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) fs::rename(temporary, path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(temporary, ec);
    spdlog::warn("cannot keep the Triton builds' descriptions in {}: {} (they are described again at the next start)",
                 directory, why);
  }
}

}  // namespace kjit
