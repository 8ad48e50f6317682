// Finds, reads and names the headers a CUDA source includes, for `kjit
// compile -I`. The naming rules, and why NVRTC needs them, are in
// include_resolver.h.
#include "client/include_resolver.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <unordered_map>
#include <utility>

namespace kjit {

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------- naming

std::string spelling_of(IncludeDirective::Kind kind) {
  switch (kind) {
    case IncludeDirective::Kind::include:
      return "#include";
    case IncludeDirective::Kind::include_next:
      return "#include_next";
    case IncludeDirective::Kind::import:
      return "import";
    case IncludeDirective::Kind::has_include:
      return "__has_include";
  }
  return "#include";
}

// Whether a name can be both a header name and the target of a rewritten
// directive: the daemon refuses absolute names and ".." segments, and a name
// must fit between either pair of delimiters on one line. "." and empty
// segments would work but are refused too, so that names sent are always
// plain relative paths ("./x.h" is sent as "x.h" and rewritten).
bool is_usable_name(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  if (name.find_first_of(std::string_view("\"<>\\\n\r\0", 7)) != std::string_view::npos) return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t slash = name.find('/', start);
    if (slash == std::string_view::npos) slash = name.size();
    const std::string_view segment = name.substr(start, slash - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    start = slash + 1;
  }
  return true;
}

// The identity of a file, so that each is read and named once whichever path
// reached it (symlinks, "a/../b").
std::string file_key(const fs::path& path) {
  std::error_code error;
  fs::path canonical = fs::canonical(path, error);
  if (error) canonical = fs::absolute(path, error).lexically_normal();
  return canonical.string();
}

// A -I directory that holds a CUDA toolkit's own headers (or the toolkit's
// CCCL directory next to them). The daemon compiles against its own toolkit,
// and following cuda_runtime.h & co. from the client's copy would send
// hundreds of files that must not replace the daemon's.
bool is_toolkit_include_dir(const fs::path& dir) {
  std::error_code error;
  if (fs::exists(dir / "cuda_runtime_api.h", error)) return true;
  const fs::path normal = dir.lexically_normal();
  const fs::path last = normal.has_filename() ? normal.filename() : normal.parent_path().filename();
  const fs::path parent = normal.has_filename() ? normal.parent_path() : normal.parent_path().parent_path();
  return last == "cccl" && fs::exists(parent / "cuda_runtime_api.h", error);
}

std::string in_quotes(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

// The main source (index 0) or a header found for it.
struct FileNode {
  fs::path path;  // as found: lookups next to it start from its directory
  std::string content;
  std::vector<IncludeDirective> directives;
  std::vector<int> targets;            // per directive: the file it resolves to, or -1
  std::vector<std::string> spellings;  // names it is included by, in order of first use
  std::string name;                    // the name it is sent under; empty for the source
};

// Where one directive points, kept per spelling to report one name meaning
// several files.
struct Use {
  int includer = 0;
  std::size_t directive = 0;
  int target = -1;
};

class Resolver {
 public:
  Resolver(const fs::path& source_path, std::string_view source, const std::vector<fs::path>& include_dirs,
           const ResolveLimits& limits)
      : limits_(limits), source_path_(source_path) {
    source_dir_ = source_path.has_parent_path() ? source_path.parent_path() : fs::path(".");
    keep_include_dirs(include_dirs);
    root_keys_.emplace_back(file_key(source_dir_));
    for (const fs::path& dir : include_dirs_) root_keys_.emplace_back(file_key(dir));
    FileNode main;
    main.path = source_path;
    main.content = std::string(source);
    files_.push_back(std::move(main));
  }

  Result<ResolvedHeaders> run() {
    if (Status found = discover(); !found.ok()) return found.error();
    assign_names();
    warn_about_shared_spellings();

    ResolvedHeaders resolved;
    resolved.source = rewritten(files_[0]);
    for (std::size_t i = 1; i < files_.size(); ++i) {
      resolved.headers.emplace(files_[i].name, rewritten(files_[i]));
    }
    resolved.warnings = std::move(warnings_);
    return resolved;
  }

 private:
  void keep_include_dirs(const std::vector<fs::path>& include_dirs) {
    for (const fs::path& dir : include_dirs) {
      std::error_code error;
      if (!fs::is_directory(dir, error)) {
        warnings_.push_back("include directory " + dir.string() + " does not exist or is not a directory; ignored");
      } else if (is_toolkit_include_dir(dir)) {
        warnings_.push_back("include directory " + dir.string() +
                            " belongs to a CUDA toolkit and is skipped: the daemon uses its own toolkit's headers");
      } else {
        include_dirs_.push_back(dir);
      }
    }
  }

  std::string display(int file) const {
    if (file == 0 && source_path_.empty()) return "<source>";
    return files_[file].path.lexically_normal().string();
  }

  std::string where(int file, std::size_t directive) const {
    return display(file) + ":" + std::to_string(files_[file].directives[directive].line);
  }

  // The C compilers' search: "quoted" next to the includer, then -I in
  // order; <angled> in -I only. Directories are skipped, as compilers do.
  std::optional<fs::path> find(const IncludeDirective& directive, const fs::path& includer) const {
    const fs::path target(directive.target);
    std::vector<fs::path> candidates;
    if (target.is_absolute()) {
      candidates.push_back(target);
    } else {
      if (!directive.angled) {
        candidates.push_back((includer.has_parent_path() ? includer.parent_path() : source_dir_) / target);
      }
      for (const fs::path& dir : include_dirs_) candidates.push_back(dir / target);
    }
    for (const fs::path& candidate : candidates) {
      std::error_code error;
      if (fs::is_regular_file(candidate, error)) return candidate;
    }
    return std::nullopt;
  }

  // Reads a found file within the limits; the file count was checked by the
  // caller.
  Result<std::string> read_within_limits(const fs::path& path, int includer, std::size_t directive) {
    std::error_code error;
    const std::uintmax_t size = fs::file_size(path, error);
    if (error) {
      return make_error(ErrorCode::invalid_argument, "cannot read header " + path.string() + " (included at " +
                                                         where(includer, directive) + "): " + error.message());
    }
    if (size > limits_.max_total_bytes - total_bytes_) return too_many_bytes();
    std::ifstream in(path, std::ios::binary);
    std::string content;
    if (in) content.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) {
      return make_error(ErrorCode::invalid_argument, "cannot read header " + path.string() + " (included at " +
                                                         where(includer, directive) + "): " + std::strerror(errno));
    }
    // Checked again: the file may have grown since file_size.
    if (content.size() > limits_.max_total_bytes - total_bytes_) return too_many_bytes();
    total_bytes_ += content.size();
    return content;
  }

  Error too_many_bytes() const {
    return make_error(ErrorCode::resource_exhausted, "the included headers exceed " +
                                                         std::to_string(limits_.max_total_bytes) +
                                                         " bytes in total; check the -I directories");
  }

  // Breadth first from the source, each file once, so the order (and with it
  // every name) depends only on the files.
  Status discover() {
    for (std::size_t i = 0; i < files_.size(); ++i) {
      files_[i].directives = scan_include_directives(files_[i].content);
      files_[i].targets.assign(files_[i].directives.size(), -1);
      for (std::size_t d = 0; d < files_[i].directives.size(); ++d) {
        const IncludeDirective directive = files_[i].directives[d];
        const bool followed =
            directive.kind == IncludeDirective::Kind::include || directive.kind == IncludeDirective::Kind::has_include;
        if (directive.computed && directive.kind == IncludeDirective::Kind::include) {
          warnings_.push_back(where(static_cast<int>(i), d) + ": computed include " + directive.target +
                              " is not followed; a header it names is sent only if an #include "
                              "spells that name too");
          continue;
        }
        if (directive.computed) {
          warnings_.push_back(where(static_cast<int>(i), d) + ": computed " + spelling_of(directive.kind) + " " +
                              directive.target + " is not followed, and the daemon refuses it");
          continue;
        }
        if (!followed) {
          if (!is_usable_name(directive.target)) {
            warnings_.push_back(where(static_cast<int>(i), d) + ": " + spelling_of(directive.kind) + " " +
                                in_quotes(directive.target) +
                                " is not followed, and the daemon refuses absolute names and \"..\"");
          }
          continue;
        }
        const std::optional<fs::path> path = find(directive, files_[i].path);
        int target = -1;
        if (path) {
          const std::string key = file_key(*path);
          auto known = index_by_key_.find(key);
          if (known != index_by_key_.end()) {
            target = known->second;
          } else {
            if (files_.size() - 1 >= limits_.max_files) {
              return make_error(ErrorCode::resource_exhausted, "the source includes more than " +
                                                                   std::to_string(limits_.max_files) +
                                                                   " headers; check the -I directories");
            }
            Result<std::string> content = read_within_limits(*path, static_cast<int>(i), d);
            if (!content.ok()) return content.error();
            target = static_cast<int>(files_.size());
            index_by_key_.emplace(key, target);
            FileNode header;
            header.path = *path;
            header.content = std::move(content).value();
            files_.push_back(std::move(header));  // invalidates references into files_
          }
          std::vector<std::string>& spellings = files_[target].spellings;
          if (std::find(spellings.begin(), spellings.end(), directive.target) == spellings.end()) {
            spellings.push_back(directive.target);
          }
        } else {
          left_to_daemon_.insert(directive.target);
          if (!is_usable_name(directive.target)) {
            warnings_.push_back(where(static_cast<int>(i), d) + ": include " + in_quotes(directive.target) +
                                " is not found here and the daemon refuses absolute names and \"..\"");
          }
        }
        files_[i].targets[d] = target;
        uses_by_spelling_[directive.target].push_back(Use{static_cast<int>(i), d, target});
      }
    }
    return Ok{};
  }

  // Names for a file from its place under the source's directory or an -I
  // directory, fewest ".." first, then shortest. The ".." segments, needed
  // only for files outside all of them, become "__up__".
  std::vector<std::string> derived_names(const FileNode& file) const {
    struct Candidate {
      std::size_t ups = 0;
      std::size_t segments = 0;
      std::string name;
    };
    const fs::path canonical(file_key(file.path));
    std::vector<Candidate> candidates;
    for (const fs::path& root : root_keys_) {
      const fs::path relative = canonical.lexically_relative(root);
      if (relative.empty() || relative == ".") continue;
      Candidate candidate;
      for (const fs::path& segment : relative) {
        const bool up = segment == "..";
        candidate.ups += up;
        ++candidate.segments;
        if (!candidate.name.empty()) candidate.name += '/';
        candidate.name += up ? std::string("__up__") : segment.string();
      }
      candidates.push_back(std::move(candidate));
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.ups != b.ups ? a.ups < b.ups : a.segments < b.segments;
    });
    std::vector<std::string> names;
    for (Candidate& candidate : candidates) names.push_back(std::move(candidate.name));
    return names;
  }

