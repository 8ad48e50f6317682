#!/usr/bin/env python3
"""One compile per kernel across a fleet of clients that compile for
themselves: cold fleets of Triton processes (kjit.triton, claims on and off)
and of cuda.core processes (kjit.cuda_core), on one node, as ratios measured
in one run. Run through bench/claims_bench.sh.

Triton: every process compiles the same 12 kernels for sm_80, sm_90 and
sm_100 (36 compiles, bench/triton_fleet_child.py) with an empty cache
directory and a namespace no earlier run used. Triton's assembler is a
wrapper that logs each run, so the figures count what ran:

  alone          one process, claims on (the baseline of the fleet's wall time)
  fleet N        N processes started together, claims on
  fleet N, off   the same with KJIT_TRITON_CLAIM_WAIT=0 (the baseline of CPU)
  redis          4 processes, two on each of two daemons sharing a Redis tier
  holder killed  4 processes; the first, holding the first kernel's claim
                 while the others wait, is SIGKILLed inside its assembler
  holder raises  the same, its assembler failing instead (Triton raises)

For the faults, "delay" is the time from the fault to the first assembler
run of another process: how long the waiters were held up past it.

cuda.core: N processes compile the same 8 programs (sm_90) through
kjit.cuda_core.ProgramCache (client/python/tests/cuda_core_child.py): NVRTC
runs per program, claims on and off.

CPU is user + system of the processes and everything they started
(the assembler), plus the daemons' own.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRITON_CHILD = REPO / "bench" / "triton_fleet_child.py"
CUDA_CORE_CHILD = REPO / "client" / "python" / "tests" / "cuda_core_child.py"
KERNELS = 36  # 12 kernels x 3 targets
PROGRAMS = 8
DEADLINE = 600.0


def eventually(condition, seconds=60.0):
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            raise RuntimeError("not within %.0f s" % seconds)
        time.sleep(0.02)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_of(pid):
    """User + system seconds of a live process (its own, not its children's)."""
    fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Daemon:
    def __init__(self, kjitd, root, redis=None):
        self.root = Path(root)
        self.root.mkdir(parents=True)
        self.socket = str(self.root / "k.sock")
        args = [kjitd, "--socket", self.socket, "--cache-dir", str(self.root / "cache"), "--log-level", "warn"]
        if redis:
            args += ["--redis", redis]
        env = dict(os.environ, XDG_RUNTIME_DIR=str(self.root), XDG_CACHE_HOME=str(self.root / "xdg"))
        self.log = open(self.root / "kjitd.log", "wb")
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        import kjit
        eventually(lambda: self._serving(kjit))

    def _serving(self, kjit):
        if self.process.poll() is not None:
            raise RuntimeError("kjitd exited: %s" % (self.root / "kjitd.log").read_text()[-2000:])
        try:
            with kjit.Client(self.socket, timeout=5) as client:
                return client.health() == "SERVING"
        except kjit.KjitError:
            return False

    def blob_stats(self):
        import kjit
        with kjit.Client(self.socket) as client:
            return client.stats().blobs

    def cpu(self):
        return cpu_of(self.process.pid)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


class Bench:
    def __init__(self, args, work):
        self.args = args
        self.work = Path(work)
        self.runs = 0
        self.real_ptxas = {}
        import triton
        bin_dir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
        for tool in ("ptxas", "ptxas-blackwell"):
            self.real_ptxas[tool] = bin_dir / tool

    def _wrappers(self, directory, log, fault=None):
        """ptxas wrappers logging "<unix time> <args>" per assembly; with a
        fault, the first assembly marks `fault/marker`, waits for
        `fault/go`, then fails (raise) or sleeps until killed (kill)."""
        directory.mkdir(parents=True)
        env = {}
        for tool, knob in (("ptxas", "TRITON_PTXAS_PATH"), ("ptxas-blackwell", "TRITON_PTXAS_BLACKWELL_PATH")):
            script = ['#!/bin/sh', 'if [ "$1" = "--version" ]; then exec "%s" "$@"; fi' % self.real_ptxas[tool]]
            if fault:
                mode, marker, go = fault
                script += ['if [ ! -e "%s" ]; then' % marker,
                           '  date +%%s.%%N > "%s"' % marker,
                           '  i=0; while [ ! -e "%s" ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i+1)); done' % go,
                           '  %s' % ("exit 1" if mode == "raise" else "sleep 600"),
                           'fi']
            script += ['printf "%%s %%s\\n" "$(date +%%s.%%N)" "$*" >> "%s"' % log,
                       'exec "%s" "$@"' % self.real_ptxas[tool]]
            wrapper = directory / tool
            wrapper.write_text("\n".join(script) + "\n")
            wrapper.chmod(0o755)
            env[knob] = str(wrapper)
        return env

    def start_triton(self, name, daemon, namespace, claims, fault=None):
        base = self.work / name
        base.mkdir(parents=True)
        log = base / "ptxas.log"
        env = dict(os.environ, TRITON_CACHE_DIR=str(base / "cache"), TRITON_HOME=str(base / "home"),
                   TRITON_CACHE_MANAGER="kjit.triton:KjitCacheManager", KJIT_SOCKET=daemon.socket,
                   KJIT_TRITON_NAMESPACE=namespace, KJIT_TRITON_CLAIM_WAIT="600" if claims else "0",
                   **self._wrappers(base / "bin", log, fault))
        env.pop("KJIT_ADDRESS", None)
        with open(base / "stderr", "wb") as stderr:
            process = subprocess.Popen([sys.executable, str(TRITON_CHILD)], env=env, stdout=subprocess.PIPE,
                                       stderr=stderr, start_new_session=True)
        return {"process": process, "log": log, "name": name, "stderr": base / "stderr"}

    @staticmethod
    def finish(child, killed=False):
        """Waits for a child (with the CPU of everything it started) and reads its answer."""
        process = child["process"]
        stdout = process.stdout.read()  # stderr went to a file: no pipe to fill meanwhile
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        child["cpu"] = usage.ru_utime + usage.ru_stime
        if not killed:
            if process.returncode != 0:
                raise RuntimeError("%s failed: %s" % (child["name"], child["stderr"].read_text()[-3000:]))
            # The answer is the last line: Triton may print before it.
            child.update(json.loads(stdout.decode().strip().splitlines()[-1]))
        child["assembles"] = []
        if child["log"].exists():
            for line in child["log"].read_text().splitlines():
                stamp, _, argv = line.partition(" ")
                child["assembles"].append((float(stamp), argv))
        return child

    def namespace(self, what):
        self.runs += 1
        return "bench-%s-%d-%d" % (what, os.getpid(), self.runs)

    def triton_fleet(self, n, daemons, claims):
        namespace = self.namespace("triton")
        cpu0 = sum(d.cpu() for d in daemons)
        start = time.monotonic()
        children = [self.start_triton("t%d-%d" % (self.runs, i), daemons[i % len(daemons)], namespace, claims)
                    for i in range(n)]
        done = [self.finish(c) for c in children]
        wall = time.monotonic() - start
        cpu = sum(c["cpu"] for c in done) + sum(d.cpu() for d in daemons) - cpu0
        assembles = sum(len(c["assembles"]) for c in done)
        same = all(c["cubins"] == done[0]["cubins"] and len(c["cubins"]) == KERNELS for c in done)
        return {"wall": wall, "cpu": cpu, "assembles": assembles, "same": same}

    def triton_fault(self, daemon, mode, n=4):
        namespace = self.namespace("fault")
        fault_dir = self.work / ("fault-%d" % self.runs)
        fault_dir.mkdir()
        marker, go = fault_dir / "marker", fault_dir / "go"
        waits0 = daemon.blob_stats().claim_waits
        start = time.monotonic()
        holder = self.start_triton("f%d-0" % self.runs, daemon, namespace, True, (mode, marker, go))
        eventually(marker.exists, DEADLINE)
        others = [self.start_triton("f%d-%d" % (self.runs, i), daemon, namespace, True) for i in range(1, n)]
        # Every other process waits on the first kernel's claim.
        eventually(lambda: daemon.blob_stats().claim_waits >= waits0 + n - 1, DEADLINE)
        fault_at = time.time()
        if mode == "kill":
            os.killpg(holder["process"].pid, signal.SIGKILL)
        else:
            go.touch()
        done = [self.finish(c) for c in others]
        self.finish(holder, killed=mode == "kill")
        wall = time.monotonic() - start
        first_after = min(stamp for c in done for stamp, _ in c["assembles"])
        assembles = sum(len(c["assembles"]) for c in done) + len(holder["assembles"])
        return {"delay": first_after - fault_at, "wall": wall, "assembles": assembles,
                "complete": all(len(c["cubins"]) == KERNELS for c in done)}

    def cuda_core_fleet(self, n, daemon, claims):
        namespace = self.namespace("cuda-core")
        env = dict(os.environ, KJIT_SOCKET=daemon.socket, KJIT_CUDA_CORE_NAMESPACE=namespace,
                   KJIT_CUDA_CORE_CLAIM_WAIT="600" if claims else "0")
        env.pop("KJIT_ADDRESS", None)
        start = time.monotonic()
        children = []
        for i in range(n):
            name = "c%d-%d" % (self.runs, i)
            stderr_path = self.work / (name + ".stderr")
            with open(stderr_path, "wb") as stderr:
                process = subprocess.Popen([sys.executable, str(CUDA_CORE_CHILD), str(PROGRAMS)], env=env,
                                           stdout=subprocess.PIPE, stderr=stderr)
            children.append({"process": process, "log": self.work / "none", "name": name, "stderr": stderr_path})
        done = [self.finish(c) for c in children]
        return {"wall": time.monotonic() - start, "cpu": sum(c["cpu"] for c in done),
                "compiles": sum(c["compiles"] for c in done)}


def progress(what, figures):
    shown = {k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()}
    print("measured %s: %s" % (what, shown), file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kjitd", default=str(REPO / "build" / "bin" / "kjitd"))
    parser.add_argument("--fleets", default="4,8", help="fleet sizes (default 4,8)")
    parser.add_argument("--reps", type=int, default=3,
                        help="runs of each Triton fleet; the table shows medians, the most assembler runs (default 3)")
    parser.add_argument("--parts", default="triton,redis,faults,cuda-core", help="what to measure (default: all)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    fleets = [int(n) for n in args.fleets.split(",")]
    parts = set(args.parts.split(","))
    load = os.getloadavg()[0]
    work = tempfile.mkdtemp(prefix="kjit-claims-bench-", dir="/tmp")
    bench = Bench(args, work)
    daemons, redis = [], None
    figures = {}
    rows = []
    try:
        daemon = Daemon(args.kjitd, Path(work) / "d0")
        daemons.append(daemon)
        bench.triton_fleet(1, [daemon], True)  # warm-up: the OS's caches, Triton's first import

        # Every configuration once per rep, in turn, so that drift on the
        # host (other work on it) hits them alike.
        configs = [("alone", 1, [daemon], True)]
        for n in fleets if "triton" in parts else []:
            configs += [("fleet%d" % n, n, [daemon], True), ("fleet%d-off" % n, n, [daemon], False)]
        if "redis" in parts and shutil.which("redis-server"):
            port = free_port()
            redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            address = "127.0.0.1:%d" % port
            pair = [Daemon(args.kjitd, Path(work) / "r0", address), Daemon(args.kjitd, Path(work) / "r1", address)]
            daemons += pair
            configs.append(("redis", 4, pair, True))
        elif "redis" in parts:
            print("redis-server is not installed: the two-daemon fleet is left out")
        runs = {name: [] for name, *_ in configs}
        for rep in range(args.reps):
            for name, n, on, claims in configs:
                runs[name].append(bench.triton_fleet(n, on, claims))
                progress("%s (rep %d)" % (name, rep + 1), runs[name][-1])
        for name, done in runs.items():
            figures[name] = {"wall": statistics.median(r["wall"] for r in done),
                             "cpu": statistics.median(r["cpu"] for r in done),
                             "assembles": max(r["assembles"] for r in done), "same": all(r["same"] for r in done),
                             "walls": [round(r["wall"], 2) for r in done]}
        alone = figures["alone"]
        rows.append(("Triton alone (1 process)", alone["assembles"], alone["wall"], 1.0, alone["cpu"], None))
        for n in fleets if "triton" in parts else []:
            on, off = figures["fleet%d" % n], figures["fleet%d-off" % n]
            rows.append(("Triton fleet of %d, claims" % n, on["assembles"], on["wall"], on["wall"] / alone["wall"],
                         on["cpu"], on["cpu"] / off["cpu"]))
            rows.append(("Triton fleet of %d, no claims" % n, off["assembles"], off["wall"],
                         off["wall"] / alone["wall"], off["cpu"], 1.0))
            if not (on["same"] and off["same"]):
                print("WARNING: fleet of %d: processes got different cubins" % n)
        if "redis" in figures:
            shared = figures["redis"]
            rows.append(("Triton fleet of 4 on 2 daemons sharing Redis, claims", shared["assembles"], shared["wall"],
                         shared["wall"] / alone["wall"], shared["cpu"], None))

        faults = {}
        for mode in ("kill", "raise") if "faults" in parts else ():
            faults[mode] = bench.triton_fault(daemon, mode)
            progress("holder " + mode, faults[mode])
        figures["faults"] = faults

        cuda = {}
        for claims in (True, False) if "cuda-core" in parts else ():
            cuda[claims] = bench.cuda_core_fleet(4, daemon, claims)
            progress("cuda.core, claims %s" % claims, cuda[claims])
        figures["cuda_core"] = {"claims" if k else "no_claims": v for k, v in cuda.items()}
    finally:
        for d in daemons:
            d.stop()
        if redis:
            redis.terminate()
            redis.wait()
        shutil.rmtree(work, ignore_errors=True)

    print("\nTriton, 12 kernels x sm_80/90/100 (%d compiles per process), cold: empty caches, a new namespace; "
          "medians of %d runs; load average at the start %.2f" % (KERNELS, args.reps, load))
    print("%-56s %10s %8s %10s %8s %10s" % ("", "assembler", "wall s", "wall/alone", "CPU s", "CPU/no claims"))
    for name, assembles, wall, ratio, cpu, cpu_ratio in rows:
        print("%-56s %10d %8.2f %9.2fx %8.1f %10s" % (name, assembles, wall, ratio, cpu,
                                                      "" if cpu_ratio is None else "%.2fx" % cpu_ratio))
    print("\nA holder's fault, fleet of 4 (the others waiting on its claim):")
    for mode, f in faults.items():
        print("  holder %-8s waiters held up %.2f s past the fault; assembler runs %d; every process got all "
              "%d: %s" % ({"kill": "SIGKILLed", "raise": "raises"}[mode], f["delay"], f["assembles"], KERNELS,
                          f["complete"]))
    print("\ncuda.core, 4 processes x %d programs (sm_90), cold:" % PROGRAMS)
    for claims in cuda:
        c = cuda[claims]
        print("  %-10s NVRTC runs per program %.2f, wall %.2f s, CPU %.1f s" % (
            "claims" if claims else "no claims", c["compiles"] / PROGRAMS, c["wall"], c["cpu"]))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
