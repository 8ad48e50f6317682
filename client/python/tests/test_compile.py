"""Compiles against a real kjitd: CUDA and PTX in, cubins and metadata out, errors."""

import re

import grpc
import pytest

import kjit
from conftest import unique

ELF_MAGIC = b"\x7fELF"
TARGET = "cuda:90"


def vector_add(name: str) -> str:
    return r"""
// A first comment line, which must not make this look like PTX.
extern "C" __global__ void __launch_bounds__(256) %s(const float* a, const float* b, float* c, int n) {
  __shared__ float staged[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  staged[threadIdx.x %% 128] = i < n ? a[i] : 0.0f;
  __syncthreads();
  if (i < n) c[i] = staged[threadIdx.x %% 128] + b[i];
}
""" % name


def test_cuda_compiles_to_a_cubin_with_kernel_metadata(client):
    name = unique("vadd")
    result = client.compile(vector_add(name), target=TARGET)
    assert result.artifact.startswith(ELF_MAGIC)
    assert result.artifact_kind == "cubin"
    assert result.target == TARGET
    assert result.cache == "compiled" and not result.cache_hit
    assert re.fullmatch(r"[0-9a-f]{64}", result.key)
    assert result.key_components and all(c.name for c in result.key_components)
    assert result.pipeline
    assert result.server_ms > 0
    assert result.timings and result.timings[0].stage

    assert [k.name for k in result.kernels] == [name]
    kernel = result.kernel(name)
    assert kernel.lowered_name == name  # extern "C": not mangled
    assert kernel.registers > 0
    assert kernel.max_threads_per_block == 256
    assert kernel.static_shared_bytes == 128 * 4
    assert kernel.param_bytes == 3 * 8 + 4
    assert isinstance(kernel.required_threads, kjit.Dim3)
    with pytest.raises(KeyError):
        result.kernel("no_such_kernel")


def test_a_second_identical_compile_is_a_memory_hit(client):
    source = vector_add(unique("vadd"))
    first = client.compile(source, target=TARGET)
    second = client.compile(source, target=TARGET)
    assert first.cache == "compiled"
    assert second.cache == "memory" and second.cache_hit
    assert second.key == first.key
    assert second.artifact == first.artifact
    assert second.kernels == first.kernels
    # Each request has its own id, as its log lines name it.
    assert len(first.request_id) == 16 and len(second.request_id) == 16
    assert first.request_id != second.request_id


def test_source_from_a_path_is_named_and_kinded_by_it(client, tmp_path):
    name = unique("from_file")
    path = tmp_path / "kernel.cu"
    path.write_text(vector_add(name))
    result = client.compile(path, target=TARGET)
    assert result.artifact.startswith(ELF_MAGIC)
    assert result.kernels[0].name == name


def test_headers_and_name_expressions(client):
    tag = unique("scale")
    source = r"""
#include "tile.h"
template <typename T> __global__ void %s(T* x, T a) {
  __shared__ T tile[TILE];
  tile[threadIdx.x %% TILE] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = tile[threadIdx.x %% TILE] * a;
}
""" % tag
    expressions = ["%s<float>" % tag, "%s<double>" % tag]
    result = client.compile(source, target=TARGET, headers={"tile.h": "#define TILE 64\n"},
                            name_expressions=expressions)
    assert set(result.lowered_names) == set(expressions)
    for expression, lowered in result.lowered_names.items():
        assert lowered.startswith("_Z") and tag in lowered
    kernels = {k.name: k for k in result.kernels}
    assert set(kernels) == set(expressions)
    assert kernels[expressions[0]].lowered_name == result.lowered_names[expressions[0]]
    assert kernels[expressions[0]].static_shared_bytes == 64 * 4
    assert kernels[expressions[1]].static_shared_bytes == 64 * 8


def test_a_missing_header_fails_with_the_compilers_log(client):
    with pytest.raises(kjit.KjitError) as caught:
        client.compile('#include "not_sent.h"\n__global__ void k() {}\n', target=TARGET)
    assert "not_sent.h" in caught.value.log


def test_ptx_in_cubin_out(client):
    name = unique("via_ptx")
    ptx = client.compile(vector_add(name), target=TARGET, artifact="ptx")
    assert ptx.artifact_kind == "ptx"
    assert b".version" in ptx.artifact and name.encode() in ptx.artifact
    assert kjit.infer_kind(ptx.artifact) == 2  # INPUT_KIND_PTX: inferred, not asked for

    cubin = client.compile(ptx.artifact, target=TARGET)
    assert cubin.artifact.startswith(ELF_MAGIC)
    assert cubin.artifact_kind == "cubin"
    assert [k.name for k in cubin.kernels] == [name]
    assert cubin.kernels[0].max_threads_per_block == 256

    named = client.compile(ptx.artifact.decode(), target=TARGET, kind="ptx")
    assert named.key == cubin.key


def test_a_syntax_error_raises_invalid_argument_with_the_whole_log(client):
    # Enough errors that the log outgrows the excerpt a status message carries.
    body = "".join("  undefined_%d = %d;\n" % (i, i) for i in range(150))
    source = "__global__ void broken_%s() {\n%s  int x = ;\n}\n" % (unique(), body)
    with pytest.raises(kjit.InvalidArgument) as caught:
        client.compile(source, target=TARGET, name="broken.cu")
    error = caught.value
    assert isinstance(error, kjit.KjitError)
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "broken.cu" in error.log
    assert "undefined_0" in error.log and "error" in error.log
    assert "log truncated" not in error.log
    assert len(error.log) > 4096
    assert error.log not in error.details  # the message comes without the log


