#include "convert/wire_convert.h"

#include "convert/input_kind_names.h"

namespace kjit {

// Through the names: a wire value is the core's kind of the same canonical
// name (InputKinds.EveryWireValueHasOneRow holds each side to the other).
v1::InputKind to_proto(InputKind kind) {
  for (const WireInputKind& wire : wire_input_kinds())
    if (wire.name == to_string(kind)) return wire.value;
  return v1::INPUT_KIND_UNSPECIFIED;
}

std::optional<InputKind> from_proto(v1::InputKind kind) {
  for (const WireInputKind& wire : wire_input_kinds())
    if (wire.value == kind) return parse_input_kind(wire.name);
  return std::nullopt;
}

v1::ArtifactKind to_proto(ArtifactKind kind) {
  switch (kind) {
    case ArtifactKind::ptx: return v1::ARTIFACT_KIND_PTX;
    case ArtifactKind::fatbin: return v1::ARTIFACT_KIND_FATBIN;
    case ArtifactKind::hsaco: return v1::ARTIFACT_KIND_HSACO;
    case ArtifactKind::hip_bundle: return v1::ARTIFACT_KIND_HIP_BUNDLE;
    case ArtifactKind::cubin: break;
  }
  return v1::ARTIFACT_KIND_CUBIN;
}

ArtifactKind from_proto(v1::ArtifactKind kind) {
  switch (kind) {
    case v1::ARTIFACT_KIND_PTX: return ArtifactKind::ptx;
    case v1::ARTIFACT_KIND_FATBIN: return ArtifactKind::fatbin;
    case v1::ARTIFACT_KIND_HSACO: return ArtifactKind::hsaco;
    case v1::ARTIFACT_KIND_HIP_BUNDLE: return ArtifactKind::hip_bundle;
    default: return ArtifactKind::cubin;
  }
}

void to_proto(const Dim3& dims, v1::Dim3& out) {
  out.set_x(dims.x);
  out.set_y(dims.y);
  out.set_z(dims.z);
}

Dim3 from_proto(const v1::Dim3& dims) { return Dim3{dims.x(), dims.y(), dims.z()}; }

void to_proto(const KernelInfo& info, v1::KernelInfo& out) {
  out.set_name(info.name);
  out.set_lowered_name(info.lowered_name);
  out.set_registers(info.registers);
  out.set_static_shared_bytes(info.static_shared_bytes);
  out.set_shared_section_bytes(info.shared_section_bytes);
  out.set_local_bytes(info.local_bytes);
  out.set_max_threads_per_block(info.max_threads_per_block);
  to_proto(info.required_threads, *out.mutable_required_threads());
  to_proto(info.cluster_dims, *out.mutable_cluster_dims());
  out.set_max_registers(info.max_registers);
  out.set_param_bytes(info.param_bytes);
  out.set_max_cluster_rank(info.max_cluster_rank);
  out.set_scalar_registers(info.scalar_registers);
  out.set_wavefront_size(info.wavefront_size);
}

KernelInfo from_proto(const v1::KernelInfo& info) {
  KernelInfo out;
  out.name = info.name();
  out.lowered_name = info.lowered_name();
  out.registers = info.registers();
  out.static_shared_bytes = info.static_shared_bytes();
  out.shared_section_bytes = info.shared_section_bytes();
  out.local_bytes = info.local_bytes();
  out.max_threads_per_block = info.max_threads_per_block();
  out.required_threads = from_proto(info.required_threads());
  out.cluster_dims = from_proto(info.cluster_dims());
  out.max_registers = info.max_registers();
  out.param_bytes = info.param_bytes();
  out.max_cluster_rank = info.max_cluster_rank();
  out.scalar_registers = info.scalar_registers();
  out.wavefront_size = info.wavefront_size();
  return out;
}

void to_proto(const TritonEdit& edit, v1::TritonEdit& out) {
  out.set_op(edit.op);
  out.set_anchor(edit.anchor);
  out.set_pass(edit.pass);
  out.set_stage(edit.stage);
  for (const std::string& pass : edit.passes) out.add_passes(pass);
}

TritonEdit from_proto(const v1::TritonEdit& edit) {
  return {edit.op(), edit.anchor(), edit.pass(), edit.stage(), {edit.passes().begin(), edit.passes().end()}};
}

}  // namespace kjit
