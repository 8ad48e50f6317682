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
# plus its shadow) before it is reused, filling over the run; both bounds
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

    def start(self, deadline=90):
        argv = self.wrapper + [self.ctx.kjitd, "--socket", self.socket, "--cache-dir", self.cache_dir,
                               "--log-level", "info"] + self.prestart_off() + self.args
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
        quarantine = quarantine_bytes(ctx.env) * 9 // 8
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


SCENARIOS = {
    "load": scenario_load,
    "worker_kill": scenario_worker_kill,
    "daemon_kill": scenario_daemon_kill,
    "redis": scenario_redis,
    "full_disk": scenario_full_disk,
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
    parser.add_argument("--only", help="comma-separated scenarios: " + ",".join(SCENARIOS))
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--load-seconds", type=float,
                        help=f"the load scenario's length (default 30, {ASAN_LOAD_SECONDS} under ASan)")
    parser.add_argument("--kill-rounds", type=int, default=3)
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
