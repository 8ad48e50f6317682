#include "server/rpc/launch_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "server/edge/compile_translation.h"
#include "server/compile/fatbin_compile.h"
#include "target/fatbin_choice.h"
#include "convert/wire_convert.h"
#include "kjit/kernel_args.h"
#include "launch/hip_launch_plan.h"
#include "launch/plan_executor.h"
#include "launch/triton_launch.h"
#include "server/edge/launch_translation.h"
#include "metadata/ptx_reader.h"
#include "pipeline/cache_key.h"
#include "server/edge/status_mapping.h"
#include "server/rpc/caller_cache.h"

namespace kjit {
namespace {

// Frees what a launch allocated on every path out of it.
class DeviceScope {
 public:
  explicit DeviceScope(DriverBinding& driver) : driver_(driver) {}
  ~DeviceScope() {
    for (DevicePtr p : buffers_) driver_.mem_free(p);
    for (EventHandle e : events_) driver_.event_destroy(e);
    if (stream_) driver_.stream_destroy(*stream_);
  }
  std::vector<DevicePtr> buffers_;
  std::vector<EventHandle> events_;
  std::optional<StreamHandle> stream_;

 private:
  DriverBinding& driver_;
};

Error not_found_kernel(const std::string& name, const Artifact& artifact) {
  std::string known;
  for (const KernelInfo& k : artifact.kernels) known += (known.empty() ? "" : ", ") + k.name;
  return make_error(ErrorCode::not_found, "no kernel '" + name + "' in the compiled module; it has: " +
                                              (known.empty() ? std::string("none") : known));
}

}  // namespace

LaunchService::LaunchService(std::shared_ptr<const CachedCompiler> compiler, std::shared_ptr<DriverBinding> driver,
                             std::shared_ptr<CallGate> gate)
    : compiler_(std::move(compiler)),
      driver_(std::move(driver)),
      gate_(gate ? std::move(gate) : std::make_shared<CallGate>(CallGate::Options{})) {}

// A request with several targets resolves to the one part `device` loads
// (fatbin_choice.h), compiled (or found in the cache) alone.
static Result<v1::CompileRequest> part_for_device(const v1::CompileRequest& request, std::optional<Target> device,
                                           std::string& chosen) {
  if (!wants_fatbin(request)) return request;
  Result<std::vector<Target>> targets = fatbin_targets(request);
  if (!targets) return targets.error();
  if (targets->front().is_amd()) {
    // A code-object bundle: the part whose processor is the device's.
    if (!device || !device->is_amd())
      return make_error(ErrorCode::invalid_argument,
                        "a request with several hip: targets is planned for the GPU that loads it: name it with "
                        "device_target (kjit plan --device-target hip:gfxNNN)");
    if (std::find(targets->begin(), targets->end(), *device) == targets->end())
      return make_error(ErrorCode::failed_precondition, "no part of the code-object bundle loads on " +
                                                            device->canonical() + ": the request names no such target");
    v1::CompileRequest part = request;
    part.clear_targets();
    part.set_target(device->canonical());
    part.set_artifact(v1::ARTIFACT_KIND_HSACO);
    chosen = "the bundle's " + device->canonical() + " code object is what that GPU loads";
    return part;
  }
  if (!device)
    return make_error(ErrorCode::invalid_argument,
                      "a request with several targets is planned for the GPU that loads it: name it with "
                      "device_target (kjit plan --device-target cuda:NN); this daemon has no GPU");
  const Target ptx = fatbin_ptx_target(*targets);
  std::optional<FatbinChoice> choice = choose_fatbin_entry(*targets, ptx, *device);
  if (!choice) {
    std::string listed;
    for (const Target& t : *targets) listed += (listed.empty() ? "" : ", ") + t.canonical();
    return make_error(ErrorCode::failed_precondition, "no part of the fatbin loads on " + device->sm_name() +
                                                          ": it holds cubins for " + listed + " and PTX for " +
                                                          ptx.canonical() + ", which needs " + ptx.sm_name() + " or newer");
  }
  v1::CompileRequest part = request;
  part.clear_targets();
  part.set_target(choice->target.canonical());
  part.set_artifact(choice->ptx ? v1::ARTIFACT_KIND_PTX : v1::ARTIFACT_KIND_CUBIN);
  chosen = "the fatbin's " + choice->target.canonical() + (choice->ptx ? " PTX" : " cubin") + " is what " +
           device->sm_name() + " loads";
  return part;
}

namespace {

// A Triton kernel launches as its metadata says (src/launch/triton_launch.h);
// other kernels as the caller asks.
Result<LaunchConfig> launch_config_for(const Artifact& artifact, const Target& target, const v1::LaunchConfig& asked,
                                       std::optional<TritonLaunch>& triton) {
  LaunchConfig config = from_proto(asked);
  if (artifact.triton_metadata.empty()) return config;
  Result<TritonLaunch> read = read_triton_launch(artifact.triton_metadata);
  if (!read) return make_error(ErrorCode::internal, "the cache entry's " + read.error().message);
  triton = *read;
  return triton_launch_config(*triton, config, target.is_amd() ? target.amd_arch().default_wavefront : 32);
}

}  // namespace

Result<LaunchService::ResolvedKernel> LaunchService::resolve(const v1::KernelSource& source,
                                                             std::optional<Target> device, const Caller& caller,
                                                             const grpc::ServerContext& context) const {
  if (source.kernel().empty()) return make_error(ErrorCode::invalid_argument, "the kernel to launch is not named");
  ResolvedKernel resolved;
  if (source.has_compile()) {
    Result<v1::CompileRequest> request = part_for_device(source.compile(), device, resolved.chosen_part);
    if (!request) return request.error();
    if (!resolved.chosen_part.empty()) resolved.device = device;
    Result<CompileJob> job = to_compile_job(*request, compiler_->config());
    if (!job) return job.error();
    const grpc::ServerContext* call = &context;
    Result<CompileOutcome> outcome =
        compiler_->compile(*job, CompileScope{caller.ns, caller.label(), [call] { return call_gone(*call); }});
    if (!outcome) return outcome.error();
    resolved.artifact = std::move(outcome->artifact);
  } else {
    DaemonCache* cache = compiler_->cache();
    if (!cache) return make_error(ErrorCode::failed_precondition, "naming a kernel by cache key needs the compile cache, which is off");
    if (Status spelled = check_key_spelling(source.key()); !spelled) return spelled.error();
    std::optional<CacheHit> hit = compiles_of(*cache, caller).get(source.key());
    if (!hit) return make_error(ErrorCode::not_found, "no cache entry for key '" + source.key() + "'");
    resolved.artifact = shared_artifact(std::move(hit->entry));
  }
  const std::string& name = source.kernel();
  if (resolved.artifact->kind == ArtifactKind::ptx) {
    Result<PtxModule> module = read_ptx(resolved.artifact->bytes);
    if (!module) return module.error();
    const PtxKernel* kernel = module->find(name);
    if (!kernel) {
      for (const auto& [expression, lowered] : resolved.artifact->lowered_names)
        if (expression == name) kernel = module->find(lowered);
    }
    if (!kernel) return make_error(ErrorCode::not_found, "no kernel '" + name + "' in the PTX");
    resolved.info = kernel->info;
    resolved.source = KernelInfoSource::ptx;
    return resolved;
  }
  for (const KernelInfo& kernel : resolved.artifact->kernels) {
    if (kernel.name == name || kernel.lowered_name == name) {
      resolved.info = kernel;
      return resolved;
    }
  }
  return not_found_kernel(name, *resolved.artifact);
}

std::optional<Target> LaunchService::this_device() {
  if (!driver_ || !driver_->available()) return std::nullopt;
  std::lock_guard lock(device_mutex_);
  if (!device_limits_) {
    if (Result<DeviceLimits> limits = limits_from_device(*driver_)) device_limits_ = *limits;
  }
  if (!device_limits_) return std::nullopt;
  Target device;
  device.sm = device_limits_->sm;
  return device;
}

DeviceLimits LaunchService::limits_for(const Target& target, bool& from_device) {
  from_device = false;
  if (driver_ && driver_->available()) {
    if (!device_limits_) {
      if (Result<DeviceLimits> limits = limits_from_device(*driver_)) device_limits_ = *limits;
    }
    if (device_limits_ && device_limits_->sm == target.sm) {
      from_device = true;
      return *device_limits_;
    }
  }
  return limits_for_target(target);
}

grpc::Status LaunchService::PlanLaunch(grpc::ServerContext* context, const v1::PlanLaunchRequest* request,
                                       v1::PlanLaunchResponse* response) {
  return gate_->serve(context, "PlanLaunch", [&](const Caller& caller) -> grpc::Status {
    std::optional<Target> device;
    if (!request->device_target().empty()) {
      Result<Target> named = parse_target(request->device_target());
      if (!named) return to_grpc_status(named.error(), *context);
      device = *named;
    } else {
      device = this_device();
    }
    Result<ResolvedKernel> kernel = resolve(request->source(), device, caller, *context);
    if (!kernel) return to_grpc_status(kernel.error(), *context);
    Result<Target> target = parse_target(kernel->artifact->target);
    if (!target) return to_grpc_status(target.error(), *context);
    std::optional<TritonLaunch> triton;
    Result<LaunchConfig> config = launch_config_for(*kernel->artifact, *target, request->config(), triton);
    if (!config) return to_grpc_status(config.error(), *context);
    if (target->is_amd()) {
      Result<LaunchPlan> plan = plan_hip_launch(kernel->info, target->amd_arch(), *config);
      if (!plan) return to_grpc_status(plan.error(), *context);
      if (!kernel->chosen_part.empty()) plan->notes.insert(plan->notes.begin(), kernel->chosen_part);
      to_proto(*plan, false, *response->mutable_plan());
      to_proto(kernel->info, *response->mutable_kernel());
      response->set_key(kernel->artifact->key);
      return grpc::Status::OK;
    }
    // A fatbin's part runs on a GPU that may be newer than the part's target:
    // the plan is checked against that GPU's limits.
    if (kernel->device) target = *kernel->device;
    bool from_device = false;
    DeviceLimits limits;
    {
      std::lock_guard lock(device_mutex_);
      limits = limits_for(*target, from_device);
    }
    Result<LaunchPlan> plan = plan_launch(kernel->info, limits, *config, kernel->source);
    if (!plan) return to_grpc_status(plan.error(), *context);
    if (!kernel->chosen_part.empty()) plan->notes.insert(plan->notes.begin(), kernel->chosen_part);
    to_proto(*plan, from_device, *response->mutable_plan());
    to_proto(kernel->info, *response->mutable_kernel());
    response->set_key(kernel->artifact->key);
    return grpc::Status::OK;
  });
}

grpc::Status LaunchService::Launch(grpc::ServerContext* context, const v1::LaunchRequest* request,
                                   v1::LaunchResponse* response) {
  return gate_->serve(context, "Launch", [&](const Caller& caller) -> grpc::Status {
    if (!driver_) return to_grpc_status(make_error(ErrorCode::failed_precondition, "no CUDA driver on this host"), *context);
    if (Status available = driver_->available(); !available) return to_grpc_status(available.error(), *context);

    uint64_t total = 0;
    for (const v1::LaunchArgument& arg : request->args())
      if (arg.has_buffer()) total += std::max<uint64_t>(arg.buffer().size(), arg.buffer().data().size());
    if (total > compiler_->config().max_launch_bytes) {
      return to_grpc_status(make_error(ErrorCode::resource_exhausted,
                                       "launch buffers total " + std::to_string(total) + " bytes; the daemon's limit is " +
                                           std::to_string(compiler_->config().max_launch_bytes) +
                                           " (limits.max_launch_bytes)"),
                            *context);
    }

    Result<ResolvedKernel> kernel = resolve(request->source(), this_device(), caller, *context);
    if (!kernel) return to_grpc_status(kernel.error(), *context);
    Result<Target> target = parse_target(kernel->artifact->target);
    if (!target) return to_grpc_status(target.error(), *context);
    if (target->is_amd())
      return to_grpc_status(make_error(ErrorCode::failed_precondition,
                                       "launching a " + target->canonical() +
                                           " code object needs an AMD GPU; this daemon launches through the CUDA "
                                           "driver (kjit plan gives the HIP launch plan)"),
                            *context);
    std::optional<TritonLaunch> triton;
    Result<LaunchConfig> config = launch_config_for(*kernel->artifact, *target, request->config(), triton);
    if (!config) return to_grpc_status(config.error(), *context);
    if (kernel->device) target = *kernel->device;

    std::lock_guard lock(device_mutex_);
    bool from_device = false;
    DeviceLimits limits = limits_for(*target, from_device);
    DriverBinding& driver = *driver_;
    DeviceScope scope(driver);
    auto fail = [&](const Error& e) { return to_grpc_status(e, *context); };

    Result<ModuleHandle> module = driver.load_module(kernel->artifact->bytes);
    if (!module) return fail(module.error());
    Result<FunctionHandle> function = driver.get_function(*module, kernel->info.lowered_name);
    if (!function) return fail(function.error());

    KernelArgs args;
    std::vector<std::pair<int, DevicePtr>> returned;  // argument index -> buffer
    for (int i = 0; i < request->args_size(); ++i) {
      const v1::LaunchArgument& arg = request->args(i);
      switch (arg.value_case()) {
        case v1::LaunchArgument::kI32: args.add(KernelArg::i32(arg.i32())); break;
        case v1::LaunchArgument::kU32: args.add(KernelArg::u32(arg.u32())); break;
        case v1::LaunchArgument::kI64: args.add(KernelArg::i64(arg.i64())); break;
        case v1::LaunchArgument::kU64: args.add(KernelArg::u64(arg.u64())); break;
        case v1::LaunchArgument::kF32: args.add(KernelArg::f32(arg.f32())); break;
        case v1::LaunchArgument::kF64: args.add(KernelArg::f64(arg.f64())); break;
        case v1::LaunchArgument::kBuffer: {
          const v1::Buffer& buffer = arg.buffer();
          size_t size = std::max<uint64_t>(buffer.size(), buffer.data().size());
          if (size == 0) return fail(make_error(ErrorCode::invalid_argument, "argument " + std::to_string(i) + " is an empty buffer"));
          Result<DevicePtr> pointer = driver.mem_alloc(size);
          if (!pointer) return fail(pointer.error());
          scope.buffers_.push_back(*pointer);
          if (!buffer.data().empty()) {
            auto bytes = std::as_bytes(std::span(buffer.data().data(), buffer.data().size()));
            if (Status s = driver.copy_to_device(*pointer, bytes); !s) return fail(s.error());
          }
          if (buffer.return_contents()) returned.emplace_back(i, *pointer);
          args.add(KernelArg::pointer(*pointer));
          break;
        }
        default:
          return fail(make_error(ErrorCode::invalid_argument, "argument " + std::to_string(i) + " has no value"));
      }
    }
    // Triton passes its scratch buffers after the kernel's own arguments
    // (global, then profile): null where the kernel needs none.
    if (triton) {
      for (uint64_t bytes : triton_scratch_arguments(*triton, kernel->info.param_bytes, args.size(),
                                                     from_proto(request->config()).grid)) {
        if (bytes == 0) {
          args.add(KernelArg::pointer(0));
          continue;
        }
        if (bytes > compiler_->config().max_launch_bytes)
          return fail(make_error(ErrorCode::resource_exhausted, "the Triton kernel's scratch needs " + std::to_string(bytes) +
                                                                    " bytes; the daemon's limit is " +
                                                                    std::to_string(compiler_->config().max_launch_bytes)));
        // cuMemAlloc aligns to 256 bytes at least, more than Triton asks.
        Result<DevicePtr> pointer = driver.mem_alloc(bytes);
        if (!pointer) return fail(pointer.error());
        scope.buffers_.push_back(*pointer);
        args.add(KernelArg::pointer(*pointer));
      }
    }
    if (Status s = args.check_fits(kernel->info); !s) return fail(s.error());

    Result<StreamHandle> stream = driver.stream_create(request->config().stream_priority());
    if (!stream) return fail(stream.error());
    scope.stream_ = *stream;
    Result<EventHandle> start = driver.event_create();
    if (!start) return fail(start.error());
    scope.events_.push_back(*start);
    Result<EventHandle> stop = driver.event_create();
    if (!stop) return fail(stop.error());
    scope.events_.push_back(*stop);

    if (Status s = driver.event_record(*start, *stream); !s) return fail(s.error());
    Result<LaunchPlan> plan = plan_and_launch(driver, *function, kernel->info, limits, *config,
                                              LaunchArgs{args.params(), args.bytes()}, *stream, kernel->source);
    if (!plan) return fail(plan.error());
    if (Status s = driver.event_record(*stop, *stream); !s) return fail(s.error());
    if (Status s = driver.event_synchronize(*stop); !s) return fail(s.error());
    Result<float> ms = driver.event_elapsed_ms(*start, *stop);
    if (!ms) return fail(ms.error());

    for (int i = 0; i < request->args_size(); ++i) response->add_outputs();
    for (auto [index, pointer] : returned) {
      const v1::Buffer& buffer = request->args(index).buffer();
      std::string* out = response->mutable_outputs(index);
      out->resize(std::max<uint64_t>(buffer.size(), buffer.data().size()));
      if (Status s = driver.copy_to_host(std::as_writable_bytes(std::span(out->data(), out->size())), pointer); !s)
        return fail(s.error());
    }
    response->set_kernel_ms(*ms);
    to_proto(*plan, from_device, *response->mutable_plan());
    response->set_key(kernel->artifact->key);
    spdlog::info("launched {} grid {} block {}: {:.3f} ms", plan->kernel, to_string(plan->grid), to_string(plan->block), *ms);
    return grpc::Status::OK;
  });
}

}  // namespace kjit
