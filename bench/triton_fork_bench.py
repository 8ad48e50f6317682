#!/usr/bin/env python3
"""A Triton job in a child forked from the warm interpreter, against the same
job run in the interpreter itself (the worker script before jobs were
forked), in one run on this machine.

    bench/triton_fork_bench.py [--python BUILD_PYTHON] [--reps 3] [--warm 4]
        [--baseline REVISION]

Both sides are kjit's Triton worker script, started as kjitd starts it
(`python -I -B -c SCRIPT`, a minimal environment, a private directory) and
asked over its framing (4-byte little-endian length + JSON). The baseline
is the script at REVISION (default: the commit before the one that made
jobs forked children), read with `git show`. For each rep, in turn for the
two sides so that the machine's load falls alike on both:

  first compile   spawn, describe, one small compile: what the first Triton
                  request of a fresh worker waits for
  warm small      softmax (tests/triton/data), cuda:90, median of --warm
  warm large      attention_fwd, cuda:90, median of --warm
  memory          the interpreter's resident set after the jobs, and (forked)
                  a job's child's peak resident set, the pages it shares
                  with the interpreter included

Prints a table of medians over the reps with ratios forked / in place.
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join("src", "backends", "triton", "kjit_triton_worker.py")
DATA = os.path.join(REPO, "tests", "triton", "data")
CUDA90 = {"backend": "cuda", "arch": 90, "warp_size": 32}


def baseline_revision():
    """The parent of the first commit whose worker script forks its jobs."""
    commits = subprocess.run(["git", "-C", REPO, "log", "--format=%H", "-S", "def run_in_child", "--", SCRIPT],
                             stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    if not commits:
        sys.exit("no commit introduces run_in_child: give --baseline")
    return commits[-1] + "~1"


class Worker:

    def __init__(self, python, script):
        self.dir = tempfile.mkdtemp(prefix="kjit-fork-bench-")
        os.makedirs(os.path.join(self.dir, "tmp"))
        env = {"PATH": "/usr/bin:/bin", "HOME": self.dir, "TMPDIR": os.path.join(self.dir, "tmp"),
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}
        self.proc = subprocess.Popen([python, "-I", "-B", "-c", script], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=self.dir, env=env)

    def ask(self, request):
        body = json.dumps(request).encode()
        self.proc.stdin.write(struct.pack("<I", len(body)) + body)
        self.proc.stdin.flush()
        header = self.proc.stdout.read(4)
        if len(header) < 4:
            raise RuntimeError("the worker died")
        (size, ) = struct.unpack("<I", header)
        return json.loads(self.proc.stdout.read(size))

    def rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


def compile_request(kernel, options):
    with open(os.path.join(DATA, kernel + ".ttir")) as f:
        return {"op": "compile", "source": f.read(), "target": CUDA90, "options": options}


def timed(worker, request):
    started = time.perf_counter()
    answer = worker.ask(request)
    if not answer.get("ok"):
        raise RuntimeError(f"{answer.get('code')}: {answer.get('message')}")
    return (time.perf_counter() - started) * 1000, answer


def one_rep(python, script, warm):
    small = compile_request("softmax", {"num_warps": 8})
    large = compile_request("attention_fwd", {"num_warps": 4, "num_stages": 3})
    started = time.perf_counter()
    worker = Worker(python, script)
    try:
        worker.ask({"op": "describe"})
        timed(worker, small)
        first_ms = (time.perf_counter() - started) * 1000
        small_ms = statistics.median(timed(worker, small)[0] for _ in range(warm))
        large_runs = [timed(worker, large) for _ in range(warm)]
        large_ms = statistics.median(ms for ms, _ in large_runs)
        child_kib = max((a.get("job_process", {}).get("max_rss_kib", 0) for _, a in large_runs), default=0)
        return {"first": first_ms, "small": small_ms, "large": large_ms, "parent": worker.rss_mib(),
                "child": child_kib / 1024 if child_kib else None}
    finally:
        worker.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=os.path.join(REPO, ".deps", "triton-builds", "triton-3.9.0", "bin",
                                                         "python"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--warm", type=int, default=4)
    parser.add_argument("--baseline", help="the revision whose worker script runs jobs in place")
    args = parser.parse_args()
    if not os.access(args.python, os.X_OK):
        sys.exit(f"no Triton build at {args.python} (scripts/install-deps.sh installs it)")
    baseline = args.baseline or baseline_revision()
    in_place = subprocess.run(["git", "-C", REPO, "show", f"{baseline}:{SCRIPT}"], stdout=subprocess.PIPE, text=True,
                              check=True).stdout
    with open(os.path.join(REPO, SCRIPT)) as f:
        forked = f.read()
    print(f"in place: the worker script at {baseline}; forked: this tree's; {args.reps} reps, {args.warm} warm "
          f"compiles each", flush=True)
    runs = {"in place": [], "forked": []}
    for rep in range(args.reps):
        for side, script in (("in place", in_place), ("forked", forked)):
            runs[side].append(one_rep(args.python, script, args.warm))
            print(f"  rep {rep + 1} {side}: " + ", ".join(
                f"{k} {v:.0f}" for k, v in runs[side][-1].items() if v is not None), flush=True)

    def median(side, key):
        values = [r[key] for r in runs[side] if r[key] is not None]
        return statistics.median(values) if values else None

    rows = [("first compile after start (ms)", "first"), ("warm compile, small kernel (ms)", "small"),
            ("warm compile, large kernel (ms)", "large"), ("interpreter's resident set (MiB)", "parent"),
            ("a job's child, peak resident set (MiB)", "child")]
    print()
    print(f"{'':42} {'in place':>10} {'forked':>10} {'ratio':>7}")
    for label, key in rows:
        a, b = median("in place", key), median("forked", key)
        ratio = f"{b / a:.2f}" if a and b else "-"
        shown = ["-" if v is None else str(round(v)) for v in (a, b)]
        print(f"{label:42} {shown[0]:>10} {shown[1]:>10} {ratio:>7}")


if __name__ == "__main__":
    main()
