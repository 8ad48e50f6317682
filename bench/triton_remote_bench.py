"""Triton processes compiling through kjitd (KJIT_TRITON=compile) against the
same processes compiling locally, in one run, as ratios within it.

Each process (bench/triton_remote_child.py) compiles the corpus of
tests/triton/kernels.py from Python, as a model's process does at start;
kjitd's default Triton build is the same Triton as the processes'. Rows:

- cold:   one process, empty caches everywhere, through a fresh kjitd,
          against the same process compiling locally: wall and the
          process's own CPU (with its children: Triton's ptxas);
- hit:    a second process with an empty local cache (every kernel in kjitd)
          against Triton's own local-cache hit (its directory filled), and
          the same with Triton's build hash not kept (KJIT_TRITON_KEY_MEMO=0);
- fleet:  4 and 8 processes started together through a fresh kjitd: the
          compiles the daemon ran, the fleet's wall against one process alone
          compiling locally (and the floor this machine puts under it: the
          CPU the fleet and the daemon spent, over its cores), its CPU
          against the same fleet compiling locally;
- warm:   `kjit warm --target cuda:107` after the cold run on sm_90, then a
          process on sm_107: the daemon compiles nothing more;
- stop:   the daemon killed after the first kernel: every kernel still builds.

    build/python-venv/bin/python bench/triton_remote_bench.py [--reps N]

Needs build/bin/kjitd and kjit, the kjit package and triton in the running
interpreter (client/python/run-tests.sh makes build/python-venv), and
.deps/triton-builds (scripts/install-deps.sh).
"""

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KJITD = REPO / "build" / "bin" / "kjitd"
KJIT = REPO / "build" / "bin" / "kjit"
CHILD = REPO / "bench" / "triton_remote_child.py"
READY_SECONDS = 180


class Daemon:
    def __init__(self, root: Path):
        root.mkdir(parents=True)
        self.socket = str(root / "s.sock")
        self.log = open(root / "kjitd.log", "wb")
        self.process = subprocess.Popen([str(KJITD), "--socket", self.socket, "--cache-dir", str(root / "cache"),
                                         "--log-level", "warn"], stdout=self.log, stderr=subprocess.STDOUT)
        # Serving, and its Triton worker started and warm (triton.prestart):
        # every worker running is ready and one of them is a Triton worker.
        deadline = time.monotonic() + READY_SECONDS
        while True:
            health = subprocess.run([str(KJIT), "-s", self.socket, "health", "--verbose"], capture_output=True,
                                    text=True)
            lines = health.stdout.splitlines()
            workers = next((line for line in lines if line.startswith("workers:")), "")
            classes = next((line for line in lines if "by class:" in line), "")
            parts = workers.split()
            if health.returncode == 0 and "triton" in classes and "running" in parts:
                running = parts[parts.index("running") - 1]
                if "(%s ready," % running in workers:
                    return
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("kjitd did not get ready (see %s)" % self.log.name)
            time.sleep(0.2)

    def cpu(self) -> float:
        """CPU seconds of kjitd and every process under it (its workers, and
        what they ran and waited for, such as ptxas), from /proc."""
        tick = os.sysconf("SC_CLK_TCK")
        children = {}
        stats = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:  # gone since the listing
                continue
            pid = int(entry)
            children.setdefault(int(fields[1]), []).append(pid)
            stats[pid] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
        total, todo = 0.0, [self.process.pid]
        while todo:
            pid = todo.pop()
            total += stats.get(pid, 0.0)
            todo += children.get(pid, [])
        return total

    def compiles(self) -> int:
        import kjit  # noqa: PLC0415
        with kjit.Client(self.socket) as client:
            return client.stats().compiles

    def stop(self, sig=signal.SIGTERM):
        if self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=60)
        self.log.close()


