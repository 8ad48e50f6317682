#!/usr/bin/env python3
"""Load and fault scenarios against real kjitd processes (python3 stdlib only).

Each scenario starts its own kjitd on a fresh socket and cache directory:

  load         16 clients x 30 s of hits, misses and bad inputs; kjitd's and
               its workers' memory sampled every 200 ms
  worker_kill  SIGKILL of the worker running a slow compile
  daemon_kill  SIGKILL of kjitd while misses are being written to disk, then a
               restart on the same cache, `kjit cache verify` and a read-back
               of every entry (3 times)
  redis        redis-server killed under load and started again
  full_disk    the cache directory on a full 1 MiB tmpfs
  endurance    one kjitd with --compile-cpu-seconds 5 serving a long mixed
               stream (new Triton kernels from triton_variants.py for four
               targets, new CUDA C++ and PTX, repeats that must be hits)
               from 4 clients for --duration s (60 by default and under
               ASan; bench/triton_endurance_bench.py runs it for 30 min):
               no request fails, a fresh kjitd gives the same bytes for a
               sample of the same requests, the Triton jobs' CPU
               together is many times one job's bound, and after the first
               third kjitd's, its workers' and its Triton interpreters'
               memory, open files and threads and the directories under its
               TMPDIR stay flat (sampled every few seconds). Without the
               Triton builds (.deps/triton-builds) its Triton part is
               skipped, saying so, except under CI (env CI), where it fails.

Every expectation that does not hold is a failure naming it; the figures go
to a table on stdout and to --report as JSON. Assertions are about
correctness, never speed: the machine may be slow and shared.

Against an AddressSanitizer build of kjitd (found in the binary itself, so
`ctest --preset asan` and a run by hand agree) every correctness check still
holds; the memory bounds allow for the sanitizer's shadow and quarantine and
the load phase is shorter. In every build, a sanitizer report in a daemon's
log (its workers' stderr is logged there too) or a client's stderr, or an
exit other than 0 on SIGTERM (LeakSanitizer's at exit), fails the scenario.

Skipped (exit 77) unless KJIT_LOAD_TESTS=1, which `make test-load` (build/)
and `make test-asan` (build-asan/) set.
"""
import argparse
import contextlib
import io
import json
import mmap
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import triton_variants

MiB = 1 << 20
SKIP = 77

# Small on purpose: the tier overflows within the load run, so the run
# shows the bound holding under load rather than a tier that never fills.
MEMORY_TIER_BYTES = 2 * MiB
# What kjitd may hold besides the memory tier and the libraries it mapped at
# start: gRPC's buffers and threads for 16 connections, the request log, the
# plan memo, the elastic pool's threads.
FIXED_OVERHEAD_BYTES = 200 * MiB
# How much kjitd's anonymous memory may grow from the first half of the load
# run to the second once the tier is full: allocator slack, not a trend.
SECOND_HALF_GROWTH_BYTES = 32 * MiB

# Under AddressSanitizer every heap byte costs more (redzones, the shadow's
# eighth, a Debug build's larger frames) and freed memory is held back in a
# quarantine (ASAN_OPTIONS quarantine_size_mb, 256 MiB by default on x86-64,
# plus the chunks' overhead and shadow: quarantine_allowance) before it is
# reused, filling over the run; both bounds
# allow for that, nothing else changes. LeakSanitizer's check at each
# SIGTERM is the sharper leak test there; the optimized build's run keeps
# the tight bounds.
ASAN_HEAP_FACTOR = 3
ASAN_DEFAULT_QUARANTINE_MB = 256
# Shorter than the optimized build's 30 s: the same checks, on a daemon that
# answers about half as many requests, within CI's time.
ASAN_LOAD_SECONDS = 20

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What a sanitizer writes when it finds something, in kjitd's log (a
# worker's lines are logged there with its pid) or a client's stderr.
SANITIZER_REPORT = re.compile(
    r"ERROR: (AddressSanitizer|LeakSanitizer)|LeakSanitizer has encountered a fatal error|"
    r"AddressSanitizer:DEADLYSIGNAL|SUMMARY: UndefinedBehaviorSanitizer|\S+:\d+:\d+: runtime error: ")

SMALL_KERNEL = """
extern "C" __global__ void small_{tag}(float* x, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 2.0f + {value}.0f;
}}
"""

# Every level instantiates two more, all inlined: depth 16 takes about 25 s
# to compile here, each level more about half again, so at depth 20 the
# compile is still running whenever the worker is killed.
SLOW_KERNEL = """
template <int N>
struct Chain {
  static __device__ __forceinline__ float run(float a) {
    return Chain<N - 1>::run(sinf(a) * 1.0001f + cosf(a * N)) + Chain<N / 2>::run(a * 0.5f);
  }
};
template <>
struct Chain<0> {
  static __device__ __forceinline__ float run(float a) { return a + SLOW_SALT; }
};
extern "C" __global__ void slow_kernel(float* x) {
  x[threadIdx.x] = Chain<SLOW_DEPTH>::run(x[threadIdx.x]);
}
"""


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- /proc -----------------------------------------------------------------

