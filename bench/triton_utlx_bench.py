"""Triton 3.8 + uTLX through kjitd against the same build compiling in its
own process, measured as ratios within one run (medians over reps; the
machine is shared, so only ratios taken side by side mean anything).

miss     each uTLX TTIR of tests/triton/data/utlx (options and target from
         its corpus.json) through kjitd's triton-3.8.0 build, a miss of
         kjit's cache (the entry is removed after each rep, so the lookup
         and the store are paid as a real miss pays them), against
         triton.compile of the same file in a warm 3.8 + uTLX process with a
         new, empty Triton cache per compile. Wall time of one compile: the
         client's call against the process's triton.compile. Target <= 1.1.
process  a whole 3.8 + uTLX process (bench/triton_utlx_child.py process)
         compiling four TLX kernels from Python for cuda:90, with an empty
         Triton cache: through a warm kjitd (KJIT_TRITON=compile) that has
         them (hit: the fleet's second process) and that has not (miss: a
         new blob namespace, the daemon's entries removed), against the same
         process compiling locally. The process's own CPU, its children's
         (ptxas) included: RUSAGE_CHILDREN around it. The daemon's CPU for
         the same process is shown beside it. Target <= 0.4 for the hit.

    build/python-venv/bin/python bench/triton_utlx_bench.py [--reps N] [--process-reps N]

Needs build/bin/kjitd and kjit, the kjit package in the running interpreter
and beside the triton-3.8.0 build (client/python/run-tests.sh makes
build/python-venv and build/python-triton-3.8.0-path), and
.deps/triton-builds/triton-3.8.0 (scripts/install-deps.sh).
"""

import argparse
import hashlib
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_remote_bench import Daemon, children_cpu  # noqa: E402

import kjit  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BUILD = "triton-3.8.0"
PYTHON = REPO / ".deps" / "triton-builds" / BUILD / "bin" / "python"
CLIENT_PATH = Path(os.environ.get("KJIT_TRITON38_PATH") or REPO / "build" / "python-triton-3.8.0-path")
CHILD = REPO / "bench" / "triton_utlx_child.py"
CORPUS = REPO / "tests" / "triton" / "data" / "utlx"


def clean_env(**extra) -> dict:
    """The caller's environment without Triton's, uTLX's or kjit's variables:
    the build's .pth sets TRITON_PLUGIN_PATHS itself, as in a clean shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITON_", "UTLX_", "KJIT_"))}
    env.update(PYTHONPATH=str(CLIENT_PATH), **extra)
    return env


class LocalServer:
    """A warm 3.8 + uTLX process compiling TTIR files on request."""

    def __init__(self, work: Path):
        self.proc = subprocess.Popen([str(PYTHON), str(CHILD), "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True,
                                     env=clean_env(TRITON_HOME=str(work / "triton-home")))

    def compile(self, file: Path, target: str, options: dict) -> dict:
        self.proc.stdin.write(json.dumps({"file": str(file), "target": target, "options": options}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the local 3.8 + uTLX process died on %s" % file.name)
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def miss_rows(daemon: Daemon, work: Path, reps: int):
    """Per kernel: medians of local and kjitd wall (ms), their ratio, the
    daemon's server_ms, and whether both made the same binary."""
    corpus = json.loads((CORPUS / "corpus.json").read_text())
    files = sorted(corpus["targets"], key=lambda f: (corpus["targets"][f].startswith("hip"), f))
    local = LocalServer(work)
    rows = []
    samples = {f: {"local": [], "kjitd": [], "server": []} for f in files}
    same = {}
    try:
        with kjit.Client(daemon.socket, timeout=600) as client:

            def remote(file):
                result = client.compile(CORPUS / file, target=corpus["targets"][file], kind="triton",
                                        triton_options=corpus["kernels"][file], triton_build=BUILD)
                return result

            # Warm-up, left out: each side's first compile of each kernel
            # (the process's first-use costs, the daemon's 3.8 interpreter).
            for file in files:
                local.compile(CORPUS / file, corpus["targets"][file], corpus["kernels"][file])
                client.cache_remove(remote(file).key)
            for rep in range(reps):
                for i, file in enumerate(files):
                    order = ("local", "kjitd") if (rep + i) % 2 == 0 else ("kjitd", "local")
                    for side in order:
                        if side == "local":
                            answer = local.compile(CORPUS / file, corpus["targets"][file], corpus["kernels"][file])
                            samples[file]["local"].append(answer["ms"])
                            local_binary = answer["binary_sha256"]
                        else:
                            start = time.perf_counter()
                            result = remote(file)
                            samples[file]["kjitd"].append((time.perf_counter() - start) * 1000)
                            samples[file]["server"].append(result.server_ms)
                            if result.cache != "compiled":
                                raise SystemExit("%s: kjitd answered from %r, not a miss" % (file, result.cache))
                            client.cache_remove(result.key)
                            remote_binary = hashlib.sha256(result.artifact).hexdigest()
                    same[file] = local_binary == remote_binary
    finally:
        local.close()
    for file in files:
        s = samples[file]
        loc, rem = statistics.median(s["local"]), statistics.median(s["kjitd"])
        rows.append((file[:-len(".ttir")], corpus["targets"][file], loc, rem, rem / loc, statistics.median(s["server"]),
                     same[file]))
    return rows


