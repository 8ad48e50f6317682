"""Compiles N small CUDA C++ programs with NVIDIA's cuda.core for sm_90
without a GPU, through kjit.cuda_core.ProgramCache, and prints what it did
as JSON: NVRTC compiles run here (each followed by the cache's store),
programs whose compile failed, seconds in Program.compile, each cubin's
SHA-256. Run in fresh processes by test_cuda_core.py and
bench/claims_bench.py, with KJIT_SOCKET and the namespace in the environment.

    cuda_core_child.py N [--fail] [--arch sm_90]
"""

import argparse
import hashlib
import json
import sys
import time

from cuda.core import Program, ProgramOptions

from kjit.cuda_core import ProgramCache


class CountingCache(ProgramCache):
    """Counts the stores: cuda.core stores exactly once after each NVRTC compile."""
    compiles = 0

    def __setitem__(self, key, value):
        CountingCache.compiles += 1
        super().__setitem__(key, value)


def program(i: int, fail: bool) -> str:
    body = "x[threadIdx.x] = x[threadIdx.x] * %d.0f + sinf(x[threadIdx.x]);" % (i + 1)
    if fail:
        body += " undefined_here();"  # an error NVRTC reports: the compile raises
    return 'extern "C" __global__ void k%d(float* x) { %s }' % (i, body)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int)
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    cache = CountingCache()
    digests, failed = {}, 0
    start = time.perf_counter()
    for i in range(args.count):
        try:
            compiled = Program(program(i, args.fail), "c++", ProgramOptions(arch=args.arch)).compile("cubin",
                                                                                                  cache=cache)
        except Exception:  # noqa: BLE001  (NVRTC's error for a program that does not compile)
            failed += 1
            continue
        digests["k%d" % i] = hashlib.sha256(bytes(compiled.code)).hexdigest()
    json.dump({"compiles": CountingCache.compiles, "failed": failed, "seconds": time.perf_counter() - start,
               "cubins": digests}, sys.stdout)


if __name__ == "__main__":
    main()