def proc_status(pid):
    """VmRSS, VmHWM, RssAnon, RssFile of pid in bytes; None once it is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    out[key] = int(value.split()[0]) * 1024
    except OSError:
        return None
    return out


def children(pid):
    """The pids whose parent is pid, with their command lines."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            # pid (comm) state ppid ...: comm may hold spaces.
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            if ppid != pid:
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                out[int(name)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
    return out


def workers_of(pid):
    return [c for c, cmdline in children(pid).items() if "--worker-fd" in cmdline]


def cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


class MemorySampler:
    """kjitd's and its workers' memory every 200 ms, on a thread."""

    def __init__(self, pid, period=0.2):
        self.pid = pid
        self.period = period
        self.samples = []  # (t, kjitd status, {worker pid: status})
        self.worker_pids = set()
        self.worker_hwm = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.t0 = time.monotonic()
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()

    def _run(self):
        while not self._stop.is_set():
            daemon = proc_status(self.pid)
            if daemon is None:
                return
            workers = {}
            for w in workers_of(self.pid):
                status = proc_status(w)
                if status:
                    workers[w] = status
                    self.worker_pids.add(w)
                    self.worker_hwm[w] = max(self.worker_hwm.get(w, 0), status.get("VmHWM", 0))
            self.samples.append((time.monotonic() - self.t0, daemon, workers))
            self._stop.wait(self.period)

    def peak(self, key="VmRSS", since=0.0, until=float("inf")):
        values = [d.get(key, 0) for t, d, _ in self.samples if since <= t < until]
        return max(values) if values else 0

    def worker_peak(self):
        """The largest one worker held, and the most all workers held at once."""
        one = max(self.worker_hwm.values(), default=0)
        together = max((sum(s.get("VmRSS", 0) for s in w.values()) for _, _, w in self.samples), default=0)
        return one, together


# --- sanitizers ---------------------------------------------------------------

def built_with_asan(path):
    """Whether the executable at path links AddressSanitizer's runtime."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as image:
        return image.find(b"__asan_init") >= 0


def with_options(current, defaults):
    """defaults, then what the environment already says: the sanitizers read
    the options left to right, so a setting made outside wins."""
    return ":".join(part for part in (defaults, current or "") if part)


def sanitizer_environment(environ):
    """The environment for kjitd and the clients of an ASan build: leaks
    checked at exit, every report fatal, the toolkits' own leaks suppressed."""
    env = dict(environ)
    env["ASAN_OPTIONS"] = with_options(environ.get("ASAN_OPTIONS"), "detect_leaks=1:halt_on_error=1")
    lsan = environ.get("LSAN_OPTIONS", "")
    if "suppressions=" not in lsan:
        lsan = with_options(lsan, "suppressions=" + os.path.join(REPO, "tests", "lsan.supp"))
    env["LSAN_OPTIONS"] = lsan
    env["UBSAN_OPTIONS"] = with_options(environ.get("UBSAN_OPTIONS"), "print_stacktrace=1:halt_on_error=1")
    return env


def quarantine_bytes(environ):
    m = None
    for m in re.finditer(r"(?:^|:)quarantine_size_mb=(\d+)", environ.get("ASAN_OPTIONS", "")):
        pass
    return (int(m.group(1)) if m else ASAN_DEFAULT_QUARANTINE_MB) * MiB


def quarantine_allowance(environ):
    """The memory a full quarantine holds: its size counts the bytes the
    program asked for, while each chunk held also has its header and
    redzones and is rounded up to its size class (half as much again for
    the small allocations a gRPC request makes), and the shadow adds an
    eighth of all that. Measured: 330 to 415 MiB of growth in the ASan load
    run, with 256 MiB of quarantine and 96 of allocator slack."""
    return quarantine_bytes(environ) * 3 // 2 * 9 // 8


def sanitizer_report(text, lines=40):
    """The first report in text up to its shadow bytes' dump, at most a few
    dozen lines; None when there is none."""
    m = SANITIZER_REPORT.search(text)
    if not m:
        return None
    start = text.rfind("\n", 0, m.start()) + 1
    out = []
    for line in text[start:].splitlines()[:lines]:
        if "Shadow bytes around the buggy address" in line:
            break
        out.append(line)
    return "\n".join(out)


# --- processes ---------------------------------------------------------------

def snapshot(path, into, wait=180):
    """A private copy of a binary: every scenario runs the same build even
    when the build tree is relinked meanwhile."""
    end = time.monotonic() + wait
    while not os.access(path, os.X_OK):  # being linked
        if time.monotonic() > end:
            raise Failure(f"{path} is not an executable")
        time.sleep(1)
    copy = os.path.join(into, os.path.basename(path))
    shutil.copy2(path, copy)
    return copy


class Context:
    def __init__(self, args):
        self.tmp = tempfile.mkdtemp(prefix="kjit-load-")
        bin_dir = os.path.join(self.tmp, "bin")
        os.makedirs(bin_dir)
        self.kjitd = snapshot(args.kjitd, bin_dir)
        self.kjit = snapshot(args.kjit, bin_dir)
        self.driver = snapshot(args.driver, bin_dir)
        self.asan = built_with_asan(self.kjitd)
        self.env = sanitizer_environment(os.environ) if self.asan else dict(os.environ)
        self.rng = random.Random(args.seed)
        self.seed = args.seed
        self.keep = args.keep
        self.fs_mode = args.fs_mode
        self.daemons = []
        self.redis = []
        self.mounts = []
        self.notes = []
        help_text = subprocess.run([self.kjitd, "--help"], capture_output=True, text=True, timeout=60, env=self.env)
        self.kjitd_help = help_text.stdout + help_text.stderr

    def cleanup(self):
        for d in self.daemons:
            d.stop(quiet=True)
        for r in self.redis:
            r.stop()
        for m in self.mounts:
            subprocess.run(["umount", "-l", m], capture_output=True)
        if not self.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


class Daemon:
    def __init__(self, ctx, name, args, cache_dir=None, wrapper=None):
        self.ctx = ctx
        self.name = name
        self.args = list(args)
        self.dir = tempfile.mkdtemp(prefix=f"{name}-", dir=ctx.tmp)
        self.socket = os.path.join(self.dir, "kjitd.sock")
        self.cache_dir = cache_dir or os.path.join(self.dir, "cache")
        # The workers' private directories go here too, so that the ones a
        # killed daemon leaves behind are removed with the scenario.
        self.tmpdir = os.path.join(self.dir, "tmp")
        os.makedirs(self.tmpdir)
        self.log_path = os.path.join(self.dir, "kjitd.log")
        self.wrapper = wrapper or []
        self.proc = None
        ctx.daemons.append(self)

    @property
    def pid(self):
        return self.proc.pid

    def prestart_off(self):
        # No Triton worker ahead of a Triton request (none comes here): its
        # interpreter's CPU and memory would blur what the scenarios measure.
        return ["--no-triton-prestart"] if "--no-triton-prestart" in self.ctx.kjitd_help else []

    def shared_descriptions(self):
        # The Triton builds described by the run's first daemon that needs
        # them, not again by each (seconds of CPU each time).
        if "--triton-descriptions-dir" not in self.ctx.kjitd_help:
            return []
        return ["--triton-descriptions-dir", os.path.join(self.ctx.tmp, "triton-descriptions")]

    def start(self, deadline=90):
        argv = self.wrapper + [self.ctx.kjitd, "--socket", self.socket, "--cache-dir", self.cache_dir,
                               "--log-level", "info"] + self.prestart_off() + self.shared_descriptions() + self.args
        env = dict(self.ctx.env, TMPDIR=self.tmpdir)
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise Failure(f"kjitd ({self.name}) exited with {self.proc.returncode} while starting:\n"
                              f"{self.log_tail()}")
            if os.path.exists(self.socket):
                r = self.cli("health", timeout=20, check=False)
                if r.returncode == 0 and "SERVING" in r.stdout:
                    return self
            time.sleep(0.1)
        raise Failure(f"kjitd ({self.name}) did not serve within {deadline} s:\n{self.log_tail()}")

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        self.proc.wait(timeout=60)

    def stop(self, quiet=False):
        """SIGTERM, and (unless quiet) a failure for any exit but 0: under
        LeakSanitizer a leak found at exit is a non-zero exit."""
        if not self.running():
            return
        self.proc.terminate()
        # LeakSanitizer's scan of a large heap at exit takes a while.
        wait = 180 if self.ctx.asan else 60
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            if not quiet:
                self.ctx.notes.append(f"kjitd ({self.name}) ignored SIGTERM for {wait} s; killed")
            self.proc.kill()
            self.proc.wait()
        if not quiet:
            self.check_log()
            expect(self.proc.returncode == 0,
                   f"kjitd ({self.name}) exited {self.proc.returncode} on SIGTERM, not 0:\n{self.log_tail()}")

    def check_log(self):
        """A failure for any sanitizer report in the log, kjitd's or a worker's."""
        try:
            with open(self.log_path, errors="replace") as f:
                report = sanitizer_report(f.read())
        except OSError:
            return
        expect(report is None, f"kjitd ({self.name}): a sanitizer report in its log {self.log_path}:\n{report}")

    def log_tail(self, lines=40):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def cli(self, *args, timeout=120, check=True):
        env = dict(self.ctx.env, KJIT_SOCKET=self.socket)
        r = subprocess.run([self.ctx.kjit, *args], capture_output=True, text=True, timeout=timeout, env=env)
        client_report(f"kjit {' '.join(args)}", r.stderr)
        if check and r.returncode != 0:
            raise Failure(f"`kjit {' '.join(args)}` exited {r.returncode}: {r.stderr.strip()}")
        return r

    def stats(self):
        return json.loads(self.cli("cache", "stats", "--json").stdout)

    def driver_args(self):
        return [self.ctx.driver, "--socket", self.socket]

    def drive(self, *args, timeout=300):
        r = subprocess.run(self.driver_args() + [str(a) for a in args], capture_output=True, text=True,
                           timeout=timeout, env=self.ctx.env)
        client_report("kjit_load_driver", r.stderr)
        if r.returncode != 0:
            raise Failure(f"kjit_load_driver {' '.join(map(str, args))} exited {r.returncode}: {r.stderr.strip()}\n"
                          f"kjitd's log:\n{self.log_tail()}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    def compile_once(self, source, *options, timeout=300):
        path = os.path.join(self.dir, f"once-{time.monotonic_ns()}.cu")
        with open(path, "w") as f:
            f.write(source)
        return self.drive("--once", path, *[f"--option={o}" for o in options], timeout=timeout)


def client_report(what, stderr):
    report = sanitizer_report(stderr or "")
    expect(report is None, f"{what}: a sanitizer report on its stderr:\n{report}")


def tier(stats, name):
    for t in stats.get("tiers", []):
        if t.get("tier") == name:
            return t
    return {}


class Redis:
    def __init__(self, ctx, port):
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="redis-", dir=ctx.tmp)
        self.proc = None
        ctx.redis.append(self)

    def start(self):
        with open(os.path.join(self.dir, "redis.log"), "ab") as out:
            self.proc = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", self.dir], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        end = time.monotonic() + 20
        while time.monotonic() < end:
            if self.command("PING") == "PONG":
                return self
            time.sleep(0.05)
        raise Failure(f"redis-server did not answer PING on port {self.port}")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    stop = kill

    def command(self, *words):
        """One command in RESP; the reply as text (an integer in decimal), None if it failed."""
        request = f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.sendall(request.encode())
                reply = s.recv(4096).decode(errors="replace")
        except OSError:
            return None
        if reply[:1] in ("+", ":"):
            return reply[1:].split("\r\n", 1)[0]
        return None

    def dbsize(self):
        reply = self.command("DBSIZE")
        return int(reply) if reply is not None else -1


def miss_figures(summary):
    return {k: summary["kinds"][k] for k in ("hit", "miss", "bad")}


def check_no_unexpected(summary, what, daemon):
    expect(summary["unexpected_errors"] == 0,
           f"{what}: {summary['unexpected_errors']} unexpected error(s): "
           f"{json.dumps(summary['unexpected_samples'][:5], indent=1)}\nkjitd's log:\n{daemon.log_tail()}")


# --- scenarios ---------------------------------------------------------------

def scenario_load(ctx, args):
    d = Daemon(ctx, "load", ["--memory-cache-bytes", str(MEMORY_TIER_BYTES), "--compile-workers", "2"]).start()
    at_start = proc_status(d.pid)
    sampler = MemorySampler(d.pid).start()
    summary = d.drive("--duration", args.load_seconds, "--clients", args.clients, "--mix", "70,20,10",
                      "--seed", ctx.seed, "--hit-burst", 2, timeout=args.load_seconds + 300)
    sampler.stop()
    hwm = (proc_status(d.pid) or {}).get("VmHWM", 0)
    expect(d.running(), f"kjitd died under load:\n{d.log_tail()}")

    worker_one, worker_all = sampler.worker_peak()
    pool = summary.get("daemon", {}).get("workers", {})
    started = pool.get("started", 0)
    figures = {
        "requests": summary["requests"], "rps": summary["rps"], "seconds": summary["seconds"],
        "kinds": miss_figures(summary), "errors_by_code": summary["errors_by_code"],
        "bad_inputs": summary["bad_inputs"], "unexpected_errors": summary["unexpected_errors"],
        "hit_burst_rps": summary.get("hit_burst", {}).get("rps"),
        "kjitd_rss_start": at_start["VmRSS"], "kjitd_rss_file_start": at_start["RssFile"],
        "kjitd_peak_rss": sampler.peak("VmRSS"), "kjitd_vmhwm": hwm,
        "kjitd_peak_anon": sampler.peak("RssAnon"),
        "worker_peak_rss": worker_one, "workers_peak_rss_together": worker_all,
        "worker_pids_seen": len(sampler.worker_pids), "pool_size": pool.get("max"),
        "workers_started": started,
        # A worker that is replaced shows as one pid more than the pool holds.
        "worker_restarts": max(0, len(sampler.worker_pids) - (pool.get("max") or 0),
                               started - (pool.get("max") or 0)),
        "cache": summary.get("daemon", {}).get("cache"),
        "samples": len(sampler.samples),
    }

    check_no_unexpected(summary, "load", d)
    for kind in ("hit", "miss", "bad"):
        expect(summary["kinds"][kind]["requests"] > 0, f"load: no {kind} request was made in {summary['seconds']:.0f} s")
    hit_sources = set(summary["kinds"]["hit"]["cache"])
    expect(hit_sources <= {"memory", "disk", "redis"},
           f"load: hits were answered from {sorted(hit_sources)}; a hit must come from a cache tier")
    miss_sources = set(summary["kinds"]["miss"]["cache"])
    expect(miss_sources <= {"compiled"}, f"load: unique kernels were answered from {sorted(miss_sources)}")

    # The bound: what kjitd mapped at start (libraries, toolkits: they do not
    # grow with load), the memory tier's budget, and a fixed overhead; under
    # ASan the heap's share costs more, and the quarantine may fill.
    heap = MEMORY_TIER_BYTES + FIXED_OVERHEAD_BYTES
    growth = SECOND_HALF_GROWTH_BYTES
    sanitizer = ""
    if ctx.asan:
        quarantine = quarantine_allowance(ctx.env)
        heap = heap * ASAN_HEAP_FACTOR + quarantine
        growth = growth * ASAN_HEAP_FACTOR + quarantine
        sanitizer = f", under ASan x{ASAN_HEAP_FACTOR} + quarantine {quarantine / MiB:.0f}"
    bound = at_start["RssFile"] + heap
    figures["kjitd_rss_bound"] = bound
    peak = max(figures["kjitd_peak_rss"], hwm)
    expect(peak < bound, f"load: kjitd's peak RSS {peak / MiB:.1f} MiB is over the bound {bound / MiB:.1f} MiB "
                         f"(mapped at start {at_start['RssFile'] / MiB:.1f} + memory tier {MEMORY_TIER_BYTES / MiB:.0f} "
                         f"+ {FIXED_OVERHEAD_BYTES / MiB:.0f}{sanitizer})")
    middle = summary["seconds"] / 2
    first = sampler.peak("RssAnon", 0, middle)
    second = sampler.peak("RssAnon", middle)
    figures["kjitd_anon_first_half"] = first
    figures["kjitd_anon_second_half"] = second
    expect(second <= first + growth,
           f"load: kjitd's anonymous memory kept climbing: peak {first / MiB:.1f} MiB in the first half, "
           f"{second / MiB:.1f} MiB in the second (allowed {growth / MiB:.0f} MiB more{sanitizer})")
    d.stop()
    return figures


def find_busy_worker(daemon, deadline=60):
    """The worker whose CPU time grows: the one running the compile."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        before = {w: cpu_ticks(w) for w in workers_of(daemon.pid)}
        time.sleep(0.3)
        deltas = {w: (cpu_ticks(w) or 0) - (t or 0) for w, t in before.items() if t is not None}
        busy = [w for w, dt in sorted(deltas.items(), key=lambda kv: -kv[1]) if dt > 0]
        if busy:
            return busy[0], len(before)
    return None, 0


def scenario_worker_kill(ctx, args):
    d = Daemon(ctx, "worker-kill", ["--compile-workers", "2"]).start()
    salt = ctx.rng.randrange(1 << 30)
    warm = d.compile_once(SMALL_KERNEL.format(tag=f"warm{salt}", value=1))
    expect(warm["code"] == "OK", f"worker_kill: the first compile failed: {warm['code']}: {warm['message']}")
    slow_path = os.path.join(d.dir, "slow.cu")
    with open(slow_path, "w") as f:
        f.write(SLOW_KERNEL)
    slow = subprocess.Popen(d.driver_args() + ["--once", slow_path, f"--option=-DSLOW_DEPTH={args.slow_depth}",
                                               f"--option=-DSLOW_SALT={salt}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ctx.env)
    started = time.monotonic()
    time.sleep(0.5)
    busy, live = find_busy_worker(d)
    if busy is None:
        slow.kill()
        raise Failure(f"worker_kill: no busy compile worker found among kjitd's children:\n{d.log_tail()}")
    os.kill(busy, signal.SIGKILL)
    killed_after = time.monotonic() - started
    out, err = slow.communicate(timeout=300)
    client_report("kjit_load_driver", err)
    expect(slow.returncode == 0, f"worker_kill: the driver failed: {err}")
    answer = json.loads(out.strip().splitlines()[-1])
    figures = {"killed_worker": busy, "killed_after_s": killed_after, "code": answer["code"],
               "message": answer["message"][:300], "answered_after_ms": answer["ms"]}
    expect(answer["code"] != "OK", "worker_kill: the compile whose worker was killed succeeded "
                                   f"(after {answer['ms']:.0f} ms): the slow kernel is not slow enough here")
    expect(answer["code"] in ("INTERNAL", "UNAVAILABLE"),
           f"worker_kill: a killed worker was answered {answer['code']}: {answer['message']}")
    expect(re.search(r"worker", answer["message"], re.I) and re.search(r"signal|killed|died", answer["message"], re.I),
           f"worker_kill: the error does not name the worker's death: {answer['message']}")
    expect(d.running(), f"worker_kill: kjitd died with its worker:\n{d.log_tail()}")
    d.cli("health")
    after = d.compile_once(SMALL_KERNEL.format(tag=f"after{salt}", value=2))
    expect(after["code"] == "OK" and after["cache"] == "compiled",
           f"worker_kill: the next compile was {after['code']} ({after['cache']}): {after['message']}")
    workers = after.get("daemon", {}).get("workers", {})
    figures["workers_started"] = workers.get("started")
    figures["worker_restarts"] = max(0, (workers.get("started") or 0) - live)
    d.stop()
    return figures


def parse_verify(text):
    m = re.search(r"checked (\d+) entries, removed (\d+) bad ones", text)
    expect(m, f"daemon_kill: cannot read `kjit cache verify`'s output: {text!r}")
    return int(m.group(1)), int(m.group(2))


def temp_files(cache_dir):
    found = []
    for root, _, files in os.walk(cache_dir):
        found += [os.path.join(root, f) for f in files if f.startswith(".tmp-")]
    return found


def scenario_daemon_kill(ctx, args):
    rounds = []
    for r in range(args.kill_rounds):
        cache_dir = tempfile.mkdtemp(prefix=f"kill-cache-{r}-", dir=ctx.tmp)
        d = Daemon(ctx, f"daemon-kill-{r}", ["--compile-workers", "2"], cache_dir=cache_dir).start()
        journal = os.path.join(d.dir, "journal")
        seed = ctx.seed * 10 + r
        drv = subprocess.Popen(d.driver_args() + ["--duration", "120", "--clients", str(args.clients), "--mix", "0,1,0",
                                                  "--seed", str(seed), "--journal", journal, "--stop-on-unavailable"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ctx.env)
        # Killed after a random number of answered writes and a random delay.
        wanted = ctx.rng.randint(3, 30)
        end = time.monotonic() + 120
        done = 0
        while time.monotonic() < end and drv.poll() is None:
            try:
                with open(journal) as f:
                    done = sum(1 for line in f if line.startswith("done "))
            except OSError:
                done = 0
            if done >= wanted:
                break
            time.sleep(0.02)
        expect(done >= wanted, f"daemon_kill: only {done} misses were answered in 120 s:\n{d.log_tail()}")
        time.sleep(ctx.rng.uniform(0, 0.25))
        d.kill(signal.SIGKILL)
        out, err = drv.communicate(timeout=300)
        client_report("kjit_load_driver", err)
        expect(drv.returncode == 0, f"daemon_kill: the driver failed: {err}")
        load = json.loads(out.strip().splitlines()[-1])
        leftovers = temp_files(cache_dir)

        d2 = Daemon(ctx, f"daemon-kill-{r}-restart", ["--compile-workers", "2"], cache_dir=cache_dir).start()
        checked, removed = parse_verify(d2.cli("cache", "verify").stdout)
        checked_again, removed_again = parse_verify(d2.cli("cache", "verify").stdout)
        listed = json.loads(d2.cli("cache", "ls", "--json").stdout)
        listed_keys = {e["key"] for e in listed}
        replay = d2.drive("--replay", journal, timeout=600)
        by_key = {row["key"]: row for row in replay if row["code"] == "OK"}
        failed = [row for row in replay if row["code"] != "OK"]
        answered = [row for row in replay if row["answered_before"]]
        round_figures = {
            "answered_before_kill": done, "misses_issued": load["misses_issued"],
            "driver_errors": load["errors_by_code"], "temp_files_after_kill": len(leftovers),
            "verify_checked": checked, "verify_removed": removed, "listed": len(listed),
            "read_back_from_disk": sum(1 for k in listed_keys if by_key.get(k, {}).get("cache") == "disk"),
            "replayed": len(replay),
        }
        rounds.append(round_figures)
        log(f"daemon_kill round {r + 1}: {json.dumps(round_figures)}")
        expect(removed_again == 0, f"daemon_kill: a second `kjit cache verify` still removed {removed_again} entries")
        if leftovers:
            ctx.notes.append(f"daemon_kill round {r + 1}: {len(leftovers)} temp file(s) of interrupted writes left in "
                             "the cache; not entries, so neither listed nor verified")
        if removed:
            ctx.notes.append(f"daemon_kill round {r + 1}: `kjit cache verify` removed {removed} bad entr(ies) "
                             "left by the kill (reported by the tool)")
        expect(len(listed) == checked_again,
               f"daemon_kill: `kjit cache ls` lists {len(listed)} entries, verify checked {checked_again}")
        expect(not failed, f"daemon_kill: recompiling issued misses failed: {json.dumps(failed[:5])}")
        for row in answered:
            expect(row["key"] == row.get("key_before"),
                   f"daemon_kill: miss {row['id']} has key {row['key']} now, {row.get('key_before')} before the kill")
            expect(row["key"] in listed_keys,
                   f"daemon_kill: miss {row['id']} was answered before the kill but its entry {row['key']} "
                   "is not on disk after the restart")
        for key in listed_keys:
            expect(key in by_key, f"daemon_kill: the disk holds {key}, which no request of this run spells")
            expect(by_key[key]["cache"] == "disk",
                   f"daemon_kill: the entry {key} on disk was answered {by_key[key]['cache']!r}, not read back "
                   "from disk")
        d2.stop()
    return {"rounds": rounds}


def scenario_redis(ctx, args):
    if not shutil.which("redis-server"):
        raise Skip("redis-server is not installed")
    port = free_port()
    redis = Redis(ctx, port).start()
    d = Daemon(ctx, "redis", ["--redis", f"127.0.0.1:{port}", "--compile-workers", "2"]).start()
    clients = min(args.clients, 8)
    before = d.drive("--duration", 5, "--clients", clients, "--mix", "50,50,0", "--seed", ctx.seed + 1)
    check_no_unexpected(before, "redis (up)", d)
    stats_up = tier(d.stats(), "redis")
    keys_up = redis.dbsize()
    expect(stats_up.get("puts", 0) > 0 and keys_up > 0,
           f"redis: nothing reached Redis while it was up (puts {stats_up.get('puts')}, dbsize {keys_up})")

    redis.kill()
    down = d.drive("--duration", 6, "--clients", clients, "--mix", "50,50,0", "--seed", ctx.seed + 2)
    check_no_unexpected(down, "redis (killed)", d)
    stats_down = tier(d.stats(), "redis")
    failures_up = stats_up.get("errors", 0) + stats_up.get("skipped", 0)
    failures_down = stats_down.get("errors", 0) + stats_down.get("skipped", 0)
    expect(failures_down > failures_up,
           f"redis: `kjit cache stats` counted no Redis failures while it was down ({failures_up} -> {failures_down})")

    redis.start()  # the same port, empty: it kept nothing
    recovered_after = None
    started = time.monotonic()
    again = None
    # The tier's breaker probes again after its back-off (up to 30 s).
    while time.monotonic() - started < 60:
        again = d.drive("--duration", 2, "--clients", 4, "--mix", "20,80,0", "--seed",
                        ctx.seed + 3 + int(time.monotonic() - started))
        check_no_unexpected(again, "redis (restarted)", d)
        if redis.dbsize() > 0 and tier(d.stats(), "redis").get("puts", 0) > stats_down.get("puts", 0):
            recovered_after = time.monotonic() - started
            break
    stats_again = tier(d.stats(), "redis")
    figures = {
        "up": {"rps": before["rps"], "kinds": miss_figures(before), "redis_puts": stats_up.get("puts"),
               "dbsize": keys_up},
        "down": {"rps": down["rps"], "kinds": miss_figures(down), "redis_failures": failures_down - failures_up,
                 "errors_by_code": down["errors_by_code"]},
        "restarted": {"puts_after": stats_again.get("puts"), "dbsize": redis.dbsize(),
                      "reached_redis_after_s": recovered_after},
    }
    expect(recovered_after is not None,
           f"redis: no new entry reached Redis within 60 s of its restart (dbsize {redis.dbsize()}, "
           f"puts {stats_down.get('puts')} -> {stats_again.get('puts')}):\n{d.log_tail()}")
    d.stop()
    redis.kill()
    return figures


def mount_full_tmpfs(ctx, cache_dir):
    """Mounts a full 1 MiB tmpfs on cache_dir for the daemon: here, or in a new
    user and mount namespace kjitd then runs in. Returns the wrapper argv."""
    fill = 'mount -t tmpfs -o size=1m tmpfs "$0" && { dd if=/dev/zero of="$0/fill" bs=64k 2>/dev/null; true; }'
    errors = []
    if ctx.fs_mode in ("auto", "mount"):
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", cache_dir], capture_output=True, text=True)
        if r.returncode == 0:
            ctx.mounts.append(cache_dir)
            subprocess.run(["dd", "if=/dev/zero", f"of={cache_dir}/fill", "bs=64k"], capture_output=True)
            return "mount", []
        errors.append(f"mount: {r.stderr.strip()}")
    if ctx.fs_mode in ("auto", "unshare"):
        probe = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", fill, cache_dir]
        r = subprocess.run(probe, capture_output=True, text=True)
        if r.returncode == 0:
            return "unshare", ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                               fill + ' && exec "$@"', cache_dir]
        errors.append(f"unshare --user --map-root-user --mount: {r.stderr.strip()}")
    raise Skip("cannot mount a tmpfs for the cache: " + "; ".join(errors))


def metric_sum(text, name, labels):
    total, seen = 0.0, False
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
            seen = True
    return total if seen else None


def scenario_full_disk(ctx, args):
    holder = tempfile.mkdtemp(prefix="full-disk-", dir=ctx.tmp)
    cache_dir = os.path.join(holder, "cache")
    os.makedirs(cache_dir)
    mode, wrapper = mount_full_tmpfs(ctx, cache_dir)
    extra = []
    metrics_port = None
    if "--metrics-port" in ctx.kjitd_help:
        metrics_port = free_port()
        extra = ["--metrics-port", str(metrics_port)]
    d = Daemon(ctx, "full-disk", ["--compile-workers", "2"] + extra, cache_dir=cache_dir, wrapper=wrapper).start()
    # The daemon's view of its cache directory, in its own mount namespace.
    view = f"/proc/{d.pid}/root{cache_dir}"
    fs = os.statvfs(view)
    free_bytes = fs.f_bavail * fs.f_frsize
    expect(free_bytes == 0, f"full_disk: the tmpfs under the cache has {free_bytes} bytes free, not 0")
    summary = d.drive("--duration", 4, "--clients", 2, "--mix", "0,1,0", "--seed", ctx.seed + 7)
    disk = tier(d.stats(), "disk")
    figures = {"mode": mode, "kinds": miss_figures(summary), "errors_by_code": summary["errors_by_code"],
               "disk_errors": disk.get("errors", 0) + disk.get("skipped", 0), "disk_puts": disk.get("puts", 0)}
    if summary["unexpected_errors"]:
        raise Failure("full_disk: compiles failed while the cache's file system was full (a kjitd bug: a full "
                      "disk tier must cost only the disk put): "
                      f"{json.dumps(summary['unexpected_samples'][:5], indent=1)}\nkjitd's log:\n{d.log_tail(60)}")
    misses = summary["kinds"]["miss"]
    expect(misses["requests"] > 0 and set(misses["cache"]) == {"compiled"},
           f"full_disk: compiles were not answered \"compiled\": {misses}")
    expect(figures["disk_errors"] > 0, f"full_disk: `kjit cache stats` counted no disk tier failure: {disk}")
    if figures["disk_errors"] > misses["ok"]:
        ctx.notes.append(f"full_disk: {misses['ok']} failed disk puts show as {figures['disk_errors']} disk errors "
                         "in `kjit cache stats`")
    if metrics_port:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
                text = r.read().decode(errors="replace")
            value = metric_sum(text, "kjit_cache_errors_total", {"tier": "disk"})
            figures["kjit_cache_errors_total_disk"] = value
            if value is None:
                ctx.notes.append("full_disk: /metrics has no kjit_cache_errors_total{tier=\"disk\"} series")
            else:
                expect(value > 0, "full_disk: kjit_cache_errors_total{tier=\"disk\"} is 0 after failed puts")
        except OSError as e:
            ctx.notes.append(f"full_disk: could not read /metrics on port {metrics_port}: {e}")
    d.stop()
    return figures


# --- endurance ---------------------------------------------------------------

# "Months, measured": one kjitd serving a long mixed stream (new Triton
# kernels for several targets, new CUDA C++, new PTX, repeats that must be
# hits) from several clients, with --compile-cpu-seconds bounding each
# compile. Every answer must be right (the bytes a fresh daemon gives for
# the same request), the Triton jobs together must spend far more CPU than
# one job may, and after the warm-up the daemon's and its workers' memory,
# files, threads and temporary directories must stay flat.

# The scenario's length in a test run; --duration sets another (the bench
# runs it for 30 minutes, where a slow leak has time to show). 60 s give
# thirds of ten samples each, and Triton jobs' CPU several times what the
# checks below need (150 s runs gave 215 s of it, 106 s under ASan).
ENDURANCE_SECONDS = 60
ASAN_ENDURANCE_SECONDS = 60
# --compile-cpu-seconds: each Triton job's child may use this much CPU; the
# warm interpreter forking them has no bound, so together they may use far
# more. A variant of triton_variants.py takes 0.65 s on average, 1.6 s at most.
ENDURANCE_CPU_SECONDS = 5
# The Triton jobs' CPU together must be at least this many times one job's bound.
ENDURANCE_CPU_FACTOR = 4
ENDURANCE_CLIENTS = 4
# More workers than clients: the pool is kept full, and a job finding no
# idle worker of its class ends an idle one of the other class (a Triton
# worker's interpreter then starts anew): with 3 workers for the 4 clients
# 13 interpreters started in 60 s, none living long; with 6, 10 in 600 s,
# one of them serving 113 s of Triton jobs' CPU.
ENDURANCE_WORKERS = 6
# kjitd's memory tier, small as in the load scenario: a Triton entry (its
# binary, metadata and every stage's IR) is tens to hundreds of KiB, so the
# tier fills within the warm-up and the memory that follows is not a cache
# growing to its budget.
ENDURANCE_MEMORY_TIER_BYTES = 8 * MiB
# New Triton kernels, new CUDA C++ and PTX, and repeats of answered requests.
ENDURANCE_MIX = (("triton", 40), ("cuda", 15), ("ptx", 10), ("repeat", 35))
# Beyond the warm-up (the first third): how much the resident memory of
# kjitd, and of each worker and Triton interpreter that lived through both,
# may grow from the second third to the last. The workers and interpreters
# stay within a few MiB; kjitd's grows by some 30 KiB a distinct compile
# until its bounded tables are full (the plan memo keeps 64 MiB of jobs, the
# recipe index 10,000 recipes): its peak rose 6 MiB from the second third
# to the last of a 150 s run on 2 cores, 6 to 8 MiB in 600 s runs.
ENDURANCE_RSS_GROWTH = 32 * MiB
# What a peak of the last third may exceed the second third's by where a
# sample's value depends on what is in flight at that moment, not on what
# ran before: kjitd's open files and threads, by the calls in flight (one a
# client; the slack is their number); a worker's or an interpreter's open
# files, threads and directories, by the job it runs (a Triton job's pipe,
# log and Triton's cache directory for it); the top-level directories under
# kjitd's TMPDIR that no live worker works in (a worker ending while
# another, started in its place, made its own). A leak shows all the same:
# besides the peaks, the lowest value of the last third may not exceed the
# highest of the second.
ENDURANCE_JOB_SLACK = 4
ENDURANCE_DIR_SLACK = ENDURANCE_WORKERS
# The fresh daemon's sample: up to this many Triton requests (all of them
# when the run made fewer), CUDA C++ and PTX ones; at least ENDURANCE_SAMPLE_MIN in all.
ENDURANCE_SAMPLE_TRITON = 24
ENDURANCE_SAMPLE_OTHER = 8
ENDURANCE_SAMPLE_MIN = 20
ENDURANCE_CUDA_TARGETS = ("cuda:80", "cuda:90")
ENDURANCE_PTX_TARGETS = ("cuda:80", "cuda:90")

TRITON_BUILDS = os.environ.get("KJIT_TRITON_BUILDS_DIR") or os.path.join(REPO, ".deps", "triton-builds")
TRITON_DEFAULT_BUILD = "triton-3.9.0"

PTX_BASE_KERNEL = """
extern "C" __global__ void kjit_ptx_base(float* x, const float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 3.0f + y[i];
}
"""


def triton_python():
    """The default Triton build's interpreter, or None when it is not installed."""
    python = os.path.join(TRITON_BUILDS, TRITON_DEFAULT_BUILD, "bin", "python")
    return python if os.access(python, os.X_OK) else None


def open_files(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def thread_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return None


def cpu_fields(pid):
    """(own, reaped children's) CPU seconds of pid: utime+stime, cutime+cstime."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def directories_under(root, skip=()):
    """The directories under root, those of its entries named in skip aside."""
    count = 0
    for base, dirs, _ in os.walk(root):
        if base == root:
            dirs[:] = [d for d in dirs if d not in skip]
        count += len(dirs)
    return count


def worker_directory(pid, root):
    """The directory under root a worker works in (its private directory:
    it enters it before it confines itself), or None."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    rel = os.path.relpath(cwd, root)
    return None if rel.startswith("..") else rel.split(os.sep)[0]


def is_interpreter(cmdline):
    return os.path.basename(cmdline.split(" ", 1)[0]).startswith("python")


class Request:
    """One compile request: a file, a target and options. Its first answer
    is kept (the output file, key) for the repeats and the fresh daemon."""

    def __init__(self, kind, label, path, args):
        self.kind = kind  # "triton", "cuda", "ptx"
        self.label = label
        self.path = path
        self.args = list(args)
        self.first = None

    def argv(self, kjit, out):
        return [kjit, "compile", self.path, *self.args, "-o", out, "--json"]

    def text(self):
        return f"{self.label} ({' '.join(self.args)})"


def kjit_compile(ctx, socket_path, request, out, timeout=300):
    """`kjit compile` of one request: its answer's JSON, or an error."""
    env = dict(ctx.env, KJIT_SOCKET=socket_path)
    began = time.monotonic()
    try:
        r = subprocess.run(request.argv(ctx.kjit, out), capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {timeout} s"}
    ms = (time.monotonic() - began) * 1000
    report = sanitizer_report(r.stderr or "")
    if report:
        return {"error": f"a sanitizer report on kjit's stderr:\n{report}", "sanitizer": True}
    if r.returncode != 0:
        return {"error": f"exit {r.returncode}: {r.stderr.strip()[:1500]}"}
    try:
        answer = json.loads(r.stdout)
    except ValueError:
        return {"error": f"not JSON on stdout: {r.stdout[:300]!r}"}
    if not os.path.isfile(out):
        return {"error": f"no output file {out}"}
    return {"answer": answer, "ms": ms}


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def percentiles(values):
    if not values:
        return {"requests": 0}
    values = sorted(values)
    pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]
    return {"requests": len(values), "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": values[-1]}


class EnduranceStream:
    """The requests the clients take, one at a time: new ones of each kind
    and repeats of answered ones, by ENDURANCE_MIX; and what came back."""

    def __init__(self, ctx, work, triton, cuda_bases, ptx_base):
        self.ctx = ctx
        self.work = work
        self.triton = triton  # an iterator of triton_variants.Variant, or None
        self.cuda_bases = cuda_bases  # [(name, text)]
        self.ptx_base = ptx_base  # PTX text naming kjit_ptx_base, or None
        self.rng = random.Random(ctx.seed * 7 + 3)
        self.lock = threading.Lock()
        self.serial = 0
        self.originals = []  # requests with a first answer
        self.failures = []
        self.refused = []  # (request, message): Triton said invalid argument
        self.miss_ms, self.hit_ms = [], []
        self.counts = {k: {"issued": 0, "ok": 0, "hits": 0} for k in ("triton", "cuda", "ptx")}
        self.answered = 0
        self.triton_compiled = 0
        os.makedirs(os.path.join(work, "in"))
        os.makedirs(os.path.join(work, "out"))

    def _path(self, name):
        return os.path.join(self.work, "in", name)

    def add_original(self, request, out, answer):
        """A request made outside the stream (the PTX base), answered."""
        with self.lock:
            request.first = {"out": out, "key": answer.get("key"), "cache": answer.get("cache")}
            self.originals.append(request)
            self.counts[request.kind]["issued"] += 1
            self.counts[request.kind]["ok"] += 1
            self.answered += 1

    def _new(self, kind):
        self.serial += 1
        n = self.serial
        if kind == "triton":
            v = next(self.triton)
            path = v.write(os.path.join(self.work, "in"))
            return Request("triton", v.name, path, v.option_args())
        if kind == "ptx":
            name = f"kjit_ptx_{self.ctx.seed}_{n}"
            path = self._path(f"{name}.ptx")
            with open(path, "w") as f:
                f.write(self.ptx_base.replace("kjit_ptx_base", name))
            return Request("ptx", name, path, ["-t", self.rng.choice(ENDURANCE_PTX_TARGETS)])
        base, text = self.cuda_bases[n % len(self.cuda_bases)]
        name = f"{os.path.splitext(base)[0]}_{self.ctx.seed}_{n}"
        path = self._path(f"{name}.cu")
        with open(path, "w") as f:
            f.write(text + f'\nextern "C" __global__ void kjit_endurance_{n}(float* x) {{ x[threadIdx.x] += {n}.0f; }}\n')
        return Request("cuda", name, path, ["-t", self.rng.choice(ENDURANCE_CUDA_TARGETS)])

    def take_new(self, kind):
        return self.take(kind)

    def take(self, kind=None):
        """(request, is a repeat, output path)."""
        with self.lock:
            kinds = [(k, w) for k, w in ENDURANCE_MIX
                     if (k != "triton" or self.triton) and (k != "ptx" or self.ptx_base)
                     and (k != "repeat" or self.originals)]
            kind = kind or self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
            repeat = kind == "repeat"
            request = self.rng.choice(self.originals) if repeat else self._new(kind)
            self.serial += 1
            out = os.path.join(self.work, "out", f"{self.serial}.bin")
            self.counts[request.kind]["issued"] += 1
        return request, repeat, out

    def record(self, request, repeat, out, result):
        with self.lock:
            self.answered += 1
            if "error" in result:
                if (request.kind == "triton" and not repeat and "invalid argument" in result["error"]
                        and not result.get("sanitizer")):
                    self.refused.append((request, result["error"]))
                else:
                    self.failures.append(f"{request.kind} {'repeat ' if repeat else ''}{request.text()}: "
                                         f"{result['error']}")
                return
            answer = result["answer"]
            self.counts[request.kind]["ok"] += 1
            if not repeat:
                if answer.get("cache") != "compiled":
                    self.failures.append(f"{request.text()}: a new request answered from {answer.get('cache')!r}, "
                                         "not compiled")
                request.first = {"out": out, "key": answer.get("key"), "cache": answer.get("cache")}
                self.originals.append(request)
                self.miss_ms.append(result["ms"])
                if request.kind == "triton":
                    self.triton_compiled += 1
                return
            self.hit_ms.append(result["ms"])
            if answer.get("cache") in ("memory", "disk"):
                self.counts[request.kind]["hits"] += 1
            else:
                self.failures.append(f"repeat {request.text()}: answered from {answer.get('cache')!r}, not a hit")
            if not same_bytes(out, request.first["out"]):
                self.failures.append(f"repeat {request.text()}: {os.path.getsize(out)} bytes differ from the first "
                                     f"answer's {os.path.getsize(request.first['out'])}")
            elif answer.get("key") != request.first["key"]:
                self.failures.append(f"repeat {request.text()}: key {answer.get('key')} != {request.first['key']}")
            else:
                os.unlink(out)


class EnduranceSampler:
    """Every `period` s: kjitd's, each worker's and each Triton interpreter's
    resident memory, open files and threads, the directories under kjitd's
    temporary root, the Triton jobs' CPU so far, and the stream's count."""

    def __init__(self, daemon, stream, period):
        self.daemon = daemon
        self.stream = stream
        self.period = period
        self.samples = []
        self.jobs_cpu = {}  # interpreter pid -> its reaped children's CPU, last seen
        self.own_cpu = {}  # interpreter pid -> its own CPU (Triton's import, the forks)
        self.unreadable = set()
        self.error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.t0 = time.monotonic()
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()
        self.sample()  # the end of the run

    def _run(self):
        try:
            while not self._stop.wait(0 if not self.samples else self.period):
                if self.sample() is None:
                    return
        except Exception as e:  # its own bug: the scenario fails on it, not on missing samples
            self.error = f"{type(e).__name__}: {e}"

    def process(self, pid, what):
        status = proc_status(pid)
        if status is None:
            return None
        fds = open_files(pid)
        if fds is None:
            self.unreadable.add(what)
        return {"rss": status.get("VmRSS", 0), "anon": status.get("RssAnon", 0), "fds": fds,
                "threads": thread_count(pid)}

    def sample(self):
        t = time.monotonic() - self.t0
        daemon = self.process(self.daemon.pid, "kjitd")
        if daemon is None:
            return None
        workers, interpreters, jobs, owned = {}, {}, 0, set()
        root = self.daemon.tmpdir
        for w in workers_of(self.daemon.pid):
            entry = self.process(w, "a worker")
            if entry is None:
                continue
            top = worker_directory(w, root)
            if top:
                owned.add(top)
                # Its precompiled headers aside: a cache of one directory a
                # header set, bounded by the workers' PCH budget.
                entry["dirs"] = 1 + directories_under(os.path.join(root, top), skip=("pch",))
            for c, cmdline in children(w).items():
                if not is_interpreter(cmdline):
                    continue
                it = self.process(c, "a Triton interpreter")
                cpu = cpu_fields(c)
                if it is None or cpu is None:
                    continue
                self.own_cpu[c], self.jobs_cpu[c] = cpu
                it.update(worker=w, own_cpu_s=cpu[0], jobs_cpu_s=cpu[1])
                interpreters[str(c)] = it
                jobs += len(children(c))
            workers[str(w)] = entry
        with self.stream.lock:
            answered, compiled = self.stream.answered, self.stream.triton_compiled
        try:
            tops = [e for e in os.listdir(root) if os.path.isdir(os.path.join(root, e))]
        except OSError:
            tops = []
        s = {"t": round(t, 2), "answered": answered, "triton_compiled": compiled,
             "triton_cpu_s": round(sum(self.jobs_cpu.values()), 2), "kjitd": daemon, "workers": workers,
             "interpreters": interpreters, "job_children": jobs,
             # Every directory under kjitd's TMPDIR, and those of its top
             # level that no live worker works in (a worker's that ended, or
             # one being made).
             "tmp_dirs": directories_under(root), "tmp_dirs_unowned": sorted(set(tops) - owned)}
        self.samples.append(s)
        return s


def sample_line(s):
    def mib(v):
        return f"{v / MiB:.0f}"
    interp = s["interpreters"].values()
    return (f"t={s['t']:6.0f}s answered {s['answered']:5d} triton {s['triton_compiled']:4d} "
            f"cpu {s['triton_cpu_s']:7.1f}s | kjitd {mib(s['kjitd']['rss'])} MiB fds {s['kjitd']['fds']} "
            f"thr {s['kjitd']['threads']} | workers {len(s['workers'])} "
            f"{mib(sum(w['rss'] for w in s['workers'].values()))} MiB | interp {len(s['interpreters'])} "
            f"{mib(sum(i['rss'] for i in interp))} MiB fds {sum(i['fds'] or 0 for i in interp)} "
            f"thr {sum(i['threads'] or 0 for i in interp)} | tmp dirs {s['tmp_dirs']} "
            f"({len(s['tmp_dirs_unowned'])} no worker's)")


def endurance_table(samples, rows=12):
    """The samples as a table over time: about `rows` of them, evenly
    spread, the last always; every one with rows=None."""
    if rows and len(samples) > rows:
        step = len(samples) / rows
        picked = [samples[int(i * step)] for i in range(rows)] + [samples[-1]]
    else:
        picked = list(samples)
    head = ("t s", "answered", "triton", "triton CPU s", "kjitd MiB", "fds", "threads", "workers", "workers MiB",
            "interp", "interp MiB", "interp fds", "interp thr", "tmp dirs", "no worker's")
    out = [head]
    for s in picked:
        interp = list(s["interpreters"].values())
        out.append((f"{s['t']:.0f}", str(s["answered"]), str(s["triton_compiled"]), f"{s['triton_cpu_s']:.1f}",
                    f"{s['kjitd']['rss'] / MiB:.1f}", str(s["kjitd"]["fds"]), str(s["kjitd"]["threads"]),
                    str(len(s["workers"])), f"{sum(w['rss'] for w in s['workers'].values()) / MiB:.0f}",
                    str(len(interp)), " ".join(f"{i['rss'] / MiB:.0f}" for i in interp) or "-",
                    " ".join(str(i["fds"]) for i in interp) or "-", " ".join(str(i["threads"]) for i in interp) or "-",
                    str(s["tmp_dirs"]), str(len(s["tmp_dirs_unowned"]))))
    widths = [max(len(r[i]) for r in out) for i in range(len(head))]
    return ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in out]


def window_values(samples, since, until, get):
    out = []
    for s in samples:
        if since <= s["t"] <= until:
            v = get(s)
            if v is not None:
                out.append(v)
    return out


def flatness(samples, end, growth, sanitizer, calls):
    """The failures of the bounds on what may grow after the warm-up, and
    the figures, per quantity: its peak in the second third and in the last
    (and its lowest there). kjitd's thirds are the run's; a worker's or an
    interpreter's, those of its own life, when it lived half the run or
    more (a Triton worker started late has its own warm-up: Triton's cache
    directories of its first compile, its interpreter's memory growing)."""
    failures, figures = [], {}

    def compare(name, get, slack, unit="", since=0.0, until=end):
        # Memory may rise as bounded tables fill with the stream's distinct
        # kernels (the plan memo's 64 MiB, the recipe index): only its
        # growth is bounded. A count (files, threads, directories) depends
        # on nothing of the kind, so it may not creep up either.
        a, b = since + (until - since) / 3, since + 2 * (until - since) / 3
        second = window_values(samples, a, b, get)
        last = window_values(samples, b, float("inf"), get)
        if not second or not last:
            return
        figures[name] = {"second_third_peak": max(second), "last_third_peak": max(last),
                         "last_third_low": min(last)}
        scale = MiB if unit == "MiB" else 1
        if max(last) > max(second) + slack:
            failures.append(f"{name} grew after the warm-up: peak {max(second) / scale:.1f}{unit} in the second "
                            f"third, {max(last) / scale:.1f}{unit} in the last (allowed {slack / scale:.0f}{unit} "
                            f"more{sanitizer if unit else ''})")
        elif unit != "MiB" and min(last) > max(second):
            failures.append(f"{name} crept up: its lowest in the last third, {min(last) / scale:.1f}{unit}, is over "
                            f"its peak in the second third, {max(second) / scale:.1f}{unit}")

    compare("kjitd RSS", lambda s: s["kjitd"]["rss"], growth, "MiB")
    compare("kjitd open files", lambda s: s["kjitd"]["fds"], calls)
    compare("kjitd threads", lambda s: s["kjitd"]["threads"], calls)
    compare("directories under kjitd's TMPDIR no worker works in", lambda s: len(s["tmp_dirs_unowned"]),
            ENDURANCE_DIR_SLACK)
    for group, what in (("workers", "worker"), ("interpreters", "Triton interpreter")):
        seen = {}
        for s in samples:
            for pid in s[group]:
                first, _ = seen.get(pid, (s["t"], s["t"]))
                seen[pid] = (first, s["t"])
        for pid, (first, last) in sorted(seen.items()):
            if last - first < end / 2:
                continue
            get = lambda key: (lambda s: s[group][pid].get(key) if pid in s[group] else None)
            compare(f"{what} {pid} RSS", get("rss"), growth, "MiB", first, last)
            compare(f"{what} {pid} open files", get("fds"), ENDURANCE_JOB_SLACK, "", first, last)
            compare(f"{what} {pid} threads", get("threads"), ENDURANCE_JOB_SLACK, "", first, last)
            compare(f"{what} {pid} directories", get("dirs"), ENDURANCE_JOB_SLACK, "", first, last)
    return failures, figures


def metrics_text(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            return r.read().decode(errors="replace")
    except OSError:
        return None


def scenario_endurance(ctx, args):
    figures = {}
    try:
        return endurance(ctx, args, figures)
    except Failure as e:
        e.figures = figures  # the table shows what was measured before the check that failed
        raise


def endurance(ctx, args, figures):
    duration = args.duration or (ASAN_ENDURANCE_SECONDS if ctx.asan else ENDURANCE_SECONDS)
    period = args.sample_period or max(2.0, duration / 180)
    clients = args.endurance_clients
    python = triton_python()
    triton_note = None
    if python is None:
        triton_note = (f"endurance: the Triton part skipped: no Triton builds in {TRITON_BUILDS} "
                       "(scripts/install-deps.sh installs them)")
        if os.environ.get("CI"):
            raise Failure(triton_note + "; CI must run it")
        ctx.notes.append(triton_note)
        log(triton_note)
    extra = ["--compile-workers", str(ENDURANCE_WORKERS), "--compile-cpu-seconds", str(ENDURANCE_CPU_SECONDS),
             "--memory-cache-bytes", str(ENDURANCE_MEMORY_TIER_BYTES)] + args.kjitd_arg
    metrics_port = None
    if "--metrics-port" in ctx.kjitd_help:
        metrics_port = free_port()
        extra += ["--metrics-port", str(metrics_port)]
    d = Daemon(ctx, "endurance", extra).start()
    work = tempfile.mkdtemp(prefix="endurance-", dir=ctx.tmp)

    cuda_bases = []
    for pattern_dir in ("examples", os.path.join("bench", "kernels")):
        for name in sorted(os.listdir(os.path.join(REPO, pattern_dir))):
            if name.endswith(".cu"):
                with open(os.path.join(REPO, pattern_dir, name)) as f:
                    cuda_bases.append((name, f.read()))
    expect(cuda_bases, "endurance: no CUDA C++ in examples/ or bench/kernels/")
    triton = None
    if python:
        triton = triton_variants.stream(ctx.seed)
    stream = EnduranceStream(ctx, work, triton, cuda_bases, None)

    # The PTX the stream's PTX requests are made from: the daemon's own, an
    # answer like any other (repeated and compared at the end too).
    ptx_source = os.path.join(work, "in", "kjit_ptx_base.cu")
    with open(ptx_source, "w") as f:
        f.write(PTX_BASE_KERNEL)
    ptx_request = Request("cuda", "kjit_ptx_base", ptx_source, ["-t", "cuda:80", "--ptx"])
    ptx_out = os.path.join(work, "out", "kjit_ptx_base.ptx")
    result = kjit_compile(ctx, d.socket, ptx_request, ptx_out)
    expect("error" not in result, f"endurance: the PTX for the stream: {result.get('error')}\n{d.log_tail()}")
    stream.add_original(ptx_request, ptx_out, result["answer"])
    with open(ptx_out) as f:
        stream.ptx_base = f.read()
    expect("kjit_ptx_base" in stream.ptx_base, "endurance: the PTX does not name its kernel")
    if triton:
        # One Triton kernel first, alone: kjitd's first Triton request waits
        # for it to find and describe its Triton builds (seconds), and the
        # stream is meant to measure a daemon past that.
        request, _, out = stream.take_new("triton")
        result = kjit_compile(ctx, d.socket, request, out)
        expect("error" not in result, f"endurance: the first Triton compile: {result.get('error')}\n{d.log_tail()}")
        stream.record(request, False, out, result)

    log(f"endurance: {duration:.0f} s, {clients} clients, a sample every {period:.0f} s; kjitd {d.pid}, "
        f"--compile-cpu-seconds {ENDURANCE_CPU_SECONDS}, {ENDURANCE_WORKERS} workers"
        + ("" if python else "; no Triton"))
    sampler = EnduranceSampler(d, stream, period).start()
    end = time.monotonic() + duration
    errors = []

    def client():
        try:
            while time.monotonic() < end:
                request, repeat, out = stream.take()
                stream.record(request, repeat, out, kjit_compile(ctx, d.socket, request, out))
        except Exception as e:  # the client's own bug: a failure, not a hang
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for th in threads:
        th.start()
    # A line every 15 s at least while it runs; the table at the end.
    every = max(15.0, period)
    shown = -1
    while any(th.is_alive() for th in threads):
        threads[0].join(timeout=0.5)
        if sampler.samples and int(sampler.samples[-1]["t"] // every) > shown:
            shown = int(sampler.samples[-1]["t"] // every)
            log("endurance: " + sample_line(sampler.samples[-1]))
        expect(d.running(), f"endurance: kjitd died:\n{d.log_tail()}")
    stream_seconds = time.monotonic() - sampler.t0
    sampler.stop()
    log("endurance: " + sample_line(sampler.samples[-1]))
    expect(not errors, f"endurance: a client failed: {errors[:3]}")
    expect(not sampler.error, f"endurance: the sampler failed: {sampler.error}")

    # Idle: every Triton job's child gone, nothing left but the workers and
    # their interpreters (bounded polling: the last answers' children are
    # being reaped).
    strays, unowned = None, []
    settle = time.monotonic() + 20
    while time.monotonic() < settle:
        strays = {}
        for w in workers_of(d.pid):
            for c, cmdline in children(w).items():
                if is_interpreter(cmdline):
                    strays.update(children(c))
                else:
                    strays[c] = cmdline
        strays.update({c: cmd for c, cmd in children(d.pid).items() if "--worker-fd" not in cmd})
        owned = {worker_directory(w, d.tmpdir) for w in workers_of(d.pid)}
        unowned = sorted(e for e in os.listdir(d.tmpdir) if e not in owned)
        if not strays and not unowned:
            break
        time.sleep(0.2)

    samples = sampler.samples
    metrics = metrics_text(metrics_port) if metrics_port else None
    worker_pids = set()
    interpreter_pids = set()
    for s in samples:
        worker_pids |= set(s["workers"])
        interpreter_pids |= set(s["interpreters"])
    triton_cpu = sum(sampler.jobs_cpu.values())
    one_interpreter = max(sampler.jobs_cpu.values(), default=0.0)
    growth = ENDURANCE_RSS_GROWTH
    sanitizer = ""
    if ctx.asan:
        quarantine = quarantine_allowance(ctx.env)
        growth = growth * ASAN_HEAP_FACTOR + quarantine
        sanitizer = f", under ASan x{ASAN_HEAP_FACTOR} + quarantine {quarantine / MiB:.0f} MiB"
    flat_failures, flat = flatness(samples, stream_seconds, growth, sanitizer, clients)

    counts = stream.counts
    figures.update({
        "seconds": stream_seconds, "clients": clients, "sample_period_s": period,
        "requests": stream.answered, "rps": stream.answered / stream_seconds if stream_seconds else 0,
        "by_kind": counts, "failed": len(stream.failures), "failures": stream.failures[:20],
        "triton_refused": [f"{r.text()}: {m[:300]}" for r, m in stream.refused],
        "triton": bool(python), "triton_skipped": triton_note,
        "triton_compiled": stream.triton_compiled,
        "triton_jobs_cpu_s": triton_cpu, "triton_jobs_cpu_one_interpreter_s": one_interpreter,
        "triton_interpreters_own_cpu_s": sum(sampler.own_cpu.values()),
        "compile_cpu_seconds": ENDURANCE_CPU_SECONDS,
        "kinds": {"hit": percentiles(stream.hit_ms), "miss": percentiles(stream.miss_ms), "bad": {"requests": 0}},
        "kjitd_peak_rss": max(s["kjitd"]["rss"] for s in samples),
        "worker_peak_rss": max((w["rss"] for s in samples for w in s["workers"].values()), default=0),
        "interpreter_peak_rss": max((i["rss"] for s in samples for i in s["interpreters"].values()), default=0),
        "worker_pids_seen": len(worker_pids), "interpreter_pids_seen": len(interpreter_pids),
        "pool_size": ENDURANCE_WORKERS,
        "worker_restarts": max(0, len(worker_pids) - ENDURANCE_WORKERS),
        "rss_growth_bound": growth, "flat": flat, "strays_after_idle": strays or {},
        "tmp_dirs_unowned_after_idle": unowned,
        "unreadable": sorted(sampler.unreadable), "samples": samples,
    })
    if metrics:
        figures["metrics"] = {
            "worker_crashes": metric_sum(metrics, "kjit_worker_crashes_total", {}),
            "worker_starts": metric_sum(metrics, "kjit_worker_starts_total", {}),
            "worker_kills_bound": metric_sum(metrics, "kjit_worker_kills_total", {"cause": "bound"}),
            "worker_kills_timeout": metric_sum(metrics, "kjit_worker_kills_total", {"cause": "timeout"}),
            "job_bounds": metric_sum(metrics, "kjit_compile_job_bounds_total", {}),
            "compiles": metric_sum(metrics, "kjit_compiles_total", {}),
        }
    # Over time, before any check: a failure still shows them.
    for line in endurance_table(samples):
        log("endurance: " + line)
    log(f"endurance: {stream.answered} answered, {len(stream.failures)} failed; the Triton jobs' CPU {triton_cpu:.1f} s "
        f"in {len(interpreter_pids)} interpreter(s), {one_interpreter:.1f} s through one; worker pids "
        f"{len(worker_pids)} for a pool of {ENDURANCE_WORKERS}; metrics {figures.get('metrics')}")
    if sampler.unreadable:
        ctx.notes.append(f"endurance: /proc/PID/fd of {', '.join(sorted(sampler.unreadable))} could not be read; "
                         "their open files are not counted")

    expect(not stream.failures, f"endurance: {len(stream.failures)} of {stream.answered} requests failed:\n"
                                + "\n".join(stream.failures[:8]) + f"\nkjitd's log:\n{d.log_tail()}")
    for kind in ("cuda", "ptx") + (("triton",) if python else ()):
        expect(counts[kind]["ok"] > 0, f"endurance: no {kind} request was answered in {stream_seconds:.0f} s")
    expect(sum(c["hits"] for c in counts.values()) > 0, "endurance: no repeat was answered")
    expect(not strays, f"endurance: processes left under kjitd's workers after the stream: {strays}")
    expect(not unowned, f"endurance: directories under kjitd's TMPDIR that no worker works in, 20 s after the "
                        f"stream: {unowned}")
    if metrics:
        m = figures["metrics"]
        expect(not m["worker_crashes"], f"endurance: {m['worker_crashes']} worker crash(es) counted in /metrics")
        expect(not m["worker_kills_bound"] and not m["worker_kills_timeout"] and not m["job_bounds"],
               f"endurance: compiles stopped by a bound: {m}")

    if python:
        # A Triton refusal is right only where Triton itself fails too.
        expect(len(stream.refused) <= 10, f"endurance: {len(stream.refused)} Triton variants refused as invalid "
                                          f"(triton_variants.py should leave them out): {figures['triton_refused'][:3]}")
        for request, message in stream.refused:
            ref = os.path.join(work, "reference", request.label)
            options = [f"--option={a}" for a in request.args[3::2]]
            r = subprocess.run([python, os.path.join(REPO, "tests", "triton", "reference_compile.py"), request.path,
                                "--target", request.args[1], *options, "--out", ref],
                               capture_output=True, text=True, timeout=300)
            expect(r.returncode != 0, f"endurance: kjitd refused {request.text()} as invalid, but triton.compile "
                                      f"compiles it: {message[:500]}")
            ctx.notes.append(f"endurance: {request.text()} refused as invalid argument, as triton.compile fails on it")
        expect(stream.triton_compiled > 0, "endurance: no Triton kernel was compiled")
        expect(triton_cpu >= ENDURANCE_CPU_FACTOR * ENDURANCE_CPU_SECONDS,
               f"endurance: the Triton jobs used {triton_cpu:.1f} s of CPU in all, not the "
               f"{ENDURANCE_CPU_FACTOR * ENDURANCE_CPU_SECONDS} s ({ENDURANCE_CPU_FACTOR}x one job's bound) the "
               f"scenario needs to show: run it longer (--duration)")
        expect(one_interpreter > ENDURANCE_CPU_SECONDS,
               f"endurance: no one Triton interpreter's jobs used more CPU than one job's bound "
               f"({one_interpreter:.1f} s at most, of {triton_cpu:.1f} s in {len(interpreter_pids)} interpreters)")
    expect(not flat_failures, "endurance: " + "; ".join(flat_failures[:6]))
    d.stop()

    # The same requests, asked of a daemon that never compiled anything else.
    rng = random.Random(ctx.seed * 11 + 5)
    by_kind = {k: [r for r in stream.originals if r.kind == k] for k in ("triton", "cuda", "ptx")}
    sample = list(by_kind["triton"]) if len(by_kind["triton"]) <= ENDURANCE_SAMPLE_TRITON else \
        rng.sample(by_kind["triton"], ENDURANCE_SAMPLE_TRITON)
    for kind in ("cuda", "ptx"):
        sample += rng.sample(by_kind[kind], min(ENDURANCE_SAMPLE_OTHER, len(by_kind[kind])))
    rest = [r for r in stream.originals if r not in sample]
    if len(sample) < ENDURANCE_SAMPLE_MIN:
        sample += rng.sample(rest, min(len(rest), ENDURANCE_SAMPLE_MIN - len(sample)))
    fresh = Daemon(ctx, "endurance-fresh", extra[:-2] if metrics_port else extra).start()
    mismatches = []
    queue = list(sample)
    qlock = threading.Lock()

    def ask_fresh():
        while True:
            with qlock:
                if not queue:
                    return
                request = queue.pop()
            out = os.path.join(work, "out", f"fresh-{id(request)}.bin")
            result = kjit_compile(ctx, fresh.socket, request, out)
            if "error" in result:
                mismatches.append(f"{request.text()}: the fresh daemon: {result['error']}")
            elif not same_bytes(out, request.first["out"]):
                mismatches.append(f"{request.text()}: {os.path.getsize(out)} bytes from the fresh daemon differ from "
                                  f"the {os.path.getsize(request.first['out'])} the long-lived one gave")
            elif result["answer"].get("key") != request.first["key"]:
                mismatches.append(f"{request.text()}: key {result['answer'].get('key')} from the fresh daemon, "
                                  f"{request.first['key']} from the long-lived one")

    began = time.monotonic()
    askers = [threading.Thread(target=ask_fresh, daemon=True) for _ in range(2)]
    for th in askers:
        th.start()
    for th in askers:
        th.join()
    figures["fresh"] = {"asked": len(sample), "by_kind": {k: sum(1 for r in sample if r.kind == k)
                                                          for k in ("triton", "cuda", "ptx")},
                        "mismatches": mismatches[:20], "seconds": time.monotonic() - began}
    log(f"endurance: a fresh kjitd asked {len(sample)} of the requests ({figures['fresh']['by_kind']}): "
        f"{len(mismatches)} differ")
    expect(len(sample) >= min(ENDURANCE_SAMPLE_MIN, len(stream.originals)),
           f"endurance: only {len(sample)} requests to compare")
    expect(not mismatches, "endurance: answers differ from a fresh daemon's:\n" + "\n".join(mismatches[:8]))
    fresh.stop()
    return figures


SCENARIOS = {
    "load": scenario_load,
    "worker_kill": scenario_worker_kill,
    "daemon_kill": scenario_daemon_kill,
    "redis": scenario_redis,
    "full_disk": scenario_full_disk,
    "endurance": scenario_endurance,
}


# --- the report ------------------------------------------------------------------

def ms(kind):
    if not kind or not kind.get("requests"):
        return "-"
    return f"{kind['p50_ms']:.1f}/{kind['p99_ms']:.0f}"


def errors_text(kinds):
    parts = []
    for name in ("hit", "miss", "bad"):
        errors = (kinds or {}).get(name, {}).get("errors") or {}
        if errors:
            parts.append(name + ":" + ",".join(f"{c}={n}" for c, n in sorted(errors.items())))
    return " ".join(parts) or "-"


def print_table(report):
    rows = [("scenario", "result", "s", "rps", "hit p50/p99 ms", "miss p50/p99", "bad p50/p99", "errors by kind",
             "kjitd peak RSS", "worker peak RSS", "restarts")]
    for name, s in report["scenarios"].items():
        f = s.get("figures", {})
        kinds = f.get("kinds")
        if name == "redis" and "down" in f:
            kinds = f["down"]["kinds"]
        if name == "daemon_kill" and f.get("rounds"):
            kinds = None
        rows.append((
            name, s["result"].split(":")[0], f"{s['seconds']:.0f}",
            f"{f['rps']:.0f}" if "rps" in f else (f"{f['down']['rps']:.0f}" if "down" in f else "-"),
            ms((kinds or {}).get("hit")), ms((kinds or {}).get("miss")), ms((kinds or {}).get("bad")),
            errors_text(kinds) if kinds else (f"code {f['code']}" if "code" in f else "-"),
            f"{f['kjitd_peak_rss'] / MiB:.0f} MiB" if "kjitd_peak_rss" in f else "-",
            f"{f['worker_peak_rss'] / MiB:.0f} MiB" if "worker_peak_rss" in f else "-",
            str(f["worker_restarts"]) if "worker_restarts" in f else "-",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    load = report["scenarios"].get("load", {}).get("figures", {})
    if load:
        print(f"load: {load['requests']} requests in {load['seconds']:.1f} s with {report['clients']} clients; "
              f"hit burst {load.get('hit_burst_rps') or 0:.0f} hits/s; kjitd RSS {load['kjitd_rss_start'] / MiB:.0f} "
              f"MiB at start, peak {load['kjitd_peak_rss'] / MiB:.0f} MiB (bound {load['kjitd_rss_bound'] / MiB:.0f}), "
              f"anon {load['kjitd_anon_first_half'] / MiB:.0f} -> {load['kjitd_anon_second_half'] / MiB:.0f} MiB; "
              f"workers: {load['worker_pids_seen']} pids for a pool of {load['pool_size']}, all together peak "
              f"{load['workers_peak_rss_together'] / MiB:.0f} MiB")
    worker = report["scenarios"].get("worker_kill", {}).get("figures", {})
    if "code" in worker:
        print(f"worker_kill: worker {worker['killed_worker']} killed {worker['killed_after_s']:.1f} s into its "
              f"compile; answered {worker['code']} after {worker['answered_after_ms']:.0f} ms: "
              f"{worker['message'][:160]}")
    for i, r in enumerate(report["scenarios"].get("daemon_kill", {}).get("figures", {}).get("rounds", [])):
        print(f"daemon_kill {i + 1}: killed with {r['answered_before_kill']} answered of {r['misses_issued']} issued; "
              f"{r['temp_files_after_kill']} temp file(s) left; verify checked {r['verify_checked']}, removed "
              f"{r['verify_removed']}; {r['read_back_from_disk']} of {r['listed']} entries read back from disk")
    redis = report["scenarios"].get("redis", {}).get("figures", {})
    if "restarted" in redis:
        reached = redis["restarted"]["reached_redis_after_s"]
        print(f"redis: up {redis['up']['rps']:.0f} req/s, {redis['up']['redis_puts']} puts; killed "
              f"{redis['down']['rps']:.0f} req/s, {redis['down']['redis_failures']} Redis failures counted; "
              f"restarted: new entries in Redis after {reached or 0:.1f} s (dbsize {redis['restarted']['dbsize']})")
    disk = report["scenarios"].get("full_disk", {}).get("figures", {})
    if "disk_errors" in disk:
        print(f"full_disk ({disk['mode']}): {disk['kinds']['miss']['ok']} compiles answered, disk tier errors "
              f"{disk['disk_errors']} in `kjit cache stats`, "
              f"kjit_cache_errors_total{{tier=\"disk\"}} {disk.get('kjit_cache_errors_total_disk')}")
    endurance = report["scenarios"].get("endurance", {}).get("figures", {})
    if endurance.get("samples"):
        e = endurance
        kinds = ", ".join(f"{k} {c['ok']} ({c['hits']} hits)" for k, c in e["by_kind"].items())
        print(f"endurance: {e['requests']} requests in {e['seconds']:.0f} s from {e['clients']} clients, "
              f"{e['failed']} failed: {kinds}; Triton: "
              + (f"{e['triton_compiled']} kernels compiled, their jobs' CPU {e['triton_jobs_cpu_s']:.1f} s in all "
                 f"({e['triton_jobs_cpu_one_interpreter_s']:.1f} s through one interpreter) under a "
                 f"{e['compile_cpu_seconds']} s bound per job" if e["triton"] else "skipped"))
        print(f"endurance: workers {e['worker_pids_seen']} pids for a pool of {e['pool_size']}, Triton interpreters "
              f"{e['interpreter_pids_seen']}; peak RSS kjitd {e['kjitd_peak_rss'] / MiB:.0f} MiB, a worker "
              f"{e['worker_peak_rss'] / MiB:.0f} MiB, an interpreter {e['interpreter_peak_rss'] / MiB:.0f} MiB; "
              f"fresh kjitd: {e.get('fresh', {}).get('asked', 0)} asked, "
              f"{len(e.get('fresh', {}).get('mismatches', []))} differ")
        for name in ("kjitd RSS", "kjitd open files", "kjitd threads",
                     "directories under kjitd's TMPDIR no worker works in"):
            f = e["flat"].get(name)
            if f:
                scale, unit = (MiB, " MiB") if "RSS" in name else (1, "")
                print(f"endurance: {name}: peak {f['second_third_peak'] / scale:.1f}{unit} in the second third, "
                      f"{f['last_third_peak'] / scale:.1f}{unit} in the last")
        for line in endurance_table(e["samples"]):
            print("  " + line)
    if report.get("asan"):
        driver = "the load driver too" if report["driver_asan"] else "not the load driver"
        print(f"kjitd and its workers built with AddressSanitizer ({driver}): load {report['load_seconds']:.0f} s, "
              f"{report['kill_rounds']} kill round(s)")
    for name, s in report["scenarios"].items():
        if s["result"] != "pass":
            print(f"{name}: {s['result']}")
    for note in report["notes"]:
        print(f"note: {note}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kjitd", required=True)
    parser.add_argument("--kjit", required=True)
    parser.add_argument("--driver", required=True)
    parser.add_argument("--report", help="write the figures here as JSON")
    parser.add_argument("--only", "--scenario", dest="only",
                        help="comma-separated scenarios: " + ",".join(SCENARIOS))
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--load-seconds", type=float,
                        help=f"the load scenario's length (default 30, {ASAN_LOAD_SECONDS} under ASan)")
    parser.add_argument("--kill-rounds", type=int, default=3)
    parser.add_argument("--duration", type=float,
                        help=f"the endurance scenario's stream, in s (default {ENDURANCE_SECONDS}, "
                             f"{ASAN_ENDURANCE_SECONDS} under ASan)")
    parser.add_argument("--sample-period", type=float,
                        help="the endurance scenario's sampling period, in s (default: duration / 180, at least 2)")
    parser.add_argument("--endurance-clients", type=int, default=ENDURANCE_CLIENTS,
                        help="the endurance scenario's clients (threads running kjit compile)")
    parser.add_argument("--kjitd-arg", action="append", default=[],
                        help="one more argument for the endurance scenario's daemons (e.g. --kjitd-arg=--sandbox=off)")
    parser.add_argument("--slow-depth", type=int, default=20)
    parser.add_argument("--fs-mode", choices=("auto", "mount", "unshare"), default="auto",
                        help="how full_disk mounts its tmpfs")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, caches)")
    parser.add_argument("--force", action="store_true", help="run without KJIT_LOAD_TESTS=1")
    args = parser.parse_args()
    if os.environ.get("KJIT_LOAD_TESTS") != "1" and not args.force:
        print("SKIP: the load tests run with KJIT_LOAD_TESTS=1 (`make test-load`)")
        return SKIP
    for tool in (args.kjitd, args.kjit, args.driver):
        if not os.path.exists(tool):
            print(f"FAIL: {tool} is not built")
            return 1

    names = args.only.split(",") if args.only else list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}")
    try:
        ctx = Context(args)
    except (Failure, OSError) as e:
        print(f"FAIL: {e}")
        return 1
    if args.load_seconds is None:
        args.load_seconds = ASAN_LOAD_SECONDS if ctx.asan else 30
    report = {"seed": args.seed, "clients": args.clients, "asan": ctx.asan,
              "driver_asan": ctx.asan and built_with_asan(ctx.driver), "load_seconds": args.load_seconds,
              "kill_rounds": args.kill_rounds, "scenarios": {}, "notes": ctx.notes}
    log(f"seed {args.seed} (rerun with --seed {args.seed}); working in {ctx.tmp}")
    if ctx.asan:
        log(f"kjitd is an AddressSanitizer build: ASAN_OPTIONS={ctx.env['ASAN_OPTIONS']} "
            f"LSAN_OPTIONS={ctx.env['LSAN_OPTIONS']} UBSAN_OPTIONS={ctx.env['UBSAN_OPTIONS']}")
    began = time.monotonic()
    try:
        for name in names:
            log(f"{name}: starting")
            t0 = time.monotonic()
            entry = {"result": "pass", "figures": {}}
            try:
                entry["figures"] = SCENARIOS[name](ctx, args)
            except Failure as e:
                entry["result"] = f"FAIL: {e}"
                entry["figures"] = getattr(e, "figures", None) or {}
            except Skip as e:
                entry["result"] = f"SKIP: {e}"
            except Exception as e:  # a scenario's own bug is still a failure, with its cause
                entry["result"] = f"FAIL: {type(e).__name__}: {e}"
            finally:
                for d in ctx.daemons:
                    d.stop(quiet=True)
                # Every daemon of the scenario, the killed ones and those a
                # failure left running too: a report fails it whatever else did.
                reports = []
                for d in ctx.daemons:
                    try:
                        d.check_log()
                    except Failure as e:
                        reports.append(str(e))
                reports = [r for r in reports if r not in entry["result"]]  # the scenario's own stop() saw it
                if reports:
                    before = entry["result"].splitlines()[0]
                    earlier = "" if before == "pass" else f"\n(the scenario had failed too: {before})"
                    entry["result"] = "FAIL: " + "\n".join(reports) + earlier
                for r in ctx.redis:
                    r.stop()
                for m in ctx.mounts:
                    subprocess.run(["umount", "-l", m], capture_output=True)
                ctx.daemons, ctx.redis, ctx.mounts = [], [], []
            entry["seconds"] = time.monotonic() - t0
            report["scenarios"][name] = entry
            log(f"{name}: {entry['result'].splitlines()[0]} ({entry['seconds']:.1f} s)")
    finally:
        ctx.cleanup()
    report["seconds"] = time.monotonic() - began
    # The table goes into the report as well: ctest shows a passing test's
    # output only with -V.
    table = io.StringIO()
    with contextlib.redirect_stdout(table):
        print_table(report)
        print(f"total {report['seconds']:.0f} s")
    print()
    print(table.getvalue(), end="")
    report["table"] = table.getvalue().splitlines()
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1)
        print(f"figures in {args.report}")
    failed = [n for n, s in report["scenarios"].items() if s["result"].startswith("FAIL")]
    if failed:
        print(f"FAILED: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
