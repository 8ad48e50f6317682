"""One Triton process of bench/triton_remote_bench.py: compiles the corpus of
tests/triton/kernels.py (Python source, each kernel with its own options)
for one target with triton.compile, as a model's process would at start, and
prints what it cost as JSON: wall seconds from the start of the process, its
CPU seconds (its own and its children's: Triton runs ptxas as a child), and
what remote compile did (kjit.triton.remote_compile_stats, when loaded).
Each kernel done is a line on stderr ("done NAME"), for a bench that stops
the daemon mid-run.

    python bench/triton_remote_child.py cuda:90
"""

import time

START = time.perf_counter()
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "triton", "kernels.py")


def main():
    backend, _, arch = sys.argv[1].partition(":")
    target = GPUTarget("hip", arch, 64) if backend == "hip" else GPUTarget("cuda", int(arch), 32)
    spec = importlib.util.spec_from_file_location("kernels", KERNELS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    failed = []
    for name, (fn, signature, constexprs, options) in module.CORPUS.items():
        try:
            triton.compile(ASTSource(fn, signature, constexprs), target=target, options=options)
        except Exception as error:  # noqa: BLE001  (a kernel Triton cannot build for this target)
            failed.append("%s: %s" % (name, str(error).splitlines()[0] if str(error) else type(error).__name__))
        print("done %s" % name, file=sys.stderr, flush=True)
    times = os.times()
    remote = sys.modules["kjit._triton_remote"].stats() if "kjit._triton_remote" in sys.modules else None
    json.dump({"wall": time.perf_counter() - START,
               "cpu": times.user + times.system + times.children_user + times.children_system,
               "kernels": len(module.CORPUS), "failed": failed, "remote": remote}, sys.stdout)


if __name__ == "__main__":
    main()
