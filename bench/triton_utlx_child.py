"""The Triton 3.8 + uTLX side of bench/triton_utlx_bench.py, run with the
interpreter of install-deps' triton-3.8.0 build (whose triton-utlx .pth puts
libutlx.so in TRITON_PLUGIN_PATHS at start), importing utlx_plugin as that
build's users do. Two modes:

  serve    a warm process compiling Triton IR files: reads one JSON request
           a line on stdin ({"file", "target", "options"}), compiles it with
           triton.compile into a new, empty TRITON_CACHE_DIR (so never a
           Triton cache hit) from that directory (as kjit's worker and
           reference_compile.py do), answers {"ms", "name", "binary_sha256"}
           a line on stdout. The first request of a process pays its
           imports and first-use costs; the bench leaves it out.
  process  a model process's start: compiles the four TLX kernels of
           tests/triton/utlx_kernels.py (tlx_kernels.py's included) for
           cuda:90 from Python (ASTSource, as @triton.jit's warm-up does;
           no GPU needed for an explicit target), prints JSON: the kernels'
           binary digests and what remote compile did.

The client sits on PYTHONPATH, where no .pth file runs: with KJIT_TRITON set
this does first what the package's kjit-triton.pth does at start.

    .deps/triton-builds/triton-3.8.0/bin/python bench/triton_utlx_child.py serve|process
"""

import os

os.environ.get("KJIT_TRITON") and __import__("kjit._triton_startup")  # kjit-triton.pth's line

import hashlib  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import triton  # noqa: E402
import utlx_plugin  # noqa: E402,F401  its stages hook and patches, as its users get them
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PROCESS_KERNELS = ("utlx_async_load_matmul", "utlx_async_dot_matmul", "utlx_aliased_epilogue_matmul",
                   "tlx_pipelined_matmul")


def gpu_target(name: str) -> GPUTarget:
    backend, _, arch = name.partition(":")
    return GPUTarget("hip", arch, 64) if backend == "hip" else GPUTarget("cuda", int(arch), 32)


def binary_of(kernel) -> bytes:
    return kernel.asm["hsaco"] if "hsaco" in kernel.asm else kernel.asm["cubin"]


def serve():
    root = tempfile.mkdtemp(prefix="kjit-utlx-serve-")
    for n, line in enumerate(sys.stdin):
        request = json.loads(line)
        cache = os.path.join(root, str(n))
        os.makedirs(cache)
        os.environ["TRITON_CACHE_DIR"] = cache  # Triton's knobs read it at each compile
        os.chdir(cache)
        start = time.perf_counter()
        kernel = triton.compile(request["file"], target=gpu_target(request["target"]), options=request["options"])
        ms = (time.perf_counter() - start) * 1000
        if not all(str(path).startswith(cache) for path in kernel.metadata_group.values()):
            raise SystemExit("Triton wrote outside the fresh cache directory: a hit?")
        print(json.dumps({"ms": ms, "name": kernel.metadata.name,
                          "binary_sha256": hashlib.sha256(binary_of(kernel)).hexdigest()}), flush=True)


def process():
    spec = importlib.util.spec_from_file_location("utlx_kernels", REPO / "tests" / "triton" / "utlx_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    target = gpu_target("cuda:90")
    binaries = {}
    for name in PROCESS_KERNELS:
        fn, signature, constexprs, options, attrs, _ = module.CORPUS[name]
        kernel = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options)
        binaries[name] = hashlib.sha256(binary_of(kernel)).hexdigest()
    remote = sys.modules["kjit._triton_remote"].stats() if "kjit._triton_remote" in sys.modules else None
    json.dump({"binaries": binaries, "remote": remote, "triton": triton.__version__}, sys.stdout)


if __name__ == "__main__":
    {"serve": serve, "process": process}[sys.argv[1]]()
