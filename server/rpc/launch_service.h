// The kjit.v1.Launcher gRPC service: plans launches for any target, and on a
// daemon that owns a GPU, launches kernels with buffers sent in the request.
#pragma once

#include <memory>
#include <mutex>
#include <optional>

#include "server/compile/cached_compiler.h"
#include "server/rpc/call_gate.h"
#include "kjit/v1/launch.grpc.pb.h"
#include "launch/device_limits.h"
#include "launch/driver_binding.h"
#include "launch/launch_plan.h"

namespace kjit {

class LaunchService final : public v1::Launcher::Service {
 public:
  // gate null: calls pass a gate without tenants or metrics.
  LaunchService(std::shared_ptr<const CachedCompiler> compiler, std::shared_ptr<DriverBinding> driver,
                std::shared_ptr<CallGate> gate = nullptr);

  grpc::Status PlanLaunch(grpc::ServerContext* context, const v1::PlanLaunchRequest* request,
                          v1::PlanLaunchResponse* response) override;
  grpc::Status Launch(grpc::ServerContext* context, const v1::LaunchRequest* request,
                      v1::LaunchResponse* response) override;

  // The kernel a request names, compiled (or from the cache), with its info.
  struct ResolvedKernel {
    std::shared_ptr<const Artifact> artifact;  // shared with the cache on a hit
    KernelInfo info;
    KernelInfoSource source = KernelInfoSource::cubin;
    // For a request with several targets: which part the GPU loads, and why.
    std::optional<Target> device;
    std::string chosen_part;
  };

 private:
  // `device`: the GPU a request with several targets is resolved for.
  // The caller's namespace holds the kernel (compiled for it, or named by key).
  Result<ResolvedKernel> resolve(const v1::KernelSource& source, std::optional<Target> device, const Caller& caller,
                                 const grpc::ServerContext& context) const;
  // This daemon's GPU, when it has one.
  std::optional<Target> this_device();
  // The device's limits when a driver is there, else the target table's.
  DeviceLimits limits_for(const Target& target, bool& from_device);

  std::shared_ptr<const CachedCompiler> compiler_;
  std::shared_ptr<DriverBinding> driver_;
  std::shared_ptr<CallGate> gate_;
  std::mutex device_mutex_;  // one launch at a time on the daemon's GPU
  std::optional<DeviceLimits> device_limits_;
};

}  // namespace kjit
