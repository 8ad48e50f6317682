// The operator's calls of the Client: a reload of the daemon's configuration.
#include "client/client_impl.h"

namespace kjit {

Result<ReloadResult> Client::reload() const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::ReloadResponse response;
  grpc::Status status = impl_->diagnostics->Reload(&context, v1::ReloadRequest{}, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  ReloadResult out;
  out.reloaded.assign(response.reloaded().begin(), response.reloaded().end());
  out.needs_restart.assign(response.needs_restart().begin(), response.needs_restart().end());
  return out;
}

}  // namespace kjit
