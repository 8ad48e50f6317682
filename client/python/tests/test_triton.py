"""kjit.triton.KjitCacheManager with the real triton package: kernels one
process compiles reach another process, with its own empty cache directory,
through kjitd, and that process assembles nothing; read from the daemon's
disk tier directly, it does not even load gRPC.

No GPU needed: triton.compile for an explicit target stops at the cubin.
Triton's assembler is pointed at a wrapper (TRITON_PTXAS_PATH and
TRITON_PTXAS_BLACKWELL_PATH, the knobs Triton reads) that logs each call."""

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import unique

triton = pytest.importorskip("triton", reason="the triton package is not installed (client/python/run-tests.sh "
                                               "installs it; pip install triton)")

CHILD = Path(__file__).with_name("triton_child.py")
CHILD_SECONDS = 600


def ptxas_wrappers(root: Path, log: Path, triton_dir: Path) -> dict:
    """Wrappers for the ptxas binaries Triton ships, each logging its
    arguments to log before running the real one."""
    bin_dir = triton_dir / "backends" / "nvidia" / "bin"
    env = {}
    for tool, knob in (("ptxas", "TRITON_PTXAS_PATH"), ("ptxas-blackwell", "TRITON_PTXAS_BLACKWELL_PATH")):
        real = bin_dir / tool
        if not os.access(real, os.X_OK):
            pytest.skip("triton ships no %s at %s" % (tool, real))
        wrapper = root / tool
        wrapper.write_text('#!/bin/sh\nprintf "%%s\\n" "$*" >> "%s"\nexec "%s" "$@"\n' % (log, real))
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        env[knob] = str(wrapper)
    return env


def assembles(log: Path) -> list:
    """The calls that assembled something: Triton also asks the version, to
    key its cache, and that is not an assembly."""
    if not log.exists():
        return []
    return [line for line in log.read_text().splitlines() if line.strip() != "--version"]


