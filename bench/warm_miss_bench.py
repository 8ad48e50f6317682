#!/usr/bin/env python3
"""Misses at the speed of a warm compiler: kjitd's misses against a fresh
NVRTC + nvJitLink process per kernel, on families of kernels that share
their includes.

Run through bench/warm_miss_bench.sh. Two families of 4 kernels each, same
includes and different bodies: CUB (block_reduce + block_scan) and
cuda::std + cuda/barrier. For each kernel (sm_90 cubin):

  fresh NVRTC    bench/peer_nvrtc.c in a process of its own (the baseline)
  kjit miss      `kjit compile` (a process too) on a kjitd that keeps
                 precompiled headers in its workers (the default)
  kjit --no-pch  the same on a kjitd started with --no-pch

Each daemon is started fresh with no cache; its first compile is sent as
soon as it serves, so it includes whatever wait for a worker remains. The
figures are ratios against the baseline measured in the same run, for each
family's first miss (a worker's first compile of the header set: no PCH),
second (writes the PCH) and 3rd-4th misses (use it; target <= 0.25x), and
the first compile on a fresh kjitd (target <= 1.1x).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SM = "90"


def cub_kernel(i):
    body = "Sum(p)" if i % 2 else "Reduce(p, Larger())"
    return f"""#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
struct Larger {{ __device__ int operator()(int a, int b) const {{ return a > b ? a : b; }} }};
extern "C" __global__ void cub_{i}(const int* in, int* out) {{
  using R = cub::BlockReduce<int, 128>;
  using S = cub::BlockScan<int, 128>;
  __shared__ union {{ typename R::TempStorage r; typename S::TempStorage s; }} t;
  int v = in[blockIdx.x * 128 + threadIdx.x] * {i};
  int p; S(t.s).ExclusiveSum(v, p);
  __syncthreads();
  int s = R(t.r).{body};
  if (threadIdx.x == 0) out[blockIdx.x] = s + {i};
}}
"""


def barrier_kernel(i):
    return f"""#include <cuda/std/array>
