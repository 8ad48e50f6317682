#include "backends/cuda_toolkit.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "backends/nvfatbin/nvfatbin_api.h"
#include "backends/nvjitlink/nvjitlink_api.h"
#include "backends/nvrtc/nvrtc_api.h"
#include "target/target.h"

namespace kjit {
namespace {

namespace fs = std::filesystem;

bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool is_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

// The directory holding the headers CUDA C++ includes from the toolkit
// (cuda_runtime.h, cuda_fp16.h, crt/): an installed toolkit's include/, or
// that of a wheel environment with nvidia-cuda-runtime or nvidia-cuda-crt.
// NVRTC's wheel alone puts only nvrtc.h there, which no kernel includes.
std::string cuda_header_dir(const std::string& home) {
  const std::string include = home + "/include";
  return is_file(include + "/cuda_runtime.h") || is_file(include + "/crt/host_defines.h") ? include : std::string{};
}

// Where CCCL's cuda/std, cub and thrust are: include/cccl in CUDA 13 and in
// the nvidia-cuda-cccl wheel, include itself in CUDA 12 (and in wheels that
// lay it out so).
std::string cccl_header_dir(const std::string& home) {
  for (const char* sub : {"/include/cccl", "/include"}) {
    const std::string dir = home + sub;
    if (is_dir(dir + "/cuda/std")) return dir;
  }
  return {};
}

// "13.4" as (13, 4); (0, 0) when it is not that shape.
std::pair<unsigned, unsigned> parse_version(std::string_view text) {
  unsigned major = 0, minor = 0;
  const char* end = text.data() + text.size();
  auto [after_major, ec] = std::from_chars(text.data(), end, major);
  if (ec != std::errc{}) return {0, 0};
  if (after_major != end && *after_major == '.') std::from_chars(after_major + 1, end, minor);
  return {major, minor};
}

}  // namespace

std::shared_ptr<const CudaToolkit> CudaToolkit::load(std::string cuda_home,
                                                     std::shared_ptr<const CudaToolkit> header_fallback) {
  // A toolkit named by the configuration is the only one used; otherwise the
  // default location, then whatever the loader finds.
  bool search_loader_path = cuda_home.empty();
  if (cuda_home.empty()) {
    const char* env = std::getenv("CUDA_HOME");
    cuda_home = env && *env ? env : KJIT_DEFAULT_CUDA_HOME;
  }
  auto toolkit = std::make_shared<CudaToolkit>();
  toolkit->home_ = std::move(cuda_home);
  toolkit->search_loader_path_ = search_loader_path;
  toolkit->ensure_libraries();
  toolkit->facts_ = toolkit->loaded_facts();
  toolkit->find_headers(header_fallback.get());
  return toolkit;
}

std::shared_ptr<const CudaToolkit> CudaToolkit::load_on_first_use(std::string cuda_home,
                                                                  std::shared_ptr<const CudaToolkit> header_fallback,
                                                                  ToolkitFacts facts) {
  auto toolkit = std::make_shared<CudaToolkit>();
  toolkit->home_ = std::move(cuda_home);
  toolkit->facts_ = std::move(facts);
  toolkit->find_headers(header_fallback.get());
  return toolkit;
}

void CudaToolkit::load_libraries() const {
  if (auto nvrtc = load_nvrtc(home_, search_loader_path_))
    nvrtc_ = std::move(nvrtc.value());
  else
    nvrtc_error_ = nvrtc.error();
  if (auto nvjitlink = load_nvjitlink(home_, search_loader_path_))
    nvjitlink_ = std::move(nvjitlink.value());
  else
    nvjitlink_error_ = nvjitlink.error();
  if (auto nvfatbin = load_nvfatbin(home_, search_loader_path_))
    nvfatbin_ = std::move(nvfatbin.value());
  else
    nvfatbin_error_ = nvfatbin.error();
}

void CudaToolkit::ensure_libraries() const {
  std::call_once(libraries_once_, [this] {
    load_libraries();
    // Loaded at first use: the libraries must be those the facts were
    // learnt from, or keys and routing made with the facts would lie.
    if (facts_.version.empty() || loaded_facts() == facts_) return;
    const ToolkitFacts now = loaded_facts();
    const Error changed = make_error(ErrorCode::failed_precondition,
                                     "the CUDA toolkit at " + home_ + " changed since kjitd found it (" +
                                         facts_.version + " then, " + now.version + " now): restart kjitd to use it");
    nvrtc_.reset();
    nvjitlink_.reset();
    nvfatbin_.reset();
    nvrtc_error_ = nvjitlink_error_ = nvfatbin_error_ = changed;
  });
}

ToolkitFacts CudaToolkit::loaded_facts() const {
  ToolkitFacts facts{"none", {}, nvrtc_ != nullptr, nvjitlink_ != nullptr, nvfatbin_ != nullptr};
  if (nvrtc_) {
    facts.version = std::to_string(nvrtc_->major) + "." + std::to_string(nvrtc_->minor);
    facts.archs = nvrtc_->supported_archs;
  } else if (nvjitlink_) {
    facts.version = std::to_string(nvjitlink_->major) + "." + std::to_string(nvjitlink_->minor);
  }
  return facts;
}

ToolkitFacts CudaToolkit::facts() const {
  return facts_;
}

void CudaToolkit::find_headers(const CudaToolkit* fallback) {
  const std::string from_fallback =
      fallback ? " from the toolkit " + fallback->version() + " at " + fallback->home() + ": " + home_ + " has none"
               : std::string{};

  // The CUDA headers and CCCL are taken separately: a wheel environment may
  // hold one and not the other. Borrowed headers belong to another, often
  // older, toolkit (notes() says which); without them no kernel that
  // includes a toolkit header compiles at all.
  cuda_include_dir_ = cuda_header_dir(home_);
  if (cuda_include_dir_.empty() && fallback && !fallback->cuda_include_dir_.empty()) {
    cuda_include_dir_ = fallback->cuda_include_dir_;
    notes_.push_back("CUDA headers (cuda_runtime.h, crt/)" + from_fallback);
  }
  cccl_include_dir_ = cccl_header_dir(home_);
  if (cccl_include_dir_.empty() && fallback && !fallback->cccl_include_dir_.empty()) {
    cccl_include_dir_ = fallback->cccl_include_dir_;
    notes_.push_back("CCCL headers (cuda/std, cub, thrust)" + from_fallback);
  }
  if (!cuda_include_dir_.empty() || !cccl_include_dir_.empty()) {
    for (const std::string* dir : {&cuda_include_dir_, &cccl_include_dir_})
      if (!dir->empty() && std::find(include_dirs_.begin(), include_dirs_.end(), *dir) == include_dirs_.end())
        include_dirs_.push_back(*dir);
    if (cuda_include_dir_.empty())
      notes_.push_back("no CUDA headers (include/cuda_runtime.h or include/crt/host_defines.h) in " + home_ +
                       (fallback ? " nor in " + fallback->home() : std::string{}));
    if (cccl_include_dir_.empty())
      notes_.push_back("no CCCL headers (cuda/std, cub, thrust) in " + home_ +
                       (fallback ? " nor in " + fallback->home() : std::string{}));
  } else {
    // Neither found: what there is, as before, so a toolkit laid out some
    // other way still gets its include directories.
    for (const char* sub : {"/include", "/include/cccl"})
      if (is_dir(home_ + sub)) include_dirs_.push_back(home_ + sub);
    notes_.push_back("no CUDA headers (include/cuda_runtime.h or include/crt/host_defines.h) in " + home_ +
                     (fallback ? " nor in " + fallback->home() : std::string{}) +
                     ": kernels including toolkit headers will not compile");
  }

  const std::string libdevice = home_ + "/nvvm/libdevice/libdevice.10.bc";
  if (is_file(libdevice)) {
    libdevice_path_ = libdevice;
  } else if (fallback && !fallback->libdevice_path_.empty()) {
    libdevice_path_ = fallback->libdevice_path_;
    notes_.push_back("libdevice" + from_fallback);
  }
}

Result<const NvrtcApi*> CudaToolkit::nvrtc() const {
  ensure_libraries();
  if (!nvrtc_) return nvrtc_error_;
  return nvrtc_.get();
}

Result<const NvJitLinkApi*> CudaToolkit::nvjitlink() const {
  ensure_libraries();
  if (!nvjitlink_) return nvjitlink_error_;
  return nvjitlink_.get();
}

Result<const NvFatbinApi*> CudaToolkit::nvfatbin() const {
  ensure_libraries();
  if (!nvfatbin_) return nvfatbin_error_;
  return nvfatbin_.get();
}

std::string CudaToolkit::version() const {
  return facts_.version;
}

std::vector<uint32_t> CudaToolkit::supported_archs() const {
  return facts_.archs;
}

bool CudaToolkit::supports(const Target& target) const {
  const ArchInfo* arch = find_arch(target.sm);
  if (!arch) return false;
  const std::pair<unsigned, unsigned> have = parse_version(facts_.version);
  if (target.suffix == 'f' && have < std::pair<unsigned, unsigned>{12, 9}) return false;
  if (facts_.nvrtc) return std::find(facts_.archs.begin(), facts_.archs.end(), target.sm) != facts_.archs.end();
  if (facts_.nvjitlink) return have >= parse_version(arch->min_cuda);
  return false;
}

}  // namespace kjit