def children_cpu() -> float:
    """CPU seconds of this script's children that have exited, with theirs:
    a Triton process's whole life, its exit (and uploads drained there) and
    ptxas included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def start_child(target: str, cache_dir: Path, env: dict):
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITON_", "KJIT_"))}
    child_env.update(TRITON_CACHE_DIR=str(cache_dir), TRITON_DEFAULT_FP_FUSION="1", **env)
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, str(CHILD), target], env=child_env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    return process, started


def finish_child(started) -> dict:
    process, start = started
    out, err = process.communicate(timeout=1800)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit("a Triton process failed:\n" + err[-3000:])
    result = json.loads(out)
    result["wall"] = wall
    return result


def child(target: str, cache_dir: Path, env: dict) -> dict:
    before = children_cpu()
    result = finish_child(start_child(target, cache_dir, env))
    result["cpu"] = children_cpu() - before  # the whole process, not what it counted before exiting
    return result


def fleet(n: int, target: str, root: Path, env: dict) -> dict:
    before = children_cpu()
    start = time.perf_counter()
    started = [start_child(target, root / ("p%d" % i), env) for i in range(n)]
    results = [finish_child(s) for s in started]
    return {"wall": time.perf_counter() - start, "cpu": children_cpu() - before, "results": results}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2, help="repetitions of the cold and hit rows (medians)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kjit-triton-remote-"))
    xdg = work / "xdg"  # the processes' own cache: libtriton.so's digest, once
    daemons = []
    counter = [0]

    def fresh(tag):
        counter[0] += 1
        return work / ("%s-%d" % (tag, counter[0]))

    def remote_env(daemon):
        return {"KJIT_SOCKET": daemon.socket, "KJIT_TRITON": "compile", "XDG_CACHE_HOME": str(xdg)}

    def new_daemon():
        daemon = Daemon(fresh("kjitd"))
        daemons.append(daemon)
        return daemon

    try:
        # What a process through kjitd works out once per install and keeps
        # (the digest of this Triton's libtriton.so, and Triton's build hash,
        # which a process without kjit works out at every start): the first
        # process after an install pays it, as one without kjit does; not
        # part of any row.
        subprocess.run([sys.executable, "-c", "from kjit import _triton_remote as r; r._this_build(); r.install(); "
                        "import triton.runtime.cache as c; c.triton_key()"],
                       env=dict(os.environ, XDG_CACHE_HOME=str(xdg)), check=True)

        rows = []
        cold_local, cold_remote, last = [], [], None
        for _ in range(args.reps):
            cold_local.append(child("cuda:90", fresh("local"), {}))
            last = new_daemon()
            before = last.compiles()
            cold_remote.append(child("cuda:90", fresh("remote"), remote_env(last)))
            compiled = last.compiles() - before
        kernels = cold_local[0]["kernels"]
        if cold_remote[-1]["failed"] != cold_local[-1]["failed"]:
            raise SystemExit("local and remote builds differ: %s / %s" % (cold_local[-1]["failed"],
                                                                          cold_remote[-1]["failed"]))
        local_wall = statistics.median(r["wall"] for r in cold_local)
        local_cpu = statistics.median(r["cpu"] for r in cold_local)
        remote_wall = statistics.median(r["wall"] for r in cold_remote)
        remote_cpu = statistics.median(r["cpu"] for r in cold_remote)
        rows.append(("cold: one process, through kjitd / local (wall)", remote_wall, local_wall, "<= 1.1"))
        rows.append(("cold: the process's CPU, through kjitd / local", remote_cpu, local_cpu, "<= 0.4"))

        own_dir = fresh("own")
        child("cuda:90", own_dir, {})  # fills Triton's own directory
        own = [child("cuda:90", own_dir, {}) for _ in range(args.reps + 1)]
        second = [child("cuda:90", fresh("second"), remote_env(last)) for _ in range(args.reps + 1)]
        rows.append(("hit: empty local cache via kjitd / Triton's own hit", statistics.median(r["wall"] for r in second),
                     statistics.median(r["wall"] for r in own), "<= 1.05"))
        # The same without Triton's build hash kept: what the hit costs
        # beyond the hash every Triton process works out at its start.
        unkept = [child("cuda:90", fresh("second"), dict(remote_env(last), KJIT_TRITON_KEY_MEMO="0"))
                  for _ in range(args.reps + 1)]
        rows.append(("  the same, the build hash not kept (KJIT_TRITON_KEY_MEMO=0)",
                     statistics.median(r["wall"] for r in unkept), statistics.median(r["wall"] for r in own), ""))

        fleets, floors = {}, {}
        cores = len(os.sched_getaffinity(0))
        for n in (4, 8):
            daemon = new_daemon()
            before, daemon_cpu = daemon.compiles(), daemon.cpu()
            through = fleet(n, "cuda:90", fresh("fleet"), remote_env(daemon))
            fleets[n] = daemon.compiles() - before
            # The work the fleet and the daemon did, spread over every core
            # with no wait: no schedule finishes sooner on this machine.
            floors[n] = (through["cpu"] + daemon.cpu() - daemon_cpu) / cores
            alone = fleet(n, "cuda:90", fresh("fleet-local"), {})
            rows.append(("fleet of %d: wall through kjitd / one process local" % n, through["wall"], local_wall,
                         "<= 1.3"))
            rows.append(("  its floor: (fleet + daemon CPU) / %d cores / local" % cores, floors[n], local_wall, ""))
            rows.append(("fleet of %d: CPU through kjitd / the fleet local" % n, through["cpu"], alone["cpu"],
                         "<= 0.35"))

        # Ready before asked: the recipes the cold run recorded (sm_90), built for sm_107.
        warm = subprocess.run([str(KJIT), "-s", last.socket, "warm", "--target", "cuda:107", "--json"],
                              capture_output=True, text=True, timeout=1800)
        before = last.compiles()
        on_107 = child("cuda:107", fresh("sm107"), remote_env(last))
        after_warm = last.compiles() - before
        local_107 = child("cuda:107", fresh("sm107-local"), {})
        rows.append(("sm_107 after kjit warm: wall through kjitd / local", on_107["wall"], local_107["wall"], ""))

        # The daemon killed after the process's first kernel.
        daemon = new_daemon()
        process, start = start_child("cuda:90", fresh("stop"), remote_env(daemon))
        first = process.stderr.readline()
        daemon.stop(signal.SIGKILL)
        out, err = process.communicate(timeout=1800)
        stopped = json.loads(out) if process.returncode == 0 else None

        print("Triton through kjitd (KJIT_TRITON=compile), %d kernels of tests/triton/kernels.py, cuda:90, "
              "%d rep(s):" % (kernels, args.reps))
        print("%-58s %9s %9s %7s  %s" % ("", "kjit", "baseline", "ratio", "target"))
        for what, mine, base, goal in rows:
            print("%-58s %9.2f %9.2f %7.2f  %s" % (what, mine, base, mine / base, goal))
        print("compiles on the daemon: cold process %d for %d kernels; fleets of 4 and 8: %d and %d" % (
            compiled, kernels, fleets[4], fleets[8]))
        print("remote compile in the cold process: %s" % cold_remote[-1]["remote"])
        warmed = json.loads(warm.stdout) if warm.returncode == 0 and warm.stdout.strip() else warm.stderr.strip()
        print("kjit warm --target cuda:107: %s" % warmed)
        print("the sm_107 process: %s; the daemon compiled %d more; failed: %s" % (on_107["remote"], after_warm,
                                                                                 on_107["failed"]))
        if stopped is None:
            print("daemon killed after %r: the process FAILED:\n%s" % (first.strip(), err[-2000:]))
        else:
            print("daemon killed after %r: %d kernels, failed %s, %s" % (
                first.strip(), stopped["kernels"], stopped["failed"] or "none", stopped["remote"]))
    finally:
        for daemon in daemons:
            daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
