#include "backends/cuda_toolkit.h"

#include <cstdlib>
#include <filesystem>

#include "backends/nvjitlink/nvjitlink_api.h"
#include "backends/nvrtc/nvrtc_api.h"

namespace kjit {

std::shared_ptr<const CudaToolkit> CudaToolkit::load(std::string cuda_home) {
  // A toolkit named by the configuration is the only one used; otherwise the
  // default location, then whatever the loader finds.
  bool search_loader_path = cuda_home.empty();
  if (cuda_home.empty()) {
    const char* env = std::getenv("CUDA_HOME");
    cuda_home = env && *env ? env : KJIT_DEFAULT_CUDA_HOME;
  }
  auto toolkit = std::make_shared<CudaToolkit>();
  toolkit->home_ = cuda_home;

  if (auto nvrtc = load_nvrtc(cuda_home, search_loader_path)) toolkit->nvrtc_ = std::move(nvrtc.value());
  else toolkit->nvrtc_error_ = nvrtc.error();
  if (auto nvjitlink = load_nvjitlink(cuda_home, search_loader_path)) toolkit->nvjitlink_ = std::move(nvjitlink.value());
  else toolkit->nvjitlink_error_ = nvjitlink.error();

  // CUDA 13 keeps the C++ core libraries (cuda/std, cub, thrust) under cccl/.
  for (const char* sub : {"/include", "/include/cccl"}) {
    std::error_code ec;
    if (std::filesystem::is_directory(cuda_home + sub, ec)) toolkit->include_dirs_.push_back(cuda_home + sub);
  }
  std::error_code ec;
  std::string libdevice = cuda_home + "/nvvm/libdevice/libdevice.10.bc";
  if (std::filesystem::is_regular_file(libdevice, ec)) toolkit->libdevice_path_ = libdevice;
  return toolkit;
}

Result<const NvrtcApi*> CudaToolkit::nvrtc() const {
  if (!nvrtc_) return nvrtc_error_;
  return nvrtc_.get();
}

Result<const NvJitLinkApi*> CudaToolkit::nvjitlink() const {
  if (!nvjitlink_) return nvjitlink_error_;
  return nvjitlink_.get();
}

std::string CudaToolkit::version() const {
  if (nvrtc_) return std::to_string(nvrtc_->major) + "." + std::to_string(nvrtc_->minor);
  if (nvjitlink_) return std::to_string(nvjitlink_->major) + "." + std::to_string(nvjitlink_->minor);
  return "none";
}

std::vector<uint32_t> CudaToolkit::supported_archs() const {
  return nvrtc_ ? nvrtc_->supported_archs : std::vector<uint32_t>{};
}

}  // namespace kjit
