#!/usr/bin/env python3
"""Tile IR through kjit against tileiras and cuTile's own cache, as ratios
measured in one run.

Run through bench/tileir_bench.sh, with an interpreter that has cuda-tile
and the kjit package. Kernels: tests/tileir/export_kernels.py's vector add
and fp16 128x128x64 matmul. Three comparisons, each pair run in turn (and
which goes first flipped every rep), so the machine's load falls alike on
both sides:

  miss   a kjit miss (kjit.Client.compile on one long-lived client, a
         kernel kjitd has not seen) against tileiras run directly as a
         process on the same bytecode with the same options (the cubin
         read back). Every rep exports the kernels under a fresh symbol
         name, so each is a miss and both sides assemble the same bytes;
         target <= 1.05x. "kjit's own" is the median of the wall time less
         the worker's tileiras run (its "tileiras" stage): the RPC, the
         queue, the worker, the cache, which load on the host moves far
         less than the compile itself. A fresh kjitd's first Tile IR
         compile (its worker asks tileiras what it is then, once per worker
         process) is shown apart, and so is a miss on a kjitd without a
         disk tier, run in turn with the two others: a miss is answered
         once its entry is durably on disk (written, fsynced, renamed).
  hit    a kjit hit (the same call again: kjitd's memory tier) against a
         hit in cuTile's SQLite cache (cutile_cache's cache_key and
         cache_lookup, as compile_tile does them before running tileiras).
  fleet  a second cuTile process with kjit.cutile installed and an empty
         cuTile cache (kjitd already holds the cubins) against a cuTile
         process without kjit with an empty cache (a cold compile): whole
         processes (tests/../cutile_child.py) exporting both kernels'
         cubins, start to exit, and the tileiras runs each made.

Medians, and as the ratio the median of kjit's time over the other's in
each pair (run back to back, so under the same load). kjitd runs one compile
worker, so only the first compile pays that worker's questions to tileiras.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = REPO / "client" / "python" / "tests" / "cutile_child.py"
KERNELS = ("vector_add", "matmul")

sys.path.insert(0, str(REPO / "tests" / "tileir"))


def export(out: Path, tag: str) -> dict:
    """Both kernels' bytecode, under symbol names ending in tag."""
    import cuda.tile as ct  # noqa: PLC0415
    from cuda.tile.compilation import CallingConvention, KernelSignature, export_kernel  # noqa: PLC0415
    from export_kernels import array, matmul, vector_add  # noqa: PLC0415
    conv = CallingConvention.cutile_python_v1()
    f32, f16 = array(ct.float32, 1), array(ct.float16, 2)
    sigs = {"vector_add": (vector_add, [f32, f32, f32, 128]), "matmul": (matmul, [f16, f16, f16, 128, 128, 64])}
    found = {}
    for name, (kernel, params) in sigs.items():
        path = out / ("%s_%s.tileirbc" % (name, tag))
        export_kernel(kernel, [KernelSignature(params, conv, symbol="%s_%s" % (name, tag))], str(path),
                      output_format="tileir_bytecode")
        found[name] = path
    return found


def direct(tileiras: str, bytecode: Path, sm: str, options, env) -> bytes:
    out = bytecode.with_suffix(".sm_%s.direct.cubin" % sm)
    subprocess.run([tileiras, "--gpu-name=sm_" + sm] + list(options) + ["-o", str(out), str(bytecode)], env=env,
                   check=True, capture_output=True)
    return out.read_bytes()


def timed(f):
    start = time.perf_counter()
    value = f()
    return time.perf_counter() - start, value


def start_daemon(args, work: Path, name="kjitd", extra=()):
    sock = work / (name + ".sock")
    log = open(work / (name + ".log"), "w")
    proc = subprocess.Popen([args.kjitd, "--socket", str(sock), "--tileiras", args.tileiras, "--cache-dir",
                             str(work / (name + "-cache")), "--compile-workers", "1", "--log-level", "warn"]
                            + list(extra), stdout=log, stderr=subprocess.STDOUT)
    import kjit  # noqa: PLC0415
    client = kjit.Client(address="unix://%s" % sock, timeout=600)
    deadline = time.monotonic() + 60
    while True:
        try:
            client.health(timeout=2)
            return proc, sock, client
        except Exception:  # noqa: BLE001  (not serving yet)
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("kjitd did not start: %s" % (work / (name + ".log")).read_text()[-2000:])
            time.sleep(0.05)