def run_process(work: Path, tag: str, env: dict) -> dict:
    """One child process with an empty Triton cache: its wall, its CPU and
    its children's (RUSAGE_CHILDREN), and what it printed."""
    cache = Path(tempfile.mkdtemp(prefix=tag + "-", dir=work))
    before = children_cpu()
    start = time.perf_counter()
    done = subprocess.run([str(PYTHON), str(CHILD), "process"], capture_output=True, text=True, timeout=1800,
                          env=clean_env(TRITON_CACHE_DIR=str(cache), TRITON_HOME=str(work / "triton-home"), **env))
    wall = time.perf_counter() - start
    cpu = children_cpu() - before
    if done.returncode != 0:
        raise SystemExit("a 3.8 + uTLX process failed (%s):\n%s" % (tag, done.stderr[-3000:]))
    result = json.loads(done.stdout)
    result.update(wall=wall, cpu=cpu)
    return result


def clear_daemon_cache(client):
    """Every entry of kjitd's cache removed, from every tier: the next
    compile of any kernel is a miss."""
    for entry in client.cache_list():
        client.cache_remove(entry.key)


def process_rows(daemon: Daemon, work: Path, reps: int, xdg: Path):
    names = itertools.count()
    namespace = "utlx-bench-fleet"

    def remote_env(ns):
        return {"KJIT_SOCKET": daemon.socket, "KJIT_TRITON": "compile", "KJIT_TRITON_NAMESPACE": ns,
                "XDG_CACHE_HOME": str(xdg)}

    # What a process through kjitd works out once per install and keeps
    # (libtriton.so's digest, Triton's build hash), as the first process
    # after an install pays it: not part of any row.
    subprocess.run([str(PYTHON), "-c", "import utlx_plugin; from kjit import _triton_remote as r; r._this_build(); "
                    "r.install(); import triton.runtime.cache as c; c.triton_key()"],
                   env=clean_env(XDG_CACHE_HOME=str(xdg)), check=True)
    with kjit.Client(daemon.socket, timeout=600) as client:
        # The fleet's first process: fills kjitd with the four kernels.
        first = run_process(work, "first", remote_env(namespace))
        local, hit, miss = [], [], []
        for rep in range(reps):
            order = [("local", {}), ("hit", remote_env(namespace)), ("miss", None)]
            order = order[rep % 3:] + order[:rep % 3]
            for what, env in order:
                if what == "miss":
                    clear_daemon_cache(client)
                    env = remote_env("utlx-bench-miss-%d" % next(names))
                compiles, daemon_cpu = client.stats().compiles, daemon.cpu()
                result = run_process(work, what, env)
                result["daemon_compiles"] = client.stats().compiles - compiles
                result["daemon_cpu"] = daemon.cpu() - daemon_cpu
                {"local": local, "hit": hit, "miss": miss}[what].append(result)
    return first, local, hit, miss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5, help="reps of each TTIR compile (miss rows)")
    parser.add_argument("--process-reps", type=int, default=3, help="reps of each process (process rows)")
    args = parser.parse_args()
    for path, why in ((PYTHON, "scripts/install-deps.sh installs it"),
                      (CLIENT_PATH / "kjit", "client/python/run-tests.sh installs the client beside it")):
        if not path.exists():
            raise SystemExit("no %s: %s" % (path, why))
    work = Path(tempfile.mkdtemp(prefix="kjit-utlx-bench-"))
    daemon = None
    started = time.perf_counter()
    try:
        daemon = Daemon(work / "kjitd")
        rows = miss_rows(daemon, work, args.reps)
        first, local, hit, miss = process_rows(daemon, work, args.process_reps, work / "xdg")
    finally:
        if daemon is not None:
            daemon.stop()
        shutil.rmtree(work, ignore_errors=True)

    print("Triton %s + uTLX through kjitd against the same build in its own process; host CPUs: %d" % (
        BUILD.split("-")[1], len(os.sched_getaffinity(0))))
    print()
    print("== miss: one TTIR compile, kjit's cache missed / a warm 3.8 + uTLX process, Triton's cache empty "
          "(median of %d reps, ms) ==" % args.reps)
    header = ("kernel", "target", "local", "kjitd", "kjitd/local", "server_ms", "same binary")
    table = [header] + [(k, t, "%.1f" % a, "%.1f" % b, "%.2f" % r, "%.1f" % s, "yes" if same else "NO")
                        for k, t, a, b, r, s, same in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for n, row in enumerate(table):
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            print("  ".join("-" * w for w in widths))
    ratios = [r[4] for r in rows]
    nvidia = [r[4] for r in rows if r[1].startswith("cuda")]
    overall = statistics.median(ratios)
    print()
    print("overall median of kjitd/local: %.3f (NVIDIA only: %.3f)   target <= 1.10: %s" % (
        overall, statistics.median(nvidia), "met" if overall <= 1.10 else "NOT met"))
    print("sum of medians: kjitd %.0f ms / local %.0f ms = %.3f" % (
        sum(r[3] for r in rows), sum(r[2] for r in rows), sum(r[3] for r in rows) / sum(r[2] for r in rows)))
    print()

    def med(results, key):
        return statistics.median(r[key] for r in results)

    print("== process: a 3.8 + uTLX process compiling 4 TLX kernels for cuda:90, empty Triton cache "
          "(median of %d reps) ==" % args.process_reps)
    print("%-34s %8s %8s %9s %10s %9s  %s" % ("", "wall s", "CPU s", "CPU/local", "daemon CPU", "compiled",
                                              "remote compile"))
    base_cpu = med(local, "cpu")
    for what, results in (("local (no kjit)", local), ("through kjitd, daemon hit", hit),
                          ("through kjitd, daemon miss", miss)):
        daemon_cpu = "-" if what.startswith("local") else "%.2f" % med(results, "daemon_cpu")
        compiled = "-" if what.startswith("local") else ",".join(str(r["daemon_compiles"]) for r in results)
        print("%-34s %8.2f %8.2f %9.2f %10s %9s  %s" % (what, med(results, "wall"), med(results, "cpu"),
                                                        med(results, "cpu") / base_cpu, daemon_cpu, compiled,
                                                        results[-1]["remote"]))
    print()
    hit_ratio, miss_ratio = med(hit, "cpu") / base_cpu, med(miss, "cpu") / base_cpu
    print("process CPU through kjitd / local: hit %.2f (target <= 0.4: %s), miss %.2f (target <= 0.4: %s)" % (
        hit_ratio, "met" if hit_ratio <= 0.4 else "NOT met", miss_ratio, "met" if miss_ratio <= 0.4 else "NOT met"))
    print("miss, process + daemon CPU / local: %.2f" % ((med(miss, "cpu") + med(miss, "daemon_cpu")) / base_cpu))
    binaries = {json.dumps(r["binaries"], sort_keys=True) for r in local + hit + miss + [first]}
    print("every process's four binaries the same: %s; the fleet's first process: %s" % (
        "yes" if len(binaries) == 1 else "NO (%d sets)" % len(binaries), first["remote"]))
    print("bench took %.0f s" % (time.perf_counter() - started))


if __name__ == "__main__":
    main()
