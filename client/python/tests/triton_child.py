"""Compiles three Triton kernels (one with tl.dot) for sm_90 without a GPU
and prints what it got as JSON: seconds spent importing triton, seconds in
the three triton.compile calls, each cubin's SHA-256, and whether gRPC was
loaded. Run in a fresh
process by test_triton.py and by bench/peer_comparison.py, with the cache
manager and cache directory under test set in its environment."""

import time

start = time.perf_counter()
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import_seconds = time.perf_counter() - start


from triton_kernels import add_kernel, matmul_kernel, softmax_kernel  # noqa: E402  (beside this file)


KERNELS = [
    (add_kernel, {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024}),
    (softmax_kernel, {"x": "*fp32", "out": "*fp32", "stride": "i32", "n": "i32", "BLOCK": "constexpr"},
     {"BLOCK": 256}),
    (matmul_kernel, {"a": "*fp16", "b": "*fp16", "c": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64}),
]


def main():
    # KJIT_CHILD_TARGET ("cuda:90", "hip:gfx942"), KJIT_CHILD_OPTIONS (JSON:
    # Triton's options for every kernel), KJIT_CHILD_INSTALL=1: remote compile
    # turned on from code (kjit.triton.install) rather than by KJIT_TRITON,
    # with KJIT_CHILD_EDITS (JSON) as its edits.
    backend, _, arch = os.environ.get("KJIT_CHILD_TARGET", "cuda:90").partition(":")
    target = GPUTarget("hip", arch, 64) if backend == "hip" else GPUTarget("cuda", int(arch), 32)
    options = json.loads(os.environ.get("KJIT_CHILD_OPTIONS", "{}")) or None
    if os.environ.get("KJIT_CHILD_INSTALL") == "1":
        import kjit.triton
        edits = os.environ.get("KJIT_CHILD_EDITS")
        kjit.triton.install(compile=True, edits=json.loads(edits) if edits else None)
    start = time.perf_counter()
    cpu_start = time.process_time()
    cubins = {}
    hashes = {}
    for fn, signature, constexprs in KERNELS:
        compiled = triton.compile(ASTSource(fn, signature, constexprs), target=target, options=options)
        cubins[fn.__name__] = hashlib.sha256(compiled.asm["hsaco" if backend == "hip" else "cubin"]).hexdigest()
        hashes[fn.__name__] = compiled.hash
    seconds = time.perf_counter() - start
    remote = sys.modules["kjit._triton_remote"].stats() if "kjit._triton_remote" in sys.modules else None
    # Whether the cache manager needed gRPC (kjit's direct reads do not).
    json.dump({"import_seconds": import_seconds, "seconds": seconds, "cpu_seconds": time.process_time() - cpu_start,
               "cubins": cubins, "hashes": hashes, "remote": remote,
               "triton": triton.__version__, "grpc_loaded": "grpc" in sys.modules}, sys.stdout)


if __name__ == "__main__":
    main()