  bool is_free(const std::string& name) const {
    return is_usable_name(name) && !taken_.count(name) && !left_to_daemon_.count(name);
  }

  // Each file takes the first free name among: how it is spelled, where it
  // lives. A spelling some directive leaves to the daemon is never taken, so
  // a sent header cannot stand in for the daemon's header of that name.
  void assign_names() {
    for (std::size_t i = 1; i < files_.size(); ++i) {
      FileNode& file = files_[i];
      for (const std::string& spelling : file.spellings) {
        if (is_free(spelling)) {
          file.name = spelling;
          break;
        }
      }
      if (file.name.empty()) {
        for (const std::string& name : derived_names(file)) {
          if (is_free(name)) {
            file.name = name;
            break;
          }
        }
      }
      // Last resort, when no candidate is free (odd characters in the path,
      // or every candidate taken): a counter finds a free name.
      for (std::size_t n = i; file.name.empty(); ++n) {
        std::string base = file.path.filename().string();
        std::replace_if(
            base.begin(), base.end(),
            [](char c) { return std::string_view("\"<>\\\n\r\0", 7).find(c) != std::string_view::npos; }, '_');
        const std::string name = "__kjit__/" + std::to_string(n) + "/" + base;
        if (is_free(name)) file.name = name;
      }
      taken_.insert(file.name);
    }
  }

