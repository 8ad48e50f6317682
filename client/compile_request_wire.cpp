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
  for (const auto& [name, value] : request.triton_options) (*wire.mutable_triton_options())[name] = value;
  wire.set_triton_build(request.triton_build);
  for (const TritonEdit& edit : request.triton_edits) to_proto(edit, *wire.add_triton_edits());
  for (const std::string& name : request.triton_plugins_off) wire.add_triton_plugins_off(name);
}

Result<CompileRequest> from_wire(const v1::CompileRequest& wire) {
  CompileRequest request;
  const std::optional<InputKind> kind = from_proto(wire.input().kind());
  if (!kind)
    return make_error(ErrorCode::invalid_argument,
                      "input kind " + std::to_string(wire.input().kind()) + " is unknown to this client");
  request.input_kind = *kind;
  request.input = wire.input().data();
  request.input_name = wire.input().name();
  request.target = wire.target();
  request.options.assign(wire.options().begin(), wire.options().end());
  for (const auto& [name, content] : wire.headers()) request.headers[name] = content;
  request.name_expressions.assign(wire.name_expressions().begin(), wire.name_expressions().end());
  request.artifact = from_proto(wire.artifact());
  request.pipeline = wire.pipeline();
  for (const auto& [key, value] : wire.pass_args()) request.pass_args[key] = value;
  request.allow_ptx_fallback = wire.allow_ptx_fallback();
  request.targets.assign(wire.targets().begin(), wire.targets().end());
  for (const auto& [name, value] : wire.triton_options()) request.triton_options[name] = value;
  request.triton_build = wire.triton_build();
  for (const v1::TritonEdit& edit : wire.triton_edits()) request.triton_edits.push_back(from_proto(edit));
  request.triton_plugins_off.assign(wire.triton_plugins_off().begin(), wire.triton_plugins_off().end());
  return request;
}

}  // namespace kjit
