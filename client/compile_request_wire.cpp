#include "client/compile_request_wire.h"

#include "convert/wire_convert.h"

namespace kjit {

void to_wire(const CompileRequest& request, v1::CompileRequest& wire) {
  wire.mutable_input()->set_kind(to_proto(request.input_kind));
  wire.mutable_input()->set_data(request.input);
  wire.mutable_input()->set_name(request.input_name);
  wire.set_target(request.target);
  for (const std::string& option : request.options) wire.add_options(option);
  for (const auto& [name, content] : request.headers) (*wire.mutable_headers())[name] = content;
  for (const std::string& expression : request.name_expressions) wire.add_name_expressions(expression);
  // A cubin is the API's default: sent as UNSPECIFIED, which the daemon
  // reads as the target's own binary (a cubin for cuda:, a code object for
  // hip:), so the same request builds for either vendor.
  if (request.artifact != ArtifactKind::cubin) wire.set_artifact(to_proto(request.artifact));
  wire.set_pipeline(request.pipeline);
  for (const auto& [key, value] : request.pass_args) (*wire.mutable_pass_args())[key] = value;
  wire.set_allow_ptx_fallback(request.allow_ptx_fallback);
  for (const std::string& target : request.targets) wire.add_targets(target);
}

}  // namespace kjit
