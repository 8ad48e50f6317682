#include "convert/artifact_record.h"

namespace kjit {
namespace {

void to_record(const Dim3& dims, internal::Dim3& out) {
  out.set_x(dims.x);
  out.set_y(dims.y);
  out.set_z(dims.z);
}

Dim3 from_record(const internal::Dim3& dims) { return Dim3{dims.x(), dims.y(), dims.z()}; }

void to_record(const KernelInfo& kernel, internal::Kernel& out) {
  out.set_name(kernel.name);
  out.set_lowered_name(kernel.lowered_name);
  out.set_registers(kernel.registers);
  out.set_static_shared_bytes(kernel.static_shared_bytes);
  out.set_shared_section_bytes(kernel.shared_section_bytes);
  out.set_local_bytes(kernel.local_bytes);
  out.set_max_threads_per_block(kernel.max_threads_per_block);
  to_record(kernel.required_threads, *out.mutable_required_threads());
  to_record(kernel.cluster_dims, *out.mutable_cluster_dims());
  out.set_max_registers(kernel.max_registers);
  out.set_param_bytes(kernel.param_bytes);
  out.set_max_cluster_rank(kernel.max_cluster_rank);
  out.set_scalar_registers(kernel.scalar_registers);
  out.set_wavefront_size(kernel.wavefront_size);
}

KernelInfo from_record(internal::Kernel&& kernel) {
  KernelInfo out;
  out.name = std::move(*kernel.mutable_name());
  out.lowered_name = std::move(*kernel.mutable_lowered_name());
  out.registers = kernel.registers();
  out.static_shared_bytes = kernel.static_shared_bytes();
  out.shared_section_bytes = kernel.shared_section_bytes();
  out.local_bytes = kernel.local_bytes();
  out.max_threads_per_block = kernel.max_threads_per_block();
  out.required_threads = from_record(kernel.required_threads());
  out.cluster_dims = from_record(kernel.cluster_dims());
  out.max_registers = kernel.max_registers();
  out.param_bytes = kernel.param_bytes();
  out.max_cluster_rank = kernel.max_cluster_rank();
  out.scalar_registers = kernel.scalar_registers();
  out.wavefront_size = kernel.wavefront_size();
  return out;
}

}  // namespace

void to_record(const Artifact& artifact, internal::ArtifactRecord& record) {
  record.set_kind(std::string(to_string(artifact.kind)));
  record.set_target(artifact.target);
  for (const KernelInfo& kernel : artifact.kernels) to_record(kernel, *record.add_kernels());
  for (const auto& [expression, symbol] : artifact.lowered_names) {
    internal::LoweredName& out = *record.add_lowered_names();
    out.set_expression(expression);
    out.set_symbol(symbol);
  }
  for (const StageTiming& stage : artifact.timings) {
    internal::StageTiming& out = *record.add_timings();
    out.set_stage(stage.stage);
    out.set_ms(stage.ms);
    for (const PassTiming& pass : stage.passes) {
      internal::PassTiming& p = *out.add_passes();
      p.set_pass(pass.pass);
      p.set_ms(pass.ms);
    }
  }
  record.set_log(artifact.log);
  record.set_key(artifact.key);
  for (const KeyComponent& component : artifact.key_components) {
    internal::KeyComponent& out = *record.add_key_components();
    out.set_name(component.name);
    out.set_value(component.value);
  }
  record.set_pipeline(artifact.pipeline);
  record.set_toolkit(artifact.toolkit);
  record.set_triton_metadata(artifact.triton_metadata);
  record.set_triton_build(artifact.triton_build);
  for (const auto& [extension, text] : artifact.triton_files) {
    internal::TritonFile& file = *record.add_triton_files();
    file.set_extension(extension);
    file.set_text(text);
  }
  for (const std::string& note : artifact.notes) record.add_notes(note);
}

Result<Artifact> from_record(internal::ArtifactRecord&& record) {
  std::optional<ArtifactKind> kind = parse_artifact_kind(record.kind());
  if (!kind) return make_error(ErrorCode::internal, "unknown artifact kind '" + record.kind() + "'");
  Artifact a;
  a.kind = *kind;
  a.bytes = std::move(*record.mutable_payload());
  a.target = std::move(*record.mutable_target());
  a.kernels.reserve(record.kernels_size());
  for (internal::Kernel& kernel : *record.mutable_kernels()) a.kernels.push_back(from_record(std::move(kernel)));
  for (internal::LoweredName& name : *record.mutable_lowered_names())
    a.lowered_names.emplace(std::move(*name.mutable_expression()), std::move(*name.mutable_symbol()));
  for (internal::StageTiming& stage : *record.mutable_timings()) {
    StageTiming& out = a.timings.emplace_back();
    out.stage = std::move(*stage.mutable_stage());
    out.ms = stage.ms();
    for (internal::PassTiming& pass : *stage.mutable_passes())
      out.passes.push_back(PassTiming{std::move(*pass.mutable_pass()), pass.ms()});
  }
  a.log = std::move(*record.mutable_log());
  a.key = std::move(*record.mutable_key());
  for (internal::KeyComponent& component : *record.mutable_key_components())
    a.key_components.push_back(KeyComponent{std::move(*component.mutable_name()), std::move(*component.mutable_value())});
  a.pipeline = std::move(*record.mutable_pipeline());
  a.toolkit = std::move(*record.mutable_toolkit());
  a.triton_metadata = std::move(*record.mutable_triton_metadata());
  a.triton_build = std::move(*record.mutable_triton_build());
  for (internal::TritonFile& file : *record.mutable_triton_files())
    a.triton_files.emplace(std::move(*file.mutable_extension()), std::move(*file.mutable_text()));
  for (std::string& note : *record.mutable_notes()) a.notes.push_back(std::move(note));
  return a;
}

}  // namespace kjit
