#include "backends/nvrtc/nvrtc_stage.h"

#include <filesystem>
#include <memory>
#include <mutex>
#include <set>

#include "backends/nvrtc/nvrtc_pch.h"

namespace kjit {

#if KJIT_HAVE_CUDA_HEADERS

namespace {

std::string program_log(const NvrtcApi& api, nvrtcProgram program) {
  size_t size = 0;
  if (api.get_program_log_size(program, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (api.get_program_log(program, log.data()) != NVRTC_SUCCESS) return {};
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

Error nvrtc_failure(const NvrtcApi& api, nvrtcResult result, std::string what, std::string log = {}) {
  const ErrorCode code = result == NVRTC_ERROR_COMPILATION || result == NVRTC_ERROR_INVALID_OPTION ||
                                 result == NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID
                             ? ErrorCode::invalid_argument
                         : result == NVRTC_ERROR_OUT_OF_MEMORY ? ErrorCode::resource_exhausted
                                                               : ErrorCode::internal;
  return make_error(code,
                    std::move(what) + " (" + api.get_error_string(result) + ")", std::move(log));
}

// An NVRTC program, destroyed with the library that made it.
class Program {
 public:
  explicit Program(const NvrtcApi& api) : api_(api) {}
  ~Program() {
    if (raw_) api_.destroy_program(&raw_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram* out() { return &raw_; }
  nvrtcProgram get() const { return raw_; }

 private:
  const NvrtcApi& api_;
  nvrtcProgram raw_ = nullptr;
};

struct Attempt {
  nvrtcResult result = NVRTC_SUCCESS;
  std::string what;  // the failing call, when result is not success
  std::string log;
  std::unique_ptr<Program> program;
};

// The job as one NVRTC program, compiled with `options`.
Attempt compile_once(const NvrtcApi& api, const CompileJob& job, const std::vector<std::string>& options) {
  Attempt a;
  a.program = std::make_unique<Program>(api);
  std::vector<const char*> header_contents, header_names;
  for (const auto& [name, content] : job.headers) {
    header_names.push_back(name.c_str());
    header_contents.push_back(content.c_str());
  }
  a.result = api.create_program(a.program->out(), job.input.c_str(), job.input_name.c_str(),
                                static_cast<int>(header_names.size()), header_contents.data(), header_names.data());
  if (a.result != NVRTC_SUCCESS) {
    a.what = "nvrtcCreateProgram failed";
    return a;
  }
  for (const std::string& expression : job.name_expressions) {
    a.result = api.add_name_expression(a.program->get(), expression.c_str());
    if (a.result != NVRTC_SUCCESS) {
      a.what = "name expression '" + expression + "' was not accepted";
      return a;
    }
  }
  std::vector<const char*> option_pointers;
  for (const std::string& option : options) option_pointers.push_back(option.c_str());
  a.result = api.compile_program(a.program->get(), static_cast<int>(option_pointers.size()), option_pointers.data());
  a.log = program_log(api, a.program->get());
  if (a.result != NVRTC_SUCCESS)
    a.what = "NVRTC failed to compile " + job.input_name + " for " + job.target.canonical();
  return a;
}

// Whether this NVRTC may use automatic PCH in `directory` now: it has the
// PCH calls, its heap has the size the settings ask for (set once, before
// its first PCH: resizing the heap voids every PCH written in it), and the
// directory exists.
bool pch_ready(const NvrtcApi& api, const std::string& directory) {
  if (directory.empty() || !api.set_pch_heap_size || !api.get_pch_create_status) return false;
  static std::mutex mutex;
  static std::set<const NvrtcApi*> sized;
  {
    std::lock_guard lock(mutex);
    if (!sized.contains(&api)) {
      const std::optional<NvrtcPchSettings> settings = nvrtc_auto_pch();
      if (settings && settings->heap_bytes > 0 && api.set_pch_heap_size(settings->heap_bytes) != NVRTC_SUCCESS)
        return false;
      sized.insert(&api);
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  return !ec;
}

}  // namespace

Result<PtxOutput> compile_cuda_to_ptx(const NvrtcApi& api, const CompileJob& job, const std::vector<std::string>& options,
                                      const std::string& pch_directory) {
  Attempt attempt;
  if (pch_ready(api, pch_directory)) {
    // Messages on, reasons off: the log says which PCH was used or written,
    // not why each other one in the directory did not fit.
    std::vector<std::string> with_pch = options;
    with_pch.insert(with_pch.end(),
                    {"-pch", "--pch-dir=" + pch_directory, "--pch-messages=true", "--pch-verbose=false"});
    attempt = compile_once(api, job, with_pch);
    const PchLog pch = take_pch_lines(attempt.log);
    if (attempt.result != NVRTC_SUCCESS && pch.refused) {
      // A PCH NVRTC cannot read must never fail the request: its directory
      // goes, and the compile runs as it would without PCH.
      discard_pch_directory(pch_directory);
      attempt = compile_once(api, job, options);
    } else {
      const bool heap_exhausted = attempt.result == NVRTC_SUCCESS &&
                                  api.get_pch_create_status(attempt.program->get()) ==
                                      NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED;
      note_pch_compile(pch, heap_exhausted);
    }
  } else {
    attempt = compile_once(api, job, options);
  }
  if (attempt.result != NVRTC_SUCCESS) return nvrtc_failure(api, attempt.result, attempt.what, std::move(attempt.log));
  const nvrtcProgram raw = attempt.program->get();
  nvrtcResult result = NVRTC_SUCCESS;

  PtxOutput out;
  out.log = std::move(attempt.log);
  for (const std::string& expression : job.name_expressions) {
    const char* lowered = nullptr;
    result = api.get_lowered_name(raw, expression.c_str(), &lowered);
    if (result != NVRTC_SUCCESS || !lowered) {
      return nvrtc_failure(api, result, "name expression '" + expression + "' names no kernel in " + job.input_name,
                           out.log);
    }
    out.lowered_names[expression] = lowered;
  }

  size_t size = 0;
  if ((result = api.get_ptx_size(raw, &size)) != NVRTC_SUCCESS) return nvrtc_failure(api, result, "nvrtcGetPTXSize failed");
  out.ptx.assign(size, '\0');
  if ((result = api.get_ptx(raw, out.ptx.data())) != NVRTC_SUCCESS) return nvrtc_failure(api, result, "nvrtcGetPTX failed");
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  return out;
}

#else

Result<PtxOutput> compile_cuda_to_ptx(const NvrtcApi&, const CompileJob&, const std::vector<std::string>&,
                                      const std::string&) {
  return make_error(ErrorCode::failed_precondition, "NVRTC is not available: kjit was built without the CUDA toolkit");
}

#endif

}  // namespace kjit