def test_an_unknown_target_is_invalid_argument(client):
    with pytest.raises(kjit.InvalidArgument) as caught:
        client.compile(vector_add(unique()), target="cuda:1")
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "cuda:1" in caught.value.details or "target" in caught.value.details.lower()


def test_a_disallowed_option_is_refused(client):
    with pytest.raises(kjit.InvalidArgument):
        client.compile(vector_add(unique()), target=TARGET, options=["--definitely-not-an-option"])


def test_options_change_the_key(client):
    source = vector_add(unique())
    plain = client.compile(source, target=TARGET)
    defined = client.compile(source, target=TARGET, options=["-DEXTRA=1"])
    assert plain.key != defined.key
    assert defined.artifact.startswith(ELF_MAGIC)


def test_several_targets_give_a_fatbin(client):
    from kjit.v1 import compiler_pb2
    if "targets" not in compiler_pb2.CompileRequest.DESCRIPTOR.fields_by_name:
        pytest.skip("these protos predate CompileRequest.targets")
    name = unique("fat")
    result = client.compile(vector_add(name), target=["cuda:80", "cuda:90"])
    assert result.artifact_kind == "fatbin"
    assert result.artifact
    parts = {(e.target, e.kind) for e in result.entries}
    assert ("cuda:80", "cubin") in parts and ("cuda:90", "cubin") in parts
    cubins = [e for e in result.entries if e.kind == "cubin"]
    assert all(e.kernels and e.kernels[0].name == name for e in cubins)
    assert all(e.size > 0 and re.fullmatch(r"[0-9a-f]{64}", e.key) for e in result.entries)


def test_plan_of_a_compiled_kernel(client):
    name = unique("planned")
    compiled = client.compile(vector_add(name), target=TARGET)
    by_key = client.plan(compiled, name, grid=(1024,), block=256)
    assert by_key.key == compiled.key
    assert by_key.kernel.name == name
    assert by_key.kernel.max_threads_per_block == 256
    assert by_key.plan.kernel == name
    assert by_key.plan.grid == kjit.Dim3(1024, 1, 1)
    assert by_key.plan.block == kjit.Dim3(256, 1, 1)
    assert by_key.plan.static_shared_bytes >= by_key.kernel.static_shared_bytes == 128 * 4
    assert by_key.plan.description

    by_source = client.plan(vector_add(name), name, block=(16, 16), target=TARGET)
    assert by_source.key == compiled.key
    assert tuple(by_source.plan.block) == (16, 16, 1)


def test_planning_a_missing_kernel_is_not_found(client):
    compiled = client.compile(vector_add(unique()), target=TARGET)
    with pytest.raises(kjit.NotFound):
        client.plan(compiled.key, "no_such_kernel", block=32)


def test_describe_pipeline(client):
    description = client.describe_pipeline("cuda", TARGET)
    assert description.name
    assert description.toml.strip()
    assert description.name in description.known_pipelines


AMDGPU_IR = r"""target triple = "amdgcn-amd-amdhsa"
@tile = internal addrspace(3) global [8192 x float] undef, align 4

define amdgpu_kernel void @%s(ptr addrspace(1) %%x) #0 {
entry:
  %%tid = call i32 @llvm.amdgcn.workitem.id.x()
  %%slot = getelementptr [8192 x float], ptr addrspace(3) @tile, i32 0, i32 %%tid
  %%p = getelementptr float, ptr addrspace(1) %%x, i32 %%tid
  %%v = load float, ptr addrspace(1) %%p, align 4
  store float %%v, ptr addrspace(3) %%slot, align 4
  call void @llvm.amdgcn.s.barrier()
  %%w = load float, ptr addrspace(3) %%slot, align 4
  store float %%w, ptr addrspace(1) %%p, align 4
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
"""


def test_llvm_ir_for_a_hip_target_gives_a_code_object_with_amd_metadata(client):
    name = unique("tile")
    result = client.compile(AMDGPU_IR % name, target="hip:gfx1100", kind="llvm-ir")
    assert result.artifact.startswith(ELF_MAGIC)
    assert result.artifact_kind == "hsaco"
    assert result.target == "hip:gfx1100"
    assert result.pipeline == "llvm-amdgpu"
    (kernel,) = result.kernels
    assert kernel.name == name
    assert kernel.static_shared_bytes >= 32768
    assert kernel.max_threads_per_block == 256
    assert kernel.wavefront_size == 32
    assert kernel.scalar_registers > 0


def test_several_hip_targets_give_one_code_object_bundle(client):
    result = client.compile(AMDGPU_IR % unique("tile"), target=["hip:gfx90a", "hip:gfx942"], kind="llvm-ir")
    assert result.artifact_kind == "hip-bundle"
    assert result.artifact.startswith(b"__CLANG_OFFLOAD_BUNDLE__")
    assert [e.target for e in result.entries] == ["hip:gfx90a", "hip:gfx942"]
