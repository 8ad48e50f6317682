#!/usr/bin/env python3
"""kjit against what its users do today, on the same kernels, in one run.

Run through bench/peer_comparison.sh, which checks the prerequisites and
picks the Python environment; see bench/README.md for what each row means.

CUDA C++ rows compile the kernels of bench/bench_kernels.h (one process per
kernel, summed per rep) to sm_90 cubins. Triton rows compile the three
kernels of client/python/tests/triton_child.py in one process. Every row is the
median over --reps reps, after one warm-up rep that is not counted; within
a rep the groups run in an order that rotates from rep to rep, so that drift
on the host hits all of them alike.

Writes DIR/peer_comparison.md (the table, also printed), DIR/peer_comparison.json
(every sample) and DIR/peer_comparison.png (a log-scale bar chart, when
matplotlib imports).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNEL_SOURCES = REPO / "bench" / "bench_kernels.h"
KERNELS = ["saxpy", "tiled_matmul", "mixed_axpy"]
TRITON_CHILD = REPO / "client" / "python" / "tests" / "triton_child.py"
TARGET_SM = "90"

NVRTC = "NVRTC + nvJitLink, fresh process"
NVCC = "nvcc -cubin -arch=sm_90"
CCACHE_MISS = "ccache nvcc -c, miss (empty CCACHE_DIR)"
CCACHE_HIT = "ccache nvcc -c, hit"
KJIT_COLD = "kjit cold (fresh kjitd, empty cache)"
KJIT_MISS = "kjit miss (running kjitd, new source)"
KJIT_WARM_MISS = "kjit warm miss (includes compiled twice before: PCH)"
KJIT_MEMORY = "kjit memory hit"
KJIT_DISK = "kjit disk hit (kjitd restarted, same cache dir)"
KJIT_REDIS = "kjit Redis hit (second kjitd, empty disk dir)"
TRITON_COMPILE = "Triton compile (empty TRITON_CACHE_DIR)"
TRITON_UPLOAD = "Triton compile + upload to kjit (first process)"
TRITON_LOCAL = "Triton local file-cache hit"
TRITON_KJIT = "Triton via kjit (empty local dir)"
TRITON_KJIT_RPC = "Triton via kjit over gRPC (KJIT_DIRECT_READS=0)"


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def write_kernels(directory):
    """The kernels the C++ benchmarks use (bench/bench_kernels.h), one .cu file
    each in `directory`: every tool here compiles the same sources."""
    text = KERNEL_SOURCES.read_text()
    paths = {}
    for name in KERNELS:
        found = re.search(r'\{"%s",\s*R"\((.*?)\)"' % re.escape(name), text, re.S)
        if not found:
            raise SystemExit("peer_comparison: no kernel %r in %s" % (name, KERNEL_SOURCES))
        path = Path(directory) / (name + ".cu")
        path.write_text(found.group(1).lstrip("\n"))
        paths[name] = str(path)
    return paths


class Bench:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out).resolve()
        self.work = Path(tempfile.mkdtemp(prefix="kjit-peer-"))
        self.kjit = str(Path(args.kjit).resolve())
        self.kjitd = str(Path(args.kjitd).resolve())
        self.cuda = args.cuda_home
        self.nvcc = os.path.join(self.cuda, "bin", "nvcc")
        self.devnull = os.open(os.devnull, os.O_WRONLY)
        self.daemons = {}
        self.redis = None
        self.redis_port = None
        self.samples = {}        # row -> list of per-rep values (ms)
        self.per_kernel = {}     # row -> kernel -> list of ms
        self.details = {}        # row -> list of dicts (triton: in-process split, import time)
        self.checks = []         # problems noticed while measuring (wrong cache tier, cubins differ)
        self.skipped = {}        # row -> why
        self.kernels = write_kernels(self.work)
        self.salt = 0
        self.kjit_import_ms = []

    # -- processes -------------------------------------------------------

    def spawn_timed(self, argv, env=None, stdout_path=None):
        """Wall ms of one process from spawn to exit; stdout to a file or /dev/null."""
        actions = []
        fd = None
        if stdout_path:
            fd = os.open(stdout_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            actions.append((os.POSIX_SPAWN_DUP2, fd, 1))
        else:
            actions.append((os.POSIX_SPAWN_DUP2, self.devnull, 1))
        err_path = self.work / "stderr.txt"
        err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        actions.append((os.POSIX_SPAWN_DUP2, err, 2))
        try:
            start = time.perf_counter()
            pid = os.posix_spawn(argv[0], argv, env if env is not None else os.environ, file_actions=actions)
            _, status, _ = os.wait4(pid, 0)
            elapsed = (time.perf_counter() - start) * 1e3
        finally:
            os.close(err)
            if fd is not None:
                os.close(fd)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise RuntimeError("exit %d: %s\n%s" % (code, " ".join(argv), err_path.read_text(errors="replace")[-3000:]))
        return elapsed

    def start_daemon(self, name, cache_dir, redis=False):
        sock = self.work / (name + ".sock")
        if sock.exists():
            sock.unlink()
        argv = [self.kjitd, "--socket", str(sock), "--cache-dir", str(cache_dir), "--log-level", "warn"]
        if redis:
            argv += ["--redis", "127.0.0.1:%d" % self.redis_port]
        env = dict(os.environ, XDG_CACHE_HOME=str(self.work / "xdg-cache"), XDG_RUNTIME_DIR=str(self.work))
        env.pop("KJIT_SOCKET", None)
        logf = open(self.work / (name + ".log"), "ab")
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=env)
        logf.close()
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError("kjitd %s exited with %d:\n%s" % (name, proc.returncode, self.tail(name + ".log")))
            ok = subprocess.run([self.kjit, "health", "-s", str(sock)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL).returncode == 0
            if ok:
                break
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("kjitd %s not serving after 30 s:\n%s" % (name, self.tail(name + ".log")))
            time.sleep(0.03)
        self.daemons[name] = proc
        return str(sock)

    def stop_daemon(self, name):
        proc = self.daemons.pop(name, None)
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def tail(self, name):
        try:
            return (self.work / name).read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def start_redis(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.redis_port = s.getsockname()[1]
        argv = [shutil.which("redis-server"), "--port", str(self.redis_port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", str(self.work)]
        logf = open(self.work / "redis.log", "wb")
        self.redis = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT)
        logf.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                self.redis_command("PING")
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start:\n" + self.tail("redis.log"))

    def redis_command(self, *words):
        payload = "*%d\r\n" % len(words) + "".join("$%d\r\n%s\r\n" % (len(w), w) for w in words)
        with socket.create_connection(("127.0.0.1", self.redis_port), timeout=5) as s:
            s.sendall(payload.encode())
            return s.recv(256)

    def cleanup(self):
        for name in list(self.daemons):
            self.stop_daemon(name)
        if self.redis is not None:
            self.redis.terminate()
            try:
                self.redis.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.redis.kill()
        shutil.rmtree(self.work, ignore_errors=True)

    # -- recording -------------------------------------------------------

    def record(self, row, rep, per_kernel_ms, detail=None):
        if rep < 0:
            return  # warm-up
        self.samples.setdefault(row, []).append(sum(per_kernel_ms.values()))
        for k, v in per_kernel_ms.items():
            self.per_kernel.setdefault(row, {}).setdefault(k, []).append(v)
        if detail is not None:
            self.details.setdefault(row, []).append(detail)

    def check(self, what):
        if what not in self.checks:
            log("peer_comparison: " + what)
            self.checks.append(what)

    # -- groups ----------------------------------------------------------

    def group_native(self, rep):
        nvrtc, nvcc = {}, {}
        for k, src in self.kernels.items():
            out = str(self.work / ("nvrtc-%s.cubin" % k))
            nvrtc[k] = self.spawn_timed([self.nvrtc_bin, self.cuda, TARGET_SM, src, out])
            nvcc[k] = self.spawn_timed([self.nvcc, "-cubin", "-arch=sm_" + TARGET_SM, src, "-o",
                                        str(self.work / ("nvcc-%s.cubin" % k))])
        self.record(NVRTC, rep, nvrtc)
        self.record(NVCC, rep, nvcc)

    def group_ccache(self, rep):
        if self.ccache is None:
            return
        env = dict(os.environ, CCACHE_DIR=str(self.work / ("ccache-%d" % rep)))
        miss, hit = {}, {}
        for k, src in self.kernels.items():
            argv = [self.ccache, self.nvcc, "-c", "-arch=sm_" + TARGET_SM, src, "-o", str(self.work / (k + ".o"))]
            miss[k] = self.spawn_timed(argv, env)
            hit[k] = self.spawn_timed(argv, env)
        shutil.rmtree(env["CCACHE_DIR"], ignore_errors=True)
        self.record(CCACHE_MISS, rep, miss)
        self.record(CCACHE_HIT, rep, hit)

    def kjit_compile(self, sock, src, expect, row):
        out_json = self.work / "kjit.json"
        ms = self.spawn_timed([self.kjit, "compile", src, "--target", "cuda:" + TARGET_SM, "-o",
                               str(self.work / "kjit.cubin"), "-s", sock, "--json"], stdout_path=str(out_json))
        got = json.loads(out_json.read_text()).get("cache")
        if got != expect:
            self.check("%s: kjit answered from %r, expected %r" % (row, got, expect))
        return ms

    def group_kjit(self, rep):
        cold, miss, warm_miss, memory, disk, redis = {}, {}, {}, {}, {}, {}
        for k, src in self.kernels.items():
            cache_a = self.work / ("cache-a-%d-%s" % (rep, k))
            cache_b = self.work / ("cache-b-%d-%s" % (rep, k))
            use_redis = self.redis is not None
            if use_redis:
                self.redis_command("FLUSHALL")
            sock = self.start_daemon("a", cache_a, redis=use_redis)
            cold[k] = self.kjit_compile(sock, src, "compiled", KJIT_COLD)
            memory[k] = self.kjit_compile(sock, src, "memory", KJIT_MEMORY)
            # The same kernel with a comment no earlier request had: a miss
            # on a daemon whose worker has compiled before.
            self.salt += 1
            salted = self.work / ("salted-%s.cu" % k)
            salted.write_text("// peer_comparison %d %d\n" % (os.getpid(), self.salt) + Path(src).read_text())
            miss[k] = self.kjit_compile(sock, str(salted), "compiled", KJIT_MISS)
            # Once more: the worker's third compile of these includes, the
            # first to find the precompiled header the second one wrote.
            self.salt += 1
            salted.write_text("// peer_comparison %d %d\n" % (os.getpid(), self.salt) + Path(src).read_text())
            warm_miss[k] = self.kjit_compile(sock, str(salted), "compiled", KJIT_WARM_MISS)
            self.stop_daemon("a")
            sock = self.start_daemon("a", cache_a, redis=use_redis)
            disk[k] = self.kjit_compile(sock, src, "disk", KJIT_DISK)
            self.stop_daemon("a")
            if use_redis:
                sock = self.start_daemon("b", cache_b, redis=True)
                redis[k] = self.kjit_compile(sock, src, "redis", KJIT_REDIS)
                self.stop_daemon("b")
            shutil.rmtree(cache_a, ignore_errors=True)
            shutil.rmtree(cache_b, ignore_errors=True)
        self.record(KJIT_COLD, rep, cold)
        self.record(KJIT_MISS, rep, miss)
        self.record(KJIT_WARM_MISS, rep, warm_miss)
        self.record(KJIT_MEMORY, rep, memory)
        self.record(KJIT_DISK, rep, disk)
        if redis:
            self.record(KJIT_REDIS, rep, redis)

    def triton_child(self, name, cache_dir, extra_env):
        env = dict(os.environ, TRITON_CACHE_DIR=str(cache_dir), TRITON_DEFAULT_FP_FUSION="1",
                   TRITON_HOME=str(self.work / ("triton-home-" + name)))
        for key in ("TRITON_CACHE_MANAGER", "KJIT_SOCKET", "KJIT_ADDRESS", "KJIT_TRITON_NAMESPACE"):
            env.pop(key, None)
        env.update(extra_env)
        out = self.work / "triton.json"
        wall = self.spawn_timed([self.python, str(TRITON_CHILD)], env, stdout_path=str(out))
        result = json.loads(out.read_text())
        shutil.rmtree(env["TRITON_HOME"], ignore_errors=True)
        return wall, result

    def group_triton(self, rep):
        if not self.have_triton:
            return
        base = self.work / ("triton-%d" % rep)
        with_kjit = {"TRITON_CACHE_MANAGER": "kjit.triton:KjitCacheManager", "KJIT_SOCKET": self.triton_sock,
                     "KJIT_TRITON_NAMESPACE": "peer-%d-%d" % (os.getpid(), rep)}
        runs = [(TRITON_COMPILE, "own", {}), (TRITON_LOCAL, "own", {}),
                (TRITON_UPLOAD, "filler", with_kjit), (TRITON_KJIT, "empty", with_kjit),
                (TRITON_KJIT_RPC, "empty-rpc", dict(with_kjit, KJIT_DIRECT_READS="0"))]
        cubins = {}
        for row, dir_name, env in runs:
            wall, result = self.triton_child(dir_name, base / dir_name, env)
            cubins[row] = result["cubins"]
            self.triton_version = result.get("triton")
            # The default path reads the daemon's disk tier itself: no gRPC in that process.
            if row == TRITON_KJIT and result.get("grpc_loaded", True):
                self.check("%s: the process loaded gRPC (no direct reads)" % row)
            self.record(row, rep, {"3 kernels": wall},
                        {"in_compile_ms": result["seconds"] * 1e3, "import_ms": result["import_seconds"] * 1e3})
        for row in (TRITON_LOCAL, TRITON_UPLOAD, TRITON_KJIT, TRITON_KJIT_RPC):
            if cubins[row] != cubins[TRITON_COMPILE]:
                self.check("%s: cubins differ from Triton's own compile" % row)
        # What the over-gRPC row pays to import the kjit client (grpc,
        # protobuf): Triton imports the manager inside the first compile,
        # and the manager the client at its first round trip.
        probe = subprocess.run([self.python, "-c", "import time, triton; t = time.perf_counter(); import kjit.triton; "
                                "import kjit._client; print((time.perf_counter() - t) * 1e3)"],
                               capture_output=True, text=True)
        if rep >= 0 and probe.returncode == 0:
            self.kjit_import_ms.append(float(probe.stdout.strip()))
        for row, dir_name in ((TRITON_KJIT, "empty"), (TRITON_KJIT_RPC, "empty-rpc")):
            got = sorted(p.name for p in (base / dir_name).rglob("*.cubin"))
            if len(got) != 3:
                self.check("%s: %d cubins in the local dir afterwards, expected 3" % (row, len(got)))
        shutil.rmtree(base, ignore_errors=True)

    # -- setup -----------------------------------------------------------

    def setup(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            raise SystemExit("peer_comparison: no C compiler (cc or gcc) for the NVRTC + nvJitLink program")
        self.nvrtc_bin = str(self.work / "peer_nvrtc")
        subprocess.run([cc, "-O2", "-I", os.path.join(self.cuda, "include"), "-o", self.nvrtc_bin,
                        str(REPO / "bench" / "peer_nvrtc.c"), "-ldl"], check=True)
        self.ccache = shutil.which("ccache")
        if self.ccache is None:
            self.skipped[CCACHE_MISS] = self.skipped[CCACHE_HIT] = "ccache is not installed"
        if shutil.which("redis-server"):
            self.start_redis()
        else:
            self.skipped[KJIT_REDIS] = "redis-server is not installed"
        self.python = self.args.python
        probe = subprocess.run([self.python, "-c", "import triton, kjit.triton"], capture_output=True, text=True)
        self.have_triton = probe.returncode == 0
        self.triton_version = None
        if self.have_triton:
            self.triton_sock = self.start_daemon("triton", self.work / "cache-triton")
        else:
            why = "triton or the kjit client does not import in %s" % self.python
            for row in (TRITON_COMPILE, TRITON_UPLOAD, TRITON_LOCAL, TRITON_KJIT, TRITON_KJIT_RPC):
                self.skipped[row] = why

    def run(self):
        self.setup()
        groups = [self.group_native, self.group_kjit, self.group_ccache, self.group_triton]
        started = time.monotonic()
        for rep in range(-1, self.args.reps):
            t0 = time.monotonic()
            n = rep + 1
            for g in groups[n % len(groups):] + groups[:n % len(groups)]:
                g(rep)
            what = "warm-up" if rep < 0 else "rep %d/%d" % (rep + 1, self.args.reps)
            log("peer_comparison: %s done in %.1f s" % (what, time.monotonic() - t0))
        self.seconds = time.monotonic() - started


# -- reporting -----------------------------------------------------------

def machine_info(bench):
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def version(argv, pick=lambda s: s.strip().splitlines()[-1]):
        try:
            return pick(subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout)
        except (OSError, IndexError, subprocess.SubprocessError):
            return "?"

    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "kernel": platform.release(),
        "loadavg_at_end": os.getloadavg(),
        "cuda": version([bench.nvcc, "--version"]),
        "ccache": version([bench.ccache, "--version"], lambda s: s.split()[2]) if bench.ccache else None,
        "redis": version(["redis-server", "--version"], lambda s: s.split()[2]) if bench.redis else None,
        "triton": bench.triton_version,
        "kjit_commit": version(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]),
    }


def median(xs):
    return statistics.median(xs) if xs else None


def build_rows(bench):
    s = {row: median(v) for row, v in bench.samples.items()}
    inproc = {row: median([d["in_compile_ms"] for d in v]) for row, v in bench.details.items()}

    def ratio(a, b):
        return "%.2f×" % (a / b) if a is not None and b else "-"

    rows = []  # (group, path, timed, ms, ratio text)
    cxx = "CUDA C++, 3 kernels (sum)"
    for row in (NVRTC, NVCC, CCACHE_MISS, KJIT_COLD, KJIT_MISS, KJIT_WARM_MISS, KJIT_MEMORY, KJIT_DISK, KJIT_REDIS):
        r = "1.00× (baseline)" if row == NVRTC else ratio(s.get(row), s.get(NVRTC)) + " NVRTC fresh"
        rows.append((cxx, row, "whole process", s.get(row), r))
    hit = "CUDA C++ hits"
    rows.append((hit, CCACHE_HIT, "whole process", s.get(CCACHE_HIT),
                 ratio(s.get(CCACHE_HIT), s.get(KJIT_MEMORY)) + " kjit memory hit"))
    rows.append((hit, KJIT_MEMORY, "whole process", s.get(KJIT_MEMORY), "1.00× (baseline)"))
    tri = "Triton, 3 kernels"
    for timed, vals in (("whole process", s), ("in triton.compile", inproc)):
        for row in (TRITON_COMPILE, TRITON_UPLOAD, TRITON_LOCAL, TRITON_KJIT, TRITON_KJIT_RPC):
            if row in (TRITON_KJIT, TRITON_KJIT_RPC):
                r = "%s local hit, %s compile" % (ratio(vals.get(row), vals.get(TRITON_LOCAL)),
                                                  ratio(vals.get(row), vals.get(TRITON_COMPILE)))
            elif row == TRITON_COMPILE:
                r = "1.00× (baseline)"
            else:
                r = ratio(vals.get(row), vals.get(TRITON_COMPILE)) + " compile"
            rows.append((tri, row, timed, vals.get(row), r))
    return rows


def markdown(bench, info, rows):
    lines = [
        "kjit against its peers, same kernels, one run: %s; %s, %d cores (nproc); load average at the end %.2f"
        % (info["date_utc"], info["cpu_model"], info["nproc"], info["loadavg_at_end"][0]),
        "",
        "Median of %d reps after a warm-up rep (ms). CUDA C++ rows: sum over %s, one process per kernel, "
        "target sm_90. Triton rows: 3 kernels (one with tl.dot) in one process."
        % (bench.args.reps, ", ".join(KERNELS)),
        "",
        "| group | path | timed as | median ms | ratio |",
        "|---|---|---|---:|---|",
    ]
    for group, path, timed, ms, r in rows:
        if path in bench.skipped:
            lines.append("| %s | %s | %s | skipped | %s |" % (group, path, timed, bench.skipped[path]))
        elif ms is not None:
            lines.append("| %s | %s | %s | %s | %s |" % (group, path, timed, fmt(ms), r))
    lines.append("")
    lines.append("Per kernel (median ms, whole process):")
    lines.append("")
    lines.append("| path | " + " | ".join(KERNELS) + " |")
    lines.append("|---|" + "---:|" * len(KERNELS))
    for row in (NVRTC, NVCC, CCACHE_MISS, CCACHE_HIT, KJIT_COLD, KJIT_MISS, KJIT_WARM_MISS, KJIT_MEMORY, KJIT_DISK,
                KJIT_REDIS):
        if row in bench.per_kernel:
            lines.append("| %s | %s |" % (row, " | ".join(fmt(median(bench.per_kernel[row][k])) for k in KERNELS)))
    if bench.details:
        imports = [d["import_ms"] for v in bench.details.values() for d in v]
        lines.append("")
        lines.append("Importing triton in each Triton process: median %s ms (part of the whole-process rows, "
                     "not of the in-triton.compile rows). Importing the kjit client with gRPC and protobuf, "
                     "which the cache manager does inside Triton's first triton.compile when it needs a round "
                     "trip: median %s ms (part of the upload and over-gRPC rows; the direct-read row reads the "
                     "daemon's disk tier without it)." % (fmt(median(imports)), fmt(median(bench.kjit_import_ms))))
    lines.append("")
    lines.append("Tools: %s; ccache %s; redis %s; triton %s; kjit %s." % (
        info["cuda"], info["ccache"] or "-", info["redis"] or "-", info["triton"] or "-", info["kjit_commit"]))
    if bench.checks:
        lines.append("")
        lines.append("Noticed while measuring: " + "; ".join(bench.checks))
    return "\n".join(lines) + "\n"


def fmt(ms):
    if ms is None:
        return "-"
    return "%.0f" % ms if ms >= 100 else "%.1f" % ms


def chart(bench, rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("peer_comparison: matplotlib does not import; no chart")
        return False
    colors = {"CUDA C++, 3 kernels (sum)": "#4C72B0", "CUDA C++ hits": "#55A868", "Triton, 3 kernels": "#C44E52"}
    shown = [r for r in rows if r[3] is not None and r[1] not in bench.skipped]
    labels = ["%s%s" % (p, "" if t == "whole process" else " [in-process]") for _, p, t, _, _ in shown]
    values = [ms for _, _, _, ms, _ in shown]
    fig, ax = plt.subplots(figsize=(10, 0.38 * len(shown) + 1.6))
    y = list(range(len(shown)))[::-1]
    bars = ax.barh(y, values, color=[colors.get(g, "gray") for g, *_ in shown],
                   hatch=None)
    for bar, (_, _, timed, _, _) in zip(bars, shown):
        if timed != "whole process":
            bar.set_hatch("//")
            bar.set_alpha(0.7)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("median ms (log scale)")
    for yy, v in zip(y, values):
        ax.text(v * 1.05, yy, fmt(v), va="center", fontsize=7)
    ax.set_xlim(min(values) / 2, max(values) * 4)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    ax.legend(handles, list(colors), loc="lower right", fontsize=8)
    ax.set_title("kjit and peers, same kernels, sm_90 (median of %d; hatched: in-process)" % bench.args.reps,
                 fontsize=10)
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", required=True)
    p.add_argument("--kjit", default=str(REPO / "build" / "bin" / "kjit"))
    p.add_argument("--kjitd", default=str(REPO / "build" / "bin" / "kjitd"))
    p.add_argument("--cuda-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    p.add_argument("--python", default=sys.executable, help="interpreter with triton and the kjit client")
    args = p.parse_args()
    if args.reps < 1:
        p.error("--reps must be at least 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    bench = Bench(args)
    try:
        bench.run()
    finally:
        bench.cleanup()
    info = machine_info(bench)
    rows = build_rows(bench)
    md = markdown(bench, info, rows)
    (out / "peer_comparison.md").write_text(md)
    raw = {
        "machine": info, "reps": args.reps, "seconds": bench.seconds, "kernels": KERNELS,
        "samples_ms": bench.samples, "per_kernel_ms": bench.per_kernel, "triton_details_ms": bench.details,
        "kjit_client_import_ms": bench.kjit_import_ms, "skipped": bench.skipped, "checks": bench.checks,
        "table": [dict(zip(("group", "path", "timed", "median_ms", "ratio"), r)) for r in rows],
    }
    (out / "peer_comparison.json").write_text(json.dumps(raw, indent=1) + "\n")
    png = chart(bench, rows, out / "peer_comparison.png")
    print(md)
    print("written: %s/peer_comparison.{md,json%s} (measuring took %.0f s)"
          % (out, ",png" if png else "", bench.seconds))
    return 1 if bench.checks else 0


if __name__ == "__main__":
    sys.exit(main())
