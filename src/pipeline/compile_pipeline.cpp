#include "pipeline/compile_pipeline.h"

#include <algorithm>
#include <chrono>

#include "backends/nvjitlink/nvjitlink_stage.h"
#include "backends/nvrtc/include_policy.h"
#include "backends/nvrtc/nvrtc_stage.h"
#include "metadata/cubin_reader.h"
#include "pipeline/compile_options.h"

namespace kjit {
namespace {

class StageClock {
 public:
  explicit StageClock(std::vector<StageTiming>& timings, std::string stage)
      : timings_(timings), stage_(std::move(stage)), start_(std::chrono::steady_clock::now()) {}
  ~StageClock() {
    std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start_;
    timings_.push_back({stage_, elapsed.count()});
  }

 private:
  std::vector<StageTiming>& timings_;
  std::string stage_;
  std::chrono::steady_clock::time_point start_;
};

void append_log(std::string& log, std::string_view stage, const std::string& text) {
  if (text.empty()) return;
  if (!log.empty() && log.back() != '\n') log += '\n';
  log += "[" + std::string(stage) + "]\n" + text;
}

std::string list_targets(const std::vector<uint32_t>& archs) {
  std::string out;
  for (uint32_t sm : archs) {
    const ArchInfo* arch = find_arch(sm);
    auto add = [&](std::string t) { out += (out.empty() ? "" : ", ") + t; };
    add("cuda:" + std::to_string(sm));
    if (arch && arch->has_arch_specific) add("cuda:" + std::to_string(sm) + "a");
    if (arch && arch->has_family_specific) add("cuda:" + std::to_string(sm) + "f");
  }
  return out;
}

}  // namespace

CompilePipeline::CompilePipeline(std::shared_ptr<const CudaToolkit> toolkit) : toolkit_(std::move(toolkit)) {}

Status CompilePipeline::check_target_supported(const CompileJob& job) const {
  std::vector<uint32_t> archs = toolkit_->supported_archs();
  if (archs.empty() || std::find(archs.begin(), archs.end(), job.target.sm) != archs.end()) return Ok{};
  const ArchInfo& arch = job.target.arch();
  return make_error(ErrorCode::invalid_argument,
                    "target " + job.target.canonical() + " (" + job.target.sm_name() +
                        ") is not supported by the installed CUDA toolkit " + toolkit_->version() + " at " +
                        toolkit_->home() + "; " + job.target.sm_name() + " needs CUDA " + std::string(arch.min_cuda) +
                        " or newer (PTX ISA " + std::string(arch.min_ptx_isa) +
                        "); targets this toolkit supports: " + list_targets(archs));
}

Result<Artifact> CompilePipeline::run(const CompileJob& job) const {
  if (job.input_kind != InputKind::cuda_source && job.input_kind != InputKind::ptx) {
    return make_error(ErrorCode::unimplemented,
                      "input kind " + std::string(to_string(job.input_kind)) + " is reserved and not supported yet");
  }
  if (job.input_kind == InputKind::ptx && job.wanted == ArtifactKind::ptx) {
    return make_error(ErrorCode::invalid_argument, "the input is already PTX; ask for a cubin");
  }
  auto options = check_options(job.input_kind, job.options);
  if (!options) return options.error();
  if (Status s = check_target_supported(job); !s) return s.error();

  Artifact artifact;
  artifact.target = job.target.canonical();
  std::string ptx;

  if (job.input_kind == InputKind::cuda_source) {
    auto nvrtc = toolkit_->nvrtc();
    if (!nvrtc) return nvrtc.error();
    if (Status s = check_include_policy(job.input, job.input_name, job.headers); !s) return s.error();

    // Not --no-source-include: the toolkit's own headers include their
    // siblings with quotes. The daemon runs in an empty working directory
    // instead, so a quoted include never finds a file of the daemon's.
    std::vector<std::string> nvrtc_options{"-arch=" + job.target.compute_name()};
    for (const std::string& dir : toolkit_->include_dirs()) nvrtc_options.push_back("--include-path=" + dir);
    nvrtc_options.insert(nvrtc_options.end(), options->nvrtc.begin(), options->nvrtc.end());

    Result<PtxOutput> out = [&] {
      StageClock clock(artifact.timings, "nvrtc");
      return compile_cuda_to_ptx(**nvrtc, job, nvrtc_options);
    }();
    if (!out) return out.error();
    append_log(artifact.log, "nvrtc", out->log);
    artifact.lowered_names = std::move(out->lowered_names);
    ptx = std::move(out->ptx);
    if (job.wanted == ArtifactKind::ptx) {
      artifact.kind = ArtifactKind::ptx;
      artifact.bytes = std::move(ptx);
      return artifact;
    }
  }

  auto nvjitlink = toolkit_->nvjitlink();
  if (!nvjitlink) return nvjitlink.error();
  std::vector<std::string> link_options{"-arch=" + job.target.sm_name()};
  link_options.insert(link_options.end(), options->nvjitlink.begin(), options->nvjitlink.end());
  const std::string& ptx_input = job.input_kind == InputKind::ptx ? job.input : ptx;
  Result<CubinOutput> cubin = [&] {
    StageClock clock(artifact.timings, "nvjitlink");
    return link_ptx_to_cubin(**nvjitlink, ptx_input, job.input_name, link_options);
  }();
  if (!cubin) {
    Error error = cubin.error();
    if (!artifact.log.empty()) error.log = artifact.log + (error.log.empty() ? "" : "\n[nvjitlink]\n" + error.log);
    return error;
  }
  append_log(artifact.log, "nvjitlink", cubin->log);

  Result<CubinInfo> info = [&] {
    StageClock clock(artifact.timings, "metadata");
    return read_cubin(cubin->cubin);
  }();
  if (!info) {
    return make_error(ErrorCode::internal, "the cubin nvJitLink produced could not be read: " + info.error().message);
  }
  if (info->sm != job.target.sm) {
    return make_error(ErrorCode::internal, "nvJitLink produced a cubin for sm_" + std::to_string(info->sm) +
                                               " when " + job.target.sm_name() + " was asked for");
  }
  artifact.kernels = std::move(info->kernels);
  for (KernelInfo& kernel : artifact.kernels) {
    for (const auto& [expression, lowered] : artifact.lowered_names)
      if (kernel.lowered_name == lowered) kernel.name = expression;
  }
  artifact.kind = ArtifactKind::cubin;
  artifact.bytes = std::move(cubin->cubin);
  return artifact;
}

}  // namespace kjit
