#include "backends/nvfatbin/fatbin_builder.h"

#include <iterator>
#include <list>
#include <string>

namespace kjit {
namespace {

// Destroys the handle on every way out, errors included.
class FatbinHandle {
 public:
  explicit FatbinHandle(const NvFatbinApi& api) : api_(api) {}
  ~FatbinHandle() {
    if (handle_) api_.destroy(&handle_);
  }
  FatbinHandle(const FatbinHandle&) = delete;
  FatbinHandle& operator=(const FatbinHandle&) = delete;

  NvFatbinHandle* out() { return &handle_; }
  NvFatbinHandle get() const { return handle_; }

 private:
  const NvFatbinApi& api_;
  NvFatbinHandle handle_ = nullptr;
};

const char* kind_name(FatbinPart::Kind kind) { return kind == FatbinPart::Kind::cubin ? "cubin" : "PTX"; }

}  // namespace

Result<std::string> build_fatbin(const NvFatbinApi& api, const std::vector<FatbinPart>& parts) {
  if (parts.empty()) return make_error(ErrorCode::invalid_argument, "a fatbin needs at least one cubin or PTX part");

  // kjitd runs on Linux only, and the fatbin's host field must match the
  // process that loads it; said outright rather than left to nvFatbin's
  // default for the platform it was built on.
  const char* options[] = {"-host=linux"};
  FatbinHandle handle(api);
  if (NvFatbinResult result = api.create(handle.out(), options, std::size(options)); result != k_nvfatbin_success)
    return make_error(ErrorCode::internal, "nvFatbin could not start a fatbin: " + api.describe(result));

  // nvFatbin reads PTX as a C string whose size counts the terminating NUL;
  // a view ending without one is copied with one added. The copies live
  // until the fatbin is written, in case nvFatbin keeps pointers into them.
  std::list<std::string> terminated_ptx;
  for (const FatbinPart& part : parts) {
    NvFatbinResult result;
    if (part.kind == FatbinPart::Kind::cubin) {
      result = api.add_cubin(handle.get(), part.data.data(), part.data.size(), part.arch.c_str(),
                             part.identifier.c_str());
    } else {
      std::string_view ptx = part.data;
      if (ptx.empty() || ptx.back() != '\0') {
        std::string& copy = terminated_ptx.emplace_back(ptx);
        ptx = std::string_view(copy.c_str(), copy.size() + 1);
      }
      result = api.add_ptx(handle.get(), ptx.data(), ptx.size(), part.arch.c_str(), part.identifier.c_str(), "");
    }
    if (result != k_nvfatbin_success) {
      return make_error(ErrorCode::invalid_argument, std::string("nvFatbin rejected the ") + kind_name(part.kind) +
                                                         " '" + part.identifier + "' for arch \"" + part.arch +
                                                         "\": " + api.describe(result));
    }
  }

  size_t size = 0;
  if (NvFatbinResult result = api.size(handle.get(), &size); result != k_nvfatbin_success)
    return make_error(ErrorCode::internal, "nvFatbin could not size the fatbin: " + api.describe(result));
  std::string fatbin(size, '\0');
  if (NvFatbinResult result = api.get(handle.get(), fatbin.data()); result != k_nvfatbin_success)
    return make_error(ErrorCode::internal, "nvFatbin could not write the fatbin: " + api.describe(result));
  return fatbin;
}

}  // namespace kjit