def row(label, kjit_times, other_times, note=""):
    """Medians, and the median of the ratios of the pairs run back to back
    (which shared the host's load at the time)."""
    k, o = statistics.median(kjit_times), statistics.median(other_times)
    ratio = statistics.median(a / b for a, b in zip(kjit_times, other_times))
    print("  %-26s %10.2f %10.2f %8.3fx  %s" % (label, k * 1e3, o * 1e3, ratio, note))
    return ratio


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tileiras", required=True)
    parser.add_argument("--kjitd", required=True)
    parser.add_argument("--sm", default="100", help="target sm (default 100)")
    parser.add_argument("--reps", type=int, default=9, help="misses per kernel and side (default 9)")
    parser.add_argument("--hit-reps", type=int, default=300)
    parser.add_argument("--process-reps", type=int, default=3)
    args = parser.parse_args()

    env = dict(os.environ)
    env.pop("CUDA_HOME", None)  # tileiras would take that toolkit's libraries
    env["PATH"] = os.path.dirname(args.tileiras) + os.pathsep + env.get("PATH", "")
    os.environ.pop("CUDA_HOME", None)
    os.environ["PATH"] = env["PATH"]  # cuTile's export asks a tileiras on PATH for its bytecode versions
    import cuda.tile  # noqa: PLC0415
    import kjit  # noqa: PLC0415, F401

    work = Path(tempfile.mkdtemp(prefix="kjit-tileir-bench."))
    daemon = None
    daemons = []
    try:
        version = subprocess.run([args.tileiras, "--version"], env=env, capture_output=True, text=True).stdout
        release = next((line.strip() for line in version.splitlines() if "release" in line), "?")
        print("tileiras %s, cuda-tile %s, sm_%s, %d CPUs, load %.2f" % (release, cuda.tile.__version__, args.sm,
                                                                       os.cpu_count(), os.getloadavg()[0]))
        variants = [export(work, "r%d" % i) for i in range(args.reps + 1)]
        options = ["-O3"]
        target = "cuda:" + args.sm

        daemon, sock, client = start_daemon(args, work)
        # The same without a disk tier: what the disk tier's durable write
        # (before the answer) adds to a miss.
        mem_daemon, _, mem_client = start_daemon(args, work, "kjitd-memory", ["--no-disk-cache"])
        daemons.append(mem_daemon)
        mem_client.compile(variants[0]["vector_add"], target=target, kind="tileir", options=options)
        # A fresh kjitd's first Tile IR compile, against a direct run of the same.
        first_kjit, first = timed(lambda: client.compile(variants[0]["vector_add"], target=target, kind="tileir",
                                                         options=options))
        first_direct, _ = timed(lambda: direct(args.tileiras, variants[0]["vector_add"], args.sm, options, env))

        print("\nmiss: kjit compile (miss) vs tileiras run directly, ms (medians of %d)" % args.reps)
        print("  %-26s %10s %10s %9s" % ("kernel", "kjit", "tileiras", "ratio"))
        ratios, same = [], True
        server = {k: [] for k in KERNELS}
        mem_rows = []
        for name in KERNELS:
            ks, ds, ms, mem_own = [], [], [], []
            sides = ("kjit", "direct", "memory")
            for i in range(1, args.reps + 1):
                path = variants[i][name]
                cubins = {}
                for side in sides[i % 3:] + sides[:i % 3]:
                    if side in ("kjit", "memory"):
                        c = client if side == "kjit" else mem_client
                        t, result = timed(lambda: c.compile(path, target=target, kind="tileir", options=options))
                        (ks if side == "kjit" else ms).append(t)
                        # kjit's own part: the wall time less the worker's tileiras run.
                        stage = sum(x.ms for x in result.timings if x.stage == "tileiras") / 1e3
                        (server[name] if side == "kjit" else mem_own).append(t - stage)
                        cubins[side] = result.artifact
                    else:
                        t, cubins[side] = timed(lambda: direct(args.tileiras, path, args.sm, options, env))
                        ds.append(t)
                same = same and cubins["kjit"] == cubins["direct"] == cubins["memory"]
            ratios.append(row(name, ks, ds, "kjit's own %.2f ms" % (statistics.median(server[name]) * 1e3)))
            mem_rows.append((name, ms, ds, mem_own))
        for name, ms, ds, mem_own in mem_rows:
            row(name + ", no disk tier", ms, ds, "kjit's own %.2f ms" % (statistics.median(mem_own) * 1e3))
        print("  %-26s %10.2f %10.2f %8.3fx  (not in the figure above)" % (
            "first on a fresh kjitd", first_kjit * 1e3, first_direct * 1e3, first_kjit / first_direct))
        print("  miss ratio, worst kernel: %.3fx (target <= 1.05x); cubins identical: %s" % (max(ratios),
                                                                                       "yes" if same else "NO"))

        print("\nhit: kjit hit vs cuTile's SQLite cache hit, ms (medians of %d)" % args.hit_reps)
        from cuda.tile._compile import _get_compiler_version_string  # noqa: PLC0415
        from cutile_cache._cache import cache_key, cache_lookup, cache_store  # noqa: PLC0415
        compiler = _get_compiler_version_string()
        cutile_cache = str(work / "cutile-cache")
        for name in KERNELS:
            path = variants[1][name]
            bytecode = path.read_bytes()
            cubin = client.compile(bytecode, target=target, kind="tileir", options=options).artifact
            key_args = (compiler, "sm_" + args.sm, 3, bytecode, False)
            cache_store(cutile_cache, cache_key(*key_args, preview_features=(), linker_inputs=()), cubin, {})
            ks, cs = [], []
            for i in range(args.hit_reps):
                order = ("kjit", "cutile") if i % 2 else ("cutile", "kjit")
                for side in order:
                    if side == "kjit":
                        t, result = timed(lambda: client.compile(bytecode, target=target, kind="tileir",
                                                                 options=options))
                        ks.append(t)
                        assert result.artifact == cubin
                    else:
                        t, found = timed(lambda: cache_lookup(
                            cutile_cache, cache_key(*key_args, preview_features=(), linker_inputs=())))
                        cs.append(t)
                        assert found == cubin
            row(name, ks, cs)

        print("\nfleet: a second cuTile process through kjit vs cuTile's cold compile, both kernels, whole process, "
              "ms (medians of %d)" % args.process_reps)
        child_env = dict(env, KJIT_SOCKET=str(sock))
        child_env.pop("KJIT_ADDRESS", None)

        def child(tag, use_kjit):
            cache = work / ("cutile-cache-%s" % tag)
            command = [sys.executable, str(CHILD), str(work / ("out-" + tag)), "sm_" + args.sm] + list(KERNELS)
            if use_kjit:
                command.append("--kjit")
            t, done = timed(lambda: subprocess.run(command, env=dict(child_env, CUDA_TILE_CACHE_DIR=str(cache)),
                                                   capture_output=True, text=True))
            if done.returncode != 0:
                raise SystemExit("cutile_child.py failed: %s" % done.stderr[-3000:])
            return t, json.loads(done.stdout.strip().splitlines()[-1])

        child("first", True)  # the fleet's first process: kjitd compiles both
        ks, cs, runs = [], [], {"kjit": set(), "cutile": set()}
        for i in range(args.process_reps):
            order = ("kjit", "cutile") if i % 2 else ("cutile", "kjit")
            for side in order:
                t, result = child("%s%d" % (side, i), side == "kjit")
                (ks if side == "kjit" else cs).append(t)
                runs[side].add(len(result["tileiras_runs"]))
        row("2 kernels", ks, cs, "(tileiras runs per process: through kjit %s, cuTile alone %s)" % (
            "/".join(map(str, sorted(runs["kjit"]))), "/".join(map(str, sorted(runs["cutile"])))))
    finally:
        for d in [daemon] + daemons:
            if d is not None:
                d.terminate()
                d.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