  void warn_about_shared_spellings() {
    for (const auto& [spelling, uses] : uses_by_spelling_) {
      std::vector<const Use*> distinct;
      for (const Use& use : uses) {
        const bool seen = std::any_of(distinct.begin(), distinct.end(),
                                      [&](const Use* other) { return other->target == use.target; });
        if (!seen) distinct.push_back(&use);
      }
      if (distinct.size() < 2) continue;
      std::ostringstream message;
      message << "include " << in_quotes(spelling) << " means different files:";
      for (const Use* use : distinct) {
        message << (use == distinct.front() ? " " : "; ");
        if (use->target < 0) {
          message << "none here, left to the daemon";
        } else {
          message << display(use->target) << " sent as " << in_quotes(files_[use->target].name);
        }
        message << " (from " << where(use->includer, use->directive) << ")";
      }
      message << "; the includes are rewritten to these names";
      warnings_.push_back(message.str());
    }
  }

  // The content with each resolved directive spelling its file's name. Only
  // the text between the delimiters changes, so lines keep their numbers. A
  // name spelled with splices is replaced whole, splices included, and as
  // many splices follow the new name as line ends the old one spanned.
  std::string rewritten(const FileNode& file) const {
    std::string out;
    out.reserve(file.content.size());
    std::size_t copied = 0;
    for (std::size_t d = 0; d < file.directives.size(); ++d) {
      const IncludeDirective& directive = file.directives[d];
      const int target = file.targets[d];
      if (target < 0 || files_[target].name == directive.target) continue;
      // Two readings of one name (with and without trigraphs) overlap; the
      // first one rewritten wins.
      if (directive.target_offset < copied) continue;
      out.append(file.content, copied, directive.target_offset - copied);
      out += files_[target].name;
      const std::string_view old_name =
          std::string_view(file.content).substr(directive.target_offset, directive.target_length);
      for (std::size_t at = old_name.find('\n'); at != std::string_view::npos; at = old_name.find('\n', at + 1)) {
        out += at > 0 && old_name[at - 1] == '\r' ? "\\\r\n" : "\\\n";
      }
      copied = directive.target_offset + directive.target_length;
    }
    out.append(file.content, copied, std::string::npos);
    return out;
  }

  ResolveLimits limits_;
  fs::path source_path_;
  fs::path source_dir_;
  std::vector<fs::path> include_dirs_;  // the usable ones, in order
  std::vector<fs::path> root_keys_;     // source_dir_ then include_dirs_, resolved: names derive from them
  std::vector<FileNode> files_;
  std::unordered_map<std::string, int> index_by_key_;
  std::map<std::string, std::vector<Use>> uses_by_spelling_;  // ordered: stable warnings
  std::set<std::string> left_to_daemon_;
  std::set<std::string> taken_;
  std::uint64_t total_bytes_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace

Result<ResolvedHeaders> resolve_includes(const fs::path& source_path, std::string_view source,
                                         const std::vector<fs::path>& include_dirs, const ResolveLimits& limits) {
  return Resolver(source_path, source, include_dirs, limits).run();
}

Result<ResolvedHeaders> resolve_includes(const fs::path& source_path, std::string_view source,
                                         const std::vector<fs::path>& include_dirs) {
  return resolve_includes(source_path, source, include_dirs, ResolveLimits{});
}

}  // namespace kjit
