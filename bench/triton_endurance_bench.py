#!/usr/bin/env python3
"""A long-lived kjitd, measured: tests/load/run.py's endurance scenario for
30 minutes (or --duration s), its figures printed over time.

One kjitd with --compile-cpu-seconds 5 serves 4 clients a mixed stream (new
Triton kernels from tests/load/triton_variants.py for cuda:80, cuda:90,
cuda:100 and hip:gfx942, new CUDA C++ and PTX, repeats that must be hits);
every few seconds the scenario samples kjitd's, its workers' and its Triton
interpreters' resident memory, open files and threads, the directories
under its TMPDIR and the CPU the Triton jobs used. The scenario's own
checks hold as in CI (no failed request, a fresh kjitd's bytes for a sample
of the requests, the Triton CPU far past one job's bound, flat after the
first third); this prints every sample as a table, and the drift of each
quantity from the end of the warm-up (the first third) to the end.

    python3 bench/triton_endurance_bench.py [--duration 1800] [--build build]
        [--sample-period S] [--clients N] [--seed N] [--report FILE] [--kjitd-arg=ARG ...]

Exit status: run.py's (0 when every check held).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "load"))
import run  # noqa: E402  (tests/load/run.py: the scenario and its table)

MiB = 1 << 20


def drift(samples, end, get):
    """(value at the end of the warm-up, peak after it, value at the end)."""
    after = [s for s in samples if s["t"] >= end / 3]
    if not after:
        return None
    values = [get(s) for s in after if get(s) is not None]
    return (values[0], max(values), values[-1]) if values else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=1800, help="the stream's length in s (default 1800)")
    parser.add_argument("--build", default=os.path.join(REPO, "build"), help="the build tree (its bin/)")
    parser.add_argument("--sample-period", type=float, help="default: duration / 180, at least 2 s")
    parser.add_argument("--clients", type=int, default=run.ENDURANCE_CLIENTS)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--report", help="keep run.py's JSON report here")
    parser.add_argument("--kjitd-arg", action="append", default=[],
                        help="one more argument for the daemons (e.g. --kjitd-arg=--sandbox=off)")
    args = parser.parse_args()

    bin_dir = os.path.join(args.build, "bin")
    report = args.report or tempfile.mktemp(prefix="kjit-endurance-", suffix=".json")
    argv = [sys.executable, os.path.join(REPO, "tests", "load", "run.py"), "--force",
            "--kjitd", os.path.join(bin_dir, "kjitd"), "--kjit", os.path.join(bin_dir, "kjit"),
            "--driver", os.path.join(bin_dir, "kjit_load_driver"), "--scenario", "endurance",
            "--duration", str(args.duration), "--endurance-clients", str(args.clients), "--report", report]
    if args.sample_period:
        argv += ["--sample-period", str(args.sample_period)]
    if args.seed is not None:
        argv += ["--seed", str(args.seed)]
    argv += [f"--kjitd-arg={a}" for a in args.kjitd_arg]
    print("$ " + " ".join(argv), flush=True)
    code = subprocess.call(argv)
    try:
        with open(report) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"no report from run.py ({e})")
        return code or 1
    finally:
        if not args.report and os.path.exists(report):
            os.unlink(report)
    entry = data["scenarios"].get("endurance", {})
    figures = entry.get("figures", {})
    samples = figures.get("samples") or []
    print()
    print(f"endurance, {args.duration:.0f} s requested: {entry.get('result', '?').splitlines()[0]}")
    if not samples:
        return code or 1
    print(f"every sample ({len(samples)}, one every {figures['sample_period_s']:.0f} s):")
    for line in run.endurance_table(samples, rows=None):
        print("  " + line)
    end = figures["seconds"]
    print(f"\nfrom the end of the warm-up ({end / 3:.0f} s) to the end ({end:.0f} s): start / peak / end")
    rows = [("kjitd RSS MiB", lambda s: s["kjitd"]["rss"] / MiB),
            ("kjitd open files", lambda s: s["kjitd"]["fds"]),
            ("kjitd threads", lambda s: s["kjitd"]["threads"]),
            ("workers' RSS MiB, together", lambda s: sum(w["rss"] for w in s["workers"].values()) / MiB),
            ("interpreters' RSS MiB, together", lambda s: sum(i["rss"] for i in s["interpreters"].values()) / MiB),
            ("directories under TMPDIR", lambda s: s["tmp_dirs"])]
    for name, get in rows:
        d = drift(samples, end, get)
        if d:
            print(f"  {name:34s} {d[0]:8.1f} {d[1]:8.1f} {d[2]:8.1f}   ({d[2] - d[0]:+.1f})")
    print(f"\n{figures['requests']} requests ({figures['rps']:.1f}/s), {figures['failed']} failed; "
          f"Triton: {figures['triton_compiled']} kernels compiled, their jobs' CPU {figures['triton_jobs_cpu_s']:.1f} s "
          f"under a {figures['compile_cpu_seconds']} s bound per job; hits p50 "
          f"{figures['kinds']['hit'].get('p50_ms', 0):.0f} ms, misses p50 {figures['kinds']['miss'].get('p50_ms', 0):.0f} ms; "
          f"fresh kjitd: {figures.get('fresh', {}).get('asked', 0)} asked, "
          f"{len(figures.get('fresh', {}).get('mismatches', []))} differ")
    return code


if __name__ == "__main__":
    sys.exit(main())
