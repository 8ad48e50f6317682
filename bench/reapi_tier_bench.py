"""The REAPI tier (a Remote Execution API server's ActionCache and CAS, here
BuildGrid) against the Redis tier and a miss, in one run, as ratios within it.

Rows (each request a CUDA C++ kernel through the Python client, kjitd's
memory and disk tiers off so the tier under test answers):

- hit:   a REAPI-tier hit against a Redis-tier hit of the same entry (target
         <= 2x), and against a miss of the same kernel (target <= 0.1x); and
         the server's bare round trip, the floor of each of a hit's calls;
- fill:  a REAPI-tier hit with kjitd's disk tier on against off (memory off
         in both; the disk tier emptied after each repetition, so every
         request is a REAPI hit), in pairs of alternating order: the hit is
         answered before the disk tier is given its copy, so the disk tier
         adds nothing to it (target <= 1.1x);
- warm:  a new node (empty memory and disk, no Redis) warming the fleet's
         recipes from the REAPI store (`kjit warm`): entries fetched per second;
- share: two daemons with no Redis sharing only the REAPI store: the compiles
         the second ran for the kernels the first compiled (target 0).

    build/python-venv/bin/python bench/reapi_tier_bench.py [--kernels N] [--reps N] [--kjitd PATH]

Needs build/bin/kjitd and kjit, the kjit package in the running interpreter
(client/python/run-tests.sh makes build/python-venv), redis-server, and
BuildGrid in .deps/buildgrid (scripts/install-deps.sh).
"""

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import kjit

REPO = Path(__file__).resolve().parents[1]
KJITD = REPO / "build" / "bin" / "kjitd"
KJIT = REPO / "build" / "bin" / "kjit"
BUILDGRID_PYTHON = REPO / ".deps" / "buildgrid" / "bin" / "python"