def start_child(tmp_path: Path, name: str, cache_dir: Path, env: dict, python: str = sys.executable,
                triton_dir: Path = None):
    """A triton_child.py process, started; finish_child waits for what it
    printed. python: another interpreter, with another Triton (triton_dir,
    its package directory) installed."""
    log = tmp_path / ("%s.ptxas.log" % name)
    wrapper_dir = tmp_path / ("%s-bin" % name)
    wrapper_dir.mkdir()
    wrappers = ptxas_wrappers(wrapper_dir, log, triton_dir or Path(triton.__file__).parent)
    child_env = dict(os.environ, TRITON_CACHE_DIR=str(cache_dir), TRITON_DEFAULT_FP_FUSION="1",
                     TRITON_HOME=str(tmp_path / "triton-home"), **wrappers, **env)
    process = subprocess.Popen([python, str(CHILD)], env=child_env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    return process, log, cache_dir, time.perf_counter()


def finish_child(started) -> dict:
    process, log, cache_dir, start = started
    try:
        stdout, stderr = process.communicate(timeout=CHILD_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    wall = time.perf_counter() - start
    assert process.returncode == 0, stderr[-4000:]
    result = json.loads(stdout)
    result["wall"] = wall
    result["assembles"] = assembles(log)
    result["cache_files"] = sorted(p.name for p in cache_dir.rglob("*") if p.is_file())
    return result


def run_child(tmp_path: Path, name: str, cache_dir: Path, env: dict, **interpreter) -> dict:
    return finish_child(start_child(tmp_path, name, cache_dir, env, **interpreter))


def test_a_second_process_gets_every_kernel_from_kjit_and_assembles_nothing(daemon, tmp_path, capsys):
    with_kjit = {"TRITON_CACHE_MANAGER": "kjit.triton:KjitCacheManager", "KJIT_SOCKET": daemon.socket,
                 # A namespace of this test's own, so the first process finds nothing.
                 "KJIT_TRITON_NAMESPACE": unique("triton")}
    os.environ.pop("KJIT_ADDRESS", None)
    first = run_child(tmp_path, "first", tmp_path / "cache-1", with_kjit)
    assert len(first["assembles"]) >= 3, first["assembles"]

    assert first["grpc_loaded"], "the first process stores what it compiled over gRPC"

    # Read from the daemon's disk tier directly: no gRPC loaded at all.
    second = run_child(tmp_path, "second", tmp_path / "cache-2", with_kjit)
    assert second["assembles"] == []
    assert second["cubins"] == first["cubins"]
    assert not second["grpc_loaded"]
    # What came from kjit was written where Triton reads it.
    assert len([f for f in second["cache_files"] if f.endswith(".cubin")]) == 3

    # The same over gRPC (what a client on another host, or with a token, gets).
    over_rpc = run_child(tmp_path, "rpc", tmp_path / "cache-3", dict(with_kjit, KJIT_DIRECT_READS="0"))
    assert over_rpc["assembles"] == []
    assert over_rpc["cubins"] == first["cubins"]
    assert over_rpc["grpc_loaded"]
    assert len([f for f in over_rpc["cache_files"] if f.endswith(".cubin")]) == 3

    # Triton's own file cache, for comparison: the first process's directory,
    # Triton's default manager, no kjit.
    assert "TRITON_CACHE_MANAGER" not in os.environ
    third = run_child(tmp_path, "third", tmp_path / "cache-1", {})
    assert third["assembles"] == []
    assert third["cubins"] == first["cubins"]

    with capsys.disabled():
        print("\ntriton.compile of 3 kernels (seconds in triton.compile; whole process in brackets):")
        for label, run in (("compiled, stored in kjit", first), ("from kjit, empty local dir", second),
                           ("the same over gRPC", over_rpc), ("Triton's local file cache", third)):
            print("  %-28s %7.3f  [%6.2f]  ptxas runs: %d" % (label, run["seconds"], run["wall"],
                                                             len(run["assembles"])))


def test_the_manager_goes_on_without_a_daemon(tmp_path):
    env = {"TRITON_CACHE_MANAGER": "kjit.triton:KjitCacheManager", "KJIT_SOCKET": str(tmp_path / "nobody.sock"),
           "KJIT_TRITON_TIMEOUT": "2"}
    result = run_child(tmp_path, "alone", tmp_path / "cache", env)
    assert len(result["assembles"]) >= 3
    assert len([f for f in result["cache_files"] if f.endswith(".cubin")]) == 3


def test_the_manager_follows_a_restarted_daemon_to_its_new_manifest(tmp_path, monkeypatch):
    """A daemon restarted on the same socket writes a new manifest: the
    manager's reader of the old one reads nothing, a lookup that missed
    drops it, and the next lookup reads through the new one."""
    import kjit
    import kjit.triton as manager
    from conftest import Daemon

    d = Daemon(tmp_path / "d")
    d.root.mkdir()
    d.start()
    monkeypatch.setenv("KJIT_SOCKET", d.socket)
    monkeypatch.setattr(manager, "_direct", None)
    monkeypatch.setattr(manager, "_direct_checked", 0.0)
    try:
        with kjit.Client(d.socket) as client:
            client.put_blob("ns", "K", "k.cubin", b"k")
        first = manager._direct_reader()
        assert first is not None and first.get_blob("ns", "K", "k.cubin") == b"k"
        d.stop()
        d.start()
        assert manager._direct_reader() is first
        assert first.get_blob("ns", "K", "k.cubin") is None
        manager._direct_missed(first)
        second = manager._direct_reader()
        assert second is not None and second is not first
        assert second.get_blob("ns", "K", "k.cubin") == b"k"
        manager._direct_missed(second)  # a miss on a serving daemon keeps its reader
        assert manager._direct_reader() is second
    finally:
        d.stop()


def test_processes_started_together_assemble_each_kernel_once(daemon, tmp_path):
    """Three processes, empty caches, the same three kernels at once: one
    compile per kernel among them (claims), the others wait and get it."""
    env = {"TRITON_CACHE_MANAGER": "kjit.triton:KjitCacheManager", "KJIT_SOCKET": daemon.socket,
           "KJIT_TRITON_NAMESPACE": unique("triton-fleet"), "KJIT_TRITON_CLAIM_WAIT": "300"}
    os.environ.pop("KJIT_ADDRESS", None)
    import kjit
    with kjit.Client(daemon.socket) as client:
        before = client.stats().blobs
        started = [start_child(tmp_path, "p%d" % i, tmp_path / ("cache-%d" % i), env) for i in range(3)]
        results = [finish_child(s) for s in started]
        after = client.stats().blobs
    total = sum(len(r["assembles"]) for r in results)
    assert total == 3, [r["assembles"] for r in results]
    assert after.claims - before.claims == 3, "one claim per kernel"
    assert after.claims_abandoned == before.claims_abandoned
    assert all(r["cubins"] == results[0]["cubins"] for r in results)
    assert all(len([f for f in r["cache_files"] if f.endswith(".cubin")]) == 3 for r in results)


SECOND_PUT = """
import os, sys
from kjit.triton import KjitCacheManager
manager = KjitCacheManager(sys.argv[1])
if sys.argv[2] == "put":
    path = manager.put(sys.argv[3].encode(), "k.cubin")
    manager.put_group("__grp__k.json", {"k.cubin": path})
    sys.stdout.write(open(path).read())
else:
    path = manager.get_file("k.cubin")
    group = manager.get_group("__grp__k.json")
    sys.stdout.write((open(path).read() if path else "<miss>") + " " + ",".join(sorted(group or ())))
"""


def test_a_second_put_of_a_key_keeps_the_first_processs_files_in_kjit(daemon, tmp_path):
    """Triton's key covers everything a compile depends on, so a second put
    is another process's compile of the same kernel: kjitd keeps the first
    (files that belong together are never mixed), the second process keeps
    its own files in its own directory, and a later process gets the first's."""
    key = unique("second-put").ljust(64, "0")

    def run(cache_dir, *args):
        env = dict(os.environ, KJIT_SOCKET=daemon.socket, TRITON_CACHE_DIR=str(tmp_path / cache_dir),
                   KJIT_TRITON_NAMESPACE="triton-second-put")
        env.pop("KJIT_ADDRESS", None)
        done = subprocess.run([sys.executable, "-c", SECOND_PUT, key, *args], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-4000:]
        return done.stdout

    assert run("first", "put", "cubin of the first") == "cubin of the first"
    assert run("second", "put", "cubin of the second") == "cubin of the second"
    assert run("later", "get") == "cubin of the first k.cubin"