#include <cuda/std/type_traits>
#include <cuda/std/atomic>
#include <cuda/barrier>
template <typename T> __device__ T twice(T v) {{ return cuda::std::is_integral_v<T> ? v * 2 : v; }}
extern "C" __global__ void barrier_{i}(int* out) {{
  __shared__ char storage[sizeof(cuda::barrier<cuda::thread_scope_block>)];
  auto* bar = reinterpret_cast<cuda::barrier<cuda::thread_scope_block>*>(storage);
  if (threadIdx.x == 0) init(bar, blockDim.x);
  __syncthreads();
  cuda::std::array<int, 4> a{{{i}, 2, 3, 4}};
  bar->arrive_and_wait();
  cuda::std::atomic_ref<int> sum(out[0]);
  sum.fetch_add(twice(a[threadIdx.x % 4]) * {i});
}}
"""


FAMILIES = {"cub": cub_kernel, "cuda::std+barrier": barrier_kernel}
PER_FAMILY = 4


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def timed(argv, env=None):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = (time.perf_counter() - start) * 1e3
    if done.returncode != 0:
        raise RuntimeError("exit %d: %s\n%s" % (done.returncode, " ".join(argv), done.stderr.decode()[-3000:]))
    return elapsed


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="kjit-warm-miss-"))
        self.kjit = str(Path(args.kjit).resolve())
        self.kjitd = str(Path(args.kjitd).resolve())
        self.sources = {}  # (family, i) -> path
        self.salt = 0

    def write_sources(self, salt):
        """Every rep compiles new sources (a comment differs): misses, never hits."""
        out = {}
        for family, make in FAMILIES.items():
            for i in range(1, PER_FAMILY + 1):
                path = self.work / ("%s-%d-%d.cu" % (family.replace(":", "").replace("+", "_"), i, salt))
                path.write_text(make(i) + "// rep %d\n" % salt)
                out[(family, i)] = str(path)
        return out

    def build_peer(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            raise SystemExit("warm_miss_bench: no C compiler (cc or gcc) for the NVRTC + nvJitLink program")
        self.peer = str(self.work / "peer_nvrtc")
        subprocess.run([cc, "-O2", "-I", os.path.join(self.args.cuda_home, "include"), "-o", self.peer,
                        str(REPO / "bench" / "peer_nvrtc.c"), "-ldl"], check=True)

    def fresh_nvrtc(self, sources):
        return {k: timed([self.peer, self.args.cuda_home, SM, src, str(self.work / "peer.cubin")])
                for k, src in sources.items()}

    def start_daemon(self, extra):
        sock = self.work / "kjitd.sock"
        if sock.exists():
            sock.unlink()
        argv = [self.kjitd, "--socket", str(sock), "--no-cache", "--log-level", "warn"] + extra
        env = dict(os.environ, XDG_RUNTIME_DIR=str(self.work), XDG_CACHE_HOME=str(self.work / "xdg"))
        env.pop("KJIT_SOCKET", None)
        logf = open(self.work / "kjitd.log", "ab")
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=env)
        logf.close()
        deadline = time.monotonic() + 60
        while subprocess.run([self.kjit, "health", "-s", str(sock)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL).returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("kjitd did not serve:\n" + (self.work / "kjitd.log").read_text()[-3000:])
            time.sleep(0.02)
        return proc, str(sock), (time.perf_counter() - start) * 1e3

    @staticmethod
    def stop_daemon(proc):
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kjit_misses(self, sources, extra):
        proc, sock, serving_ms = self.start_daemon(extra)
        try:
            # In family order: the first compile goes to the daemon as soon as it serves.
            times = {}
            for k, src in sources.items():
                times[k] = timed([self.kjit, "compile", "-s", sock, "-t", "cuda:" + SM, src,
                                  "-o", str(self.work / "kjit.cubin")])
            return times, serving_ms
        finally:
            self.stop_daemon(proc)

    def run(self):
        self.build_peer()
        rows = {"fresh": [], "pch": [], "nopch": [], "serving_pch": [], "serving_nopch": []}
        for rep in range(self.args.reps + 1):  # rep 0 warms the page cache, not counted
            sources = self.write_sources(rep)
            log("rep %d/%d" % (rep, self.args.reps) + (" (warm-up)" if rep == 0 else ""))
            fresh = self.fresh_nvrtc(sources)
            pch, serving_pch = self.kjit_misses(sources, [])
            nopch, serving_nopch = self.kjit_misses(sources, ["--no-pch"])
            if rep == 0:
                continue
            rows["fresh"].append(fresh)
            rows["pch"].append(pch)
            rows["nopch"].append(nopch)
            rows["serving_pch"].append(serving_pch)
            rows["serving_nopch"].append(serving_nopch)
        self.report(rows)

    def report(self, rows):
        def med(row, keys):
            """Median over reps of the mean over `keys`."""
            return statistics.median(statistics.mean(rep[k] for k in keys) for rep in rows[row])

        print("warm_miss_bench: sm_%s cubins, %d rep(s), medians; ratios against a fresh NVRTC + nvJitLink "
              "process per kernel (bench/peer_nvrtc.c) in the same run" % (SM, self.args.reps))
        print()
        print("| family | kernels | fresh NVRTC ms | kjit miss ms | ratio | kjit --no-pch ms | ratio |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        summary = {}
        later = "3rd-%dth" % PER_FAMILY
        for family in FAMILIES:
            first = [(family, 1)]
            second = [(family, 2)]
            rest = [(family, i) for i in range(3, PER_FAMILY + 1)]
            for label, keys in (("first", first), ("second", second), (later, rest)):
                f, p, n = med("fresh", keys), med("pch", keys), med("nopch", keys)
                summary[(family, label)] = p / f
                print("| %s | %s | %.0f | %.0f | %.2fx | %.0f | %.2fx |" % (family, label, f, p, p / f, n, n / f))
        first_key = [next(iter(rows["pch"][0]))]
        f, p, n = med("fresh", first_key), med("pch", first_key), med("nopch", first_key)
        print()
        print("first compile on a fresh kjitd (sent as soon as it serves): %.0f ms = %.2fx a fresh NVRTC process "
              "(%.0f ms); --no-pch: %.0f ms = %.2fx" % (p, p / f, f, n, n / f))
        print("start to SERVING: %.0f ms (PCH, workers kept ready), %.0f ms (--no-pch)" %
              (statistics.median(rows["serving_pch"]), statistics.median(rows["serving_nopch"])))
        print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())
        print()
        for family in FAMILIES:
            ratio = summary[(family, later)]
            print("%s: first miss %.2fx, second (writes the PCH) %.2fx, %s misses %.2fx a fresh NVRTC process "
                  "(target <= 0.25x: %s)" % (family, summary[(family, "first")], summary[(family, "second")], later,
                                             ratio, "met" if ratio <= 0.25 else "NOT met"))
        print("first compile on a fresh kjitd %.2fx (target <= 1.1x: %s)" % (p / f, "met" if p / f <= 1.1 else "NOT met"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--kjit", default="build/bin/kjit")
    parser.add_argument("--kjitd", default="build/bin/kjitd")
    parser.add_argument("--cuda-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    args = parser.parse_args()
    bench = Bench(args)
    try:
        bench.run()
    finally:
        shutil.rmtree(bench.work, ignore_errors=True)


if __name__ == "__main__":
    main()