KERNEL = """
extern "C" __global__ void scale_add_%d(float* out, const float* a, const float* b, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * s + b[i] + %d.0f;
}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, condition, timeout=120.0, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except Exception:  # not up yet
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting for " + what)
        time.sleep(interval)


class Daemon:
    def __init__(self, work, name, args):
        self.socket = str(work / (name + ".sock"))
        self.log = open(work / (name + ".log"), "w")
        self.process = subprocess.Popen(
            [str(KJITD), "--socket", self.socket, "--cache-dir", str(work / ("cache-" + name)),
             "--no-triton-prestart", "--compile-workers", "2"] + args,
            stdout=self.log, stderr=subprocess.STDOUT)
        self.client = kjit.Client(self.socket)
        wait_until("kjitd " + name, lambda: self.process.poll() is None and self.client.health() == "SERVING")

    def tier(self, name):
        for tier in self.client.stats().tiers:
            if tier.tier == name:
                return tier
        return None

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=60)
        self.log.close()


def server_round_trip_ms(port, calls=300):
    """The median of BuildGrid's cheapest call (GetCapabilities, an empty
    request) from a gRPC client: the floor of each call a hit makes."""
    import grpc  # noqa: PLC0415
    with grpc.insecure_channel("127.0.0.1:%d" % port) as channel:
        call = channel.unary_unary("/build.bazel.remote.execution.v2.Capabilities/GetCapabilities",
                                   request_serializer=None, response_deserializer=None)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            call(b"", timeout=10)  # an empty GetCapabilitiesRequest serializes to no bytes
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def timed_compiles(daemon, kernels, expect):
    times = []
    for source in kernels:
        start = time.perf_counter()
        result = daemon.client.compile(source, target="cuda:90", kind="cuda")
        times.append(time.perf_counter() - start)
        if result.cache != expect:
            raise RuntimeError("expected a %s answer, got %s" % (expect, result.cache))
    return times


def main():
    global KJITD
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernels", type=int, default=12)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--kjitd", default=str(KJITD), help="the kjitd to measure (another build's, to compare)")
    args = parser.parse_args()
    KJITD = Path(args.kjitd)
    if not BUILDGRID_PYTHON.exists():
        sys.exit("BuildGrid is not installed in .deps/buildgrid (scripts/install-deps.sh)")
    work = Path(tempfile.mkdtemp(prefix="kjit-reapi-bench-"))
    processes, daemons = [], []
    try:
        redis_port, bgd_port = free_port(), free_port()
        processes.append(subprocess.Popen(
            ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        (work / "bgd.yml").write_text(
            "server:\n  - !channel\n    address: \"127.0.0.1:%d\"\n    insecure-mode: true\n"
            "authorization:\n  method: none\n"
            "storages:\n  - !disk-storage &cas\n    path: %s\n"
            "caches:\n  - !lru-action-cache &ac\n    storage: *cas\n    max-cached-refs: 100000\n"
            "    allow-updates: true\n"
            "instances:\n  - name: \"\"\n    services:\n      - !action-cache\n        cache: *ac\n"
            "      - !cas\n        storage: *cas\n      - !bytestream\n        storage: *cas\n"
            % (bgd_port, work / "cas"))
        processes.append(subprocess.Popen(
            [str(BUILDGRID_PYTHON), "-c", "import sys; from buildgrid.server.app import cli; sys.exit(cli())",
             "server", "start", str(work / "bgd.yml")],
            stdout=open(work / "bgd.log", "w"), stderr=subprocess.STDOUT))
        redis = ["--redis", "127.0.0.1:%d" % redis_port]
        reapi = ["--reapi", "grpc://127.0.0.1:%d" % bgd_port]
        no_local = ["--memory-cache-bytes", "0", "--no-disk-cache"]

        kernels = [KERNEL % (i, i) for i in range(args.kernels)]
        # The fleet's first daemon compiles every kernel into both shared tiers.
        first = Daemon(work, "first", redis + reapi)
        daemons.append(first)
        wait_until("BuildGrid", lambda: socket.create_connection(("127.0.0.1", bgd_port), timeout=1).close() or True)
        timed_compiles(first, kernels, "compiled")
        wait_until("the writes behind the answers", lambda: first.tier("reapi").puts >= args.kernels, 60)

        redis_only = Daemon(work, "redis", no_local + redis)
        reapi_only = Daemon(work, "reapi", no_local + reapi)
        uncached = Daemon(work, "miss", ["--no-cache"])
        daemons += [redis_only, reapi_only, uncached]
        for d, expect in ((redis_only, "redis"), (reapi_only, "reapi"), (uncached, "compiled")):
            timed_compiles(d, kernels[:2], expect)  # connections and workers warm
        redis_ms, reapi_ms, miss_ms = [], [], []
        for _ in range(args.reps):
            redis_ms += timed_compiles(redis_only, kernels, "redis")
            reapi_ms += timed_compiles(reapi_only, kernels, "reapi")
            miss_ms += timed_compiles(uncached, kernels[: max(2, args.kernels // 4)], "compiled")
        med = lambda xs: statistics.median(xs) * 1000
        hit = {"reapi_hit_ms": med(reapi_ms), "redis_hit_ms": med(redis_ms), "miss_ms": med(miss_ms)}
        hit["reapi_vs_redis"] = hit["reapi_hit_ms"] / hit["redis_hit_ms"]
        # BuildGrid does not inline output files, so a hit is two calls
        # (GetActionResult, BatchReadBlobs); their floor on this server:
        hit["server_round_trip_ms"] = server_round_trip_ms(bgd_port)
        hit["two_round_trips_vs_redis_hit"] = 2 * hit["server_round_trip_ms"] / hit["redis_hit_ms"]
        hit["reapi_vs_miss"] = hit["reapi_hit_ms"] / hit["miss_ms"]

        # The disk tier on against off, on the hit row's kernels. A kernel's
        # second request to the daemon with a disk tier would be a disk hit,
        # so its disk tier is emptied (gc) after each repetition, once the
        # copies made behind the answers are there; the order within a pair
        # alternates, so that neither side always follows the other's fill.
        with_disk = Daemon(work, "reapi-disk", ["--memory-cache-bytes", "0"] + reapi)
        daemons.append(with_disk)
        copies = 0

        def empty_disk():
            wait_until("the disk tier's copies", lambda: with_disk.tier("disk").puts >= copies, 60)
            with_disk.client.cache_gc(0)

        timed_compiles(with_disk, kernels, "reapi")  # connections, workers and plans warm
        copies += len(kernels)
        empty_disk()
        disk_off_ms, disk_on_ms = [], []
        for _ in range(args.reps):
            for n, source in enumerate(kernels):
                pair = [(reapi_only, disk_off_ms), (with_disk, disk_on_ms)]
                for d, times in pair if n % 2 == 0 else reversed(pair):
                    times += timed_compiles(d, [source], "reapi")
            copies += len(kernels)
            empty_disk()
        p90 = lambda xs: statistics.quantiles(xs, n=10)[-1] * 1000
        fill = {"hits": len(disk_on_ms), "disk_on_ms": med(disk_on_ms), "disk_off_ms": med(disk_off_ms),
                "disk_on_p90_ms": p90(disk_on_ms), "disk_off_p90_ms": p90(disk_off_ms),
                "disk_puts": with_disk.tier("disk").puts}
        fill["on_vs_off"] = fill["disk_on_ms"] / fill["disk_off_ms"]
        fill["on_vs_off_p90"] = fill["disk_on_p90_ms"] / fill["disk_off_p90_ms"]

        # A new node: empty memory and disk, no Redis; `kjit warm` builds the
        # fleet's recipes (from the REAPI store) for its target.
        new_node = Daemon(work, "new", reapi)
        daemons.append(new_node)
        start = time.perf_counter()
        warm = subprocess.run([str(KJIT), "warm", "--socket", new_node.socket, "--target", "cuda:90", "--json"],
                              capture_output=True, text=True, check=True)
        warm_s = time.perf_counter() - start
        new_stats = new_node.client.stats()
        fetched = new_node.tier("reapi").hits
        warm_row = {"recipes": json.loads(warm.stdout), "entries_fetched": fetched, "seconds": warm_s,
                    "entries_per_second": fetched / warm_s if warm_s else 0.0, "compiles": new_stats.compiles}

        # Two daemons with no Redis, sharing only the store.
        a = Daemon(work, "share-a", reapi)
        b = Daemon(work, "share-b", reapi)
        daemons += [a, b]
        shared = [KERNEL % (1000 + i, i) for i in range(args.kernels)]
        timed_compiles(a, shared, "compiled")
        wait_until("share-a's writes", lambda: a.tier("reapi").puts >= args.kernels, 60)
        for source in shared:
            b.client.compile(source, target="cuda:90", kind="cuda")
        share = {"first_compiles": a.client.stats().compiles, "second_compiles": b.client.stats().compiles,
                 "second_reapi_hits": b.tier("reapi").hits}

        report = {"kernels": args.kernels, "reps": args.reps, "hit": hit, "fill": fill, "warm": warm_row,
                  "share": share}
        print("REAPI hit %.2f ms, Redis hit %.2f ms, miss %.1f ms: REAPI/Redis %.2fx (target <= 2), "
              "REAPI/miss %.3fx (target <= 0.1)" % (hit["reapi_hit_ms"], hit["redis_hit_ms"], hit["miss_ms"],
                                                     hit["reapi_vs_redis"], hit["reapi_vs_miss"]))
        print("BuildGrid's bare round trip (GetCapabilities) %.2f ms: the two calls of a hit alone are %.2fx "
              "a whole Redis-tier hit" % (hit["server_round_trip_ms"], hit["two_round_trips_vs_redis_hit"]))
        print("REAPI hit with the disk tier on %.2f ms, off %.2f ms: on/off %.2fx (target <= 1.1); "
              "p90 %.2f ms against %.2f ms, %.2fx (%d hits each; %d copies reached the disk tier)"
              % (fill["disk_on_ms"], fill["disk_off_ms"], fill["on_vs_off"], fill["disk_on_p90_ms"],
                 fill["disk_off_p90_ms"], fill["on_vs_off_p90"], fill["hits"], fill["disk_puts"]))
        print("new node warming from REAPI: %d entries in %.2f s, %.0f entries/s, %d compiles"
              % (fetched, warm_s, warm_row["entries_per_second"], warm_row["compiles"]))
        print("two daemons sharing only REAPI: the second compiled %d of %d (REAPI hits %d)"
              % (share["second_compiles"], args.kernels, share["second_reapi_hits"]))
        print(json.dumps(report, indent=2))
    finally:
        for d in daemons:
            try:
                d.stop()
            except Exception:
                pass
        for p in processes:
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
