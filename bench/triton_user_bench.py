"""Triton through kjit for a user that is not kjitd's operator, against
Triton's own file-cache hit, in one run.

On a shared host kjitd runs as its own user (here root) and the socket's
users keep their blobs in namespaces of their own. This runs Triton's three
kernels (client/python/tests/triton_child.py, sm_90, no GPU) as the user
kjit-test-a (group kjit-test, made here when missing), each in a fresh
process with a fresh Triton home, and times whole processes:

- "own hit":   Triton alone, its cache directory filled by its own compile;
- "kjit direct": an empty local directory, kjit.triton.KjitCacheManager, the
  user's blobs read from kjitd's disk tier with the grant the daemon gave it;
- "kjit gRPC": the same with KJIT_DIRECT_READS=0.

Prints medians over --reps and each as a ratio of "own hit".

    sudo build/python-venv/bin/python bench/triton_user_bench.py [--reps N]
"""

import argparse
import json
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KJITD = REPO / "build" / "bin" / "kjitd"
CHILD = REPO / "client" / "python" / "tests" / "triton_child.py"
USER, GROUP = "kjit-test-a", "kjit-test"
OPERATOR = False  # --operator: run Triton as kjitd's own user instead, for comparison


def ensure_user():
    if subprocess.run(["getent", "group", GROUP], capture_output=True).returncode != 0:
        subprocess.run(["groupadd", "-f", GROUP], check=True)
    if subprocess.run(["getent", "passwd", USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "-M", "-N", "-g", GROUP, "-s", "/usr/sbin/nologin", USER], check=True)


def wait_for(path: Path, seconds: float):
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit("kjitd did not publish %s within %ds" % (path, seconds))
        time.sleep(0.05)


def run_as_user(work: Path, name: str, cache_dir: Path, extra_env: dict) -> float:
    """Wall ms of one Triton process as the user."""
    home = work / ("triton-home-" + name)
    for d in (home, cache_dir):
        d.mkdir(parents=True, exist_ok=True)
    uid = pwd.getpwnam(USER).pw_uid
    for d in (home, cache_dir, work / "xdg"):
        shutil.chown(d, uid)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TRITON_CACHE_DIR": str(cache_dir),
           "TRITON_HOME": str(home), "TRITON_DEFAULT_FP_FUSION": "1", "XDG_CACHE_HOME": str(work / "xdg")}
    env.update(extra_env)
    argv = ["setpriv", "--reuid", USER, "--regid", GROUP, "--init-groups", sys.executable, str(CHILD)]
    if OPERATOR:
        argv = ["setpriv", "--reuid", "root", sys.executable, str(CHILD)]
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    elapsed = (time.perf_counter() - start) * 1e3
    if done.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (name, done.stderr[-3000:]))
    result = json.loads(done.stdout)
    if name.startswith("direct") and result.get("grpc_loaded", True):
        raise SystemExit("the direct row loaded gRPC: it did not read directly")
    shutil.rmtree(home, ignore_errors=True)
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--operator", action="store_true", help="run Triton as kjitd's own user (root) instead")
    args = parser.parse_args()
    global OPERATOR
    OPERATOR = args.operator
    if os.geteuid() != 0:
        raise SystemExit("run as root: the user's processes are started with setpriv")
    ensure_user()
    work = Path(tempfile.mkdtemp(prefix="kjit-triton-user-"))
    os.chmod(work, 0o755)
    (work / "xdg").mkdir()
    socket = work / "k.sock"
    daemon = subprocess.Popen([str(KJITD), "--socket", str(socket), "--socket-group", GROUP,
                               "--cache-dir", str(work / "cache"), "--log-level", "warn"])
    try:
        wait_for(Path(str(socket) + ".direct.json"), 60)
        kjit_env = {"TRITON_CACHE_MANAGER": "kjit.triton:KjitCacheManager", "KJIT_SOCKET": str(socket)}
        # The user's first process compiles, stores its blobs and asks for its grant.
        run_as_user(work, "fill", work / "fill", kjit_env)
        run_as_user(work, "own-fill", work / "own", {})
        rows = {"own hit": [], "kjit direct": [], "kjit gRPC": []}
        for rep in range(args.reps + 1):  # the first is a warm-up
            times = {
                "own hit": run_as_user(work, "own-%d" % rep, work / "own", {}),
                "kjit direct": run_as_user(work, "direct-%d" % rep, work / ("direct-%d" % rep), kjit_env),
                "kjit gRPC": run_as_user(work, "rpc-%d" % rep, work / ("rpc-%d" % rep),
                                         dict(kjit_env, KJIT_DIRECT_READS="0")),
            }
            if rep:
                for row, ms in times.items():
                    rows[row].append(ms)
        base = statistics.median(rows["own hit"])
        who = "root (kjitd's own user, the operator)" if OPERATOR else USER + " (not kjitd's operator)"
        print("Triton, 3 kernels, as %s, %d reps, medians:" % (who, args.reps))
        for row, values in rows.items():
            median = statistics.median(values)
            print("  %-12s %8.1f ms   %.2fx own hit" % (row, median, median / base))
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
