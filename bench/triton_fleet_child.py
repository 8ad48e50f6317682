"""One Triton process of a fleet (bench/claims_bench.py): compiles 12 distinct
kernels for sm_80, sm_90 and sm_100 without a GPU (36 compiles), in the same
order as every other process of the fleet, as the ranks of one job do, and
prints what it did as JSON: seconds from start to the last compile, compiles
that raised (a fault the bench planted), each cubin's SHA-256.

The cache manager and its daemon come from the environment
(TRITON_CACHE_MANAGER, KJIT_SOCKET, KJIT_TRITON_NAMESPACE,
KJIT_TRITON_CLAIM_WAIT); Triton's assembler from TRITON_PTXAS_PATH and
TRITON_PTXAS_BLACKWELL_PATH (the bench's counting wrappers)."""

import hashlib
import json
import sys
import time
from pathlib import Path

start = time.perf_counter()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402


# The Triton tests' three kernels, with a fourth below: the same code as
# the tests compile.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client" / "python" / "tests"))
from triton_kernels import add_kernel, matmul_kernel, softmax_kernel  # noqa: E402


@triton.jit
def rms_kernel(x, out, n, eps, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    values = tl.load(x + tl.program_id(0) * n + cols, mask=cols < n, other=0.0)
    scale = 1.0 / tl.sqrt(tl.sum(values * values, axis=0) / n + eps)
    tl.store(out + tl.program_id(0) * n + cols, values * scale, mask=cols < n)


ELEMENTWISE = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}
ROWS = {"x": "*fp32", "out": "*fp32", "stride": "i32", "n": "i32", "BLOCK": "constexpr"}
MATMUL = {"a": "*fp16", "b": "*fp16", "c": "*fp32", "BLOCK": "constexpr"}
RMS = {"x": "*fp32", "out": "*fp32", "n": "i32", "eps": "fp32", "BLOCK": "constexpr"}

# 12 kernels: four functions at three block sizes (each its own cache key).
KERNELS = ([(add_kernel, ELEMENTWISE, b) for b in (256, 1024, 4096)] +
           [(softmax_kernel, ROWS, b) for b in (128, 512, 2048)] +
           [(matmul_kernel, MATMUL, b) for b in (16, 32, 64)] +
           [(rms_kernel, RMS, b) for b in (256, 1024, 4096)])
ARCHS = (80, 90, 100)


def main():
    cubins, failed = {}, 0
    for arch in ARCHS:
        for fn, signature, block in KERNELS:
            name = "%s_%d_sm%d" % (fn.__name__, block, arch)
            try:
                compiled = triton.compile(ASTSource(fn, signature, {"BLOCK": block}),
                                          target=GPUTarget("cuda", arch, 32))
            except Exception:  # noqa: BLE001  (a fault the bench planted in the assembler)
                failed += 1
                continue
            cubins[name] = hashlib.sha256(compiled.asm["cubin"]).hexdigest()
    json.dump({"seconds": time.perf_counter() - start, "failed": failed, "cubins": cubins}, sys.stdout)


if __name__ == "__main__":
    main()
