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

The three are run in turn for each kernel, so that the machine's load
falls alike on the baseline and on what is compared with it. Each daemon
is started fresh with no cache, and its first compile, saxpy, is sent as
soon as it serves: it includes whatever wait for a worker remains. The figures are
ratios against the baseline measured in the same run, for the first
compile on a fresh kjitd (saxpy, no includes; target <= 1.1x), each
family's first miss (a ready worker's first compile of the header set: it
writes the PCH) and its 2nd to last misses (they use it; target <= 0.25x). The PCH files the workers keep are measured at
the end of each rep.
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


SAXPY = """extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
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

    def write_small(self, salt):
        path = self.work / ("saxpy-%d.cu" % salt)
        path.write_text(SAXPY + "// rep %d\n" % salt)
        return str(path)

    def build_peer(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            raise SystemExit("warm_miss_bench: no C compiler (cc or gcc) for the NVRTC + nvJitLink program")
        self.peer = str(self.work / "peer_nvrtc")
        subprocess.run([cc, "-O2", "-I", os.path.join(self.args.cuda_home, "include"), "-o", self.peer,
                        str(REPO / "bench" / "peer_nvrtc.c"), "-ldl"], check=True)
        self.floor = str(self.work / "pch_floor")
        subprocess.run([cc, "-O2", "-I", os.path.join(self.args.cuda_home, "include"), "-o", self.floor,
                        str(REPO / "bench" / "pch_floor.c"), "-ldl"], check=True)

    def pch_floor(self, sources):
        """NVRTC with automatic PCH in one process, as a worker keeps it: per
        family, the 2nd to last compiles' time and where it goes (medians)."""
        out = {}
        for family in FAMILIES:
            pch_dir = self.work / ("floor-" + family.replace(":", "").replace("+", "_"))
            shutil.rmtree(pch_dir, ignore_errors=True)
            pch_dir.mkdir()
            paths = [sources[(family, i)] for i in range(1, PER_FAMILY + 1)]
            done = subprocess.run([self.floor, self.args.cuda_home, SM, str(pch_dir)] + paths,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                raise RuntimeError("pch_floor: " + done.stderr[-3000:])
            rows = []
            for line in done.stdout.splitlines():
                fields = line.split()
                rows.append({fields[k]: float(fields[k + 1]) for k in range(1, len(fields) - 1, 2)})
            later = rows[1:]
            out[family] = {k: statistics.median(r[k] for r in later) for k in later[0]}
            shutil.rmtree(pch_dir, ignore_errors=True)
        return out

    def fresh_nvrtc(self, src):
        return timed([self.peer, self.args.cuda_home, SM, src, str(self.work / "peer.cubin")])

    def start_daemon(self, name, extra):
        """A fresh kjitd with no cache; its workers' private directories
        (and PCH files) under a TMPDIR of its own."""
        sock = self.work / (name + ".sock")
        if sock.exists():
            sock.unlink()
        tmp = self.work / (name + "-tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        argv = [self.kjitd, "--socket", str(sock), "--no-cache", "--log-level", "warn"] + extra
        env = dict(os.environ, XDG_RUNTIME_DIR=str(self.work), XDG_CACHE_HOME=str(self.work / "xdg"), TMPDIR=str(tmp))
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
    def pch_bytes(name, work):
        """The PCH files a daemon's workers keep now."""
        total = 0
        for pch in (work / (name + "-tmp")).glob("kjit-worker-*/pch"):
            total += sum(f.stat().st_size for f in pch.rglob("*") if f.is_file())
        return total

    @staticmethod
    def stop_daemon(proc):
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def compile(self, sock, src):
        return timed([self.kjit, "compile", "-s", sock, "-t", "cuda:" + SM, src, "-o", str(self.work / "kjit.cubin")])

    def first_compile(self, name, extra, src):
        """Starts a daemon and sends `src` the moment it serves."""
        proc, sock, serving_ms = self.start_daemon(name, extra)
        try:
            return proc, sock, serving_ms, self.compile(sock, src)
        except BaseException:
            self.stop_daemon(proc)
            raise

    def one_rep(self, rep):
        sources = self.write_sources(rep)
        small = self.write_small(rep)
        out = {"fresh": {}, "pch": {}, "nopch": {}}
        daemons = []
        try:
            # The first compile on a fresh kjitd: a small kernel, sent as soon
            # as the daemon serves, against a fresh process compiling the same.
            daemons.append(self.first_compile("pch", [], small))
            out["small_fresh"] = self.fresh_nvrtc(small)
            daemons.append(self.first_compile("nopch", ["--no-pch"], small))
            (_, pch_sock, out["serving_pch"], out["small_pch"]), \
                (_, nopch_sock, out["serving_nopch"], out["small_nopch"]) = daemons
            # The families, each kernel in turn on the baseline and both daemons.
            for k, src in sources.items():
                out["fresh"][k] = self.fresh_nvrtc(src)
                out["pch"][k] = self.compile(pch_sock, src)
                out["nopch"][k] = self.compile(nopch_sock, src)
            out["pch_bytes"] = self.pch_bytes("pch", self.work)
        finally:
            for proc, *_ in daemons:
                self.stop_daemon(proc)
        # With the daemons stopped: the same family sources in one NVRTC
        # process with PCH, for where a warm miss's time goes.
        out["floor"] = self.pch_floor(sources)
        return out

    def run(self):
        self.build_peer()
        reps = []
        for rep in range(self.args.reps + 1):  # rep 0 warms the page cache, not counted
            log("rep %d/%d" % (rep, self.args.reps) + (" (warm-up)" if rep == 0 else ""))
            result = self.one_rep(rep)
            if rep > 0:
                reps.append(result)
        self.report(reps)

    def report(self, reps):
        def med(row, keys):
            """Median over reps of the mean over `keys`."""
            return statistics.median(statistics.mean(rep[row][k] for k in keys) for rep in reps)

        def med_of(name):
            return statistics.median(rep[name] for rep in reps)

        print("warm_miss_bench: sm_%s cubins, %d rep(s), medians; ratios against a fresh NVRTC + nvJitLink "
              "process per kernel (bench/peer_nvrtc.c), run in turn with each kjit compile" % (SM, len(reps)))
        print()
        print("| family | kernels | fresh NVRTC ms | kjit miss ms | ratio | kjit --no-pch ms | ratio |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        summary = {}
        later = "2nd-%dth" % PER_FAMILY
        for family in FAMILIES:
            first = [(family, 1)]
            rest = [(family, i) for i in range(2, PER_FAMILY + 1)]
            for label, keys in (("first", first), (later, rest)):
                f, p, n = med("fresh", keys), med("pch", keys), med("nopch", keys)
                summary[(family, label)] = (p / f, n / f, p, n)
                print("| %s | %s | %.0f | %.0f | %.2fx | %.0f | %.2fx |" % (family, label, f, p, p / f, n, n / f))
        print()
        small_f, small_p, small_n = med_of("small_fresh"), med_of("small_pch"), med_of("small_nopch")
        print("first compile on a fresh kjitd, sent as soon as it serves: saxpy %.0f ms = %.2fx a fresh NVRTC "
              "process (%.0f ms); --no-pch: %.0f ms = %.2fx" % (small_p, small_p / small_f, small_f, small_n,
                                                                small_n / small_f))
        print("start to SERVING: %.0f ms (workers started first), %.0f ms (--no-pch)" %
              (med_of("serving_pch"), med_of("serving_nopch")))
        print("PCH files the workers keep after both families: %.0f MB" % (med_of("pch_bytes") / 1e6))
        print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())
        print()
        print("Where a warm miss goes: the same sources in one NVRTC process with automatic PCH "
              "(bench/pch_floor.c), %s compiles, medians:" % later)
        for family in FAMILIES:
            keys = [(family, i) for i in range(2, PER_FAMILY + 1)]
            fl = {k: statistics.median(rep["floor"][family][k] for rep in reps) for k in reps[0]["floor"][family]}
            fresh = med("fresh", keys)
            print("  %s: NVRTC %.0f ms (front end %.0f, NVVM %.0f; in the kernel %.0f ms, %.0f minor faults: the "
                  "PCH mapped and copied at each use) + nvJitLink %.0f ms = %.2fx a fresh process; kjit's miss "
                  "%.2fx" % (family, fl["nvrtc_ms"], fl["front_end_ms"], fl["nvvm_ms"], fl["sys_ms"],
                             fl["minor_faults"], fl["link_ms"], (fl["nvrtc_ms"] + fl["link_ms"]) / fresh,
                             med("pch", keys) / fresh))
        print()
        for family in FAMILIES:
            first, rest = summary[(family, "first")], summary[(family, later)]
            print("%s: first miss %.2fx (writes the PCH: %+.0f ms against --no-pch), %s misses %.2fx a fresh NVRTC "
                  "process (target <= 0.25x: %s)" % (family, first[0], first[2] - first[3], later, rest[0],
                                                     "met" if rest[0] <= 0.25 else "NOT met"))
        print("first compile on a fresh kjitd (saxpy) %.2fx (target <= 1.1x: %s)" %
              (small_p / small_f, "met" if small_p / small_f <= 1.1 else "NOT met"))


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
