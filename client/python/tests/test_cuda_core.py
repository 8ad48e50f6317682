"""kjit.cuda_core.ProgramCache with NVIDIA's real cuda.core, no GPU needed
(Program.compile for an explicit arch stops at the cubin): processes started
together compile each program once among them and get identical cubins; a
compile that raises hands its claim on at once, so processes that all fail
never wait out their bound; a later process compiles nothing."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import unique

core = pytest.importorskip("cuda.core", reason="cuda-core is not installed (client/python/run-tests.sh installs it)")

CHILD = Path(__file__).with_name("cuda_core_child.py")
CHILD_SECONDS = 300


@pytest.fixture(scope="module", autouse=True)
def nvrtc():
    try:
        core.Program('extern "C" __global__ void k() {}', "c++", core.ProgramOptions(arch="sm_90")).compile("cubin")
    except Exception as error:  # noqa: BLE001
        pytest.skip("NVRTC cannot compile here: %s" % error)


def start(daemon, namespace, *args):
    env = dict(os.environ, KJIT_SOCKET=daemon.socket, KJIT_CUDA_CORE_NAMESPACE=namespace,
               KJIT_CUDA_CORE_CLAIM_WAIT="600")
    env.pop("KJIT_ADDRESS", None)
    return subprocess.Popen([sys.executable, str(CHILD), *map(str, args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(process) -> dict:
    stdout, stderr = process.communicate(timeout=CHILD_SECONDS)
    assert process.returncode == 0, stderr[-4000:]
    return json.loads(stdout)


def test_processes_started_together_compile_each_program_once(daemon):
    namespace = unique("cuda-core")
    results = [finish(p) for p in [start(daemon, namespace, 6) for _ in range(3)]]
    assert sum(r["compiles"] for r in results) == 6, [r["compiles"] for r in results]
    assert all(r["failed"] == 0 and len(r["cubins"]) == 6 for r in results)
    assert all(r["cubins"] == results[0]["cubins"] for r in results)
    # Later, alone: everything from kjitd.
    later = finish(start(daemon, namespace, 6))
    assert later["compiles"] == 0 and later["cubins"] == results[0]["cubins"]


def test_compiles_that_raise_hand_their_claims_on(daemon):
    """Every process fails every program: each takes the claim in turn and
    gives it up as its compile raises; none waits out its 600 s bound."""
    namespace = unique("cuda-core-fail")
    began = time.monotonic()
    results = [finish(p) for p in [start(daemon, namespace, 3, "--fail") for _ in range(3)]]
    assert all(r["failed"] == 3 and r["compiles"] == 0 for r in results)
    assert time.monotonic() - began < 60


def test_the_cache_api(daemon, monkeypatch):
    from kjit.cuda_core import ProgramCache
    cache = ProgramCache(daemon.socket, namespace=unique("cuda-core-api"), wait=0)
    with pytest.raises(KeyError):
        cache[b"\x01" * 32]
    assert cache.get(b"\x01" * 32) is None
    cache[b"\x01" * 32] = b"bytes"
    assert cache[b"\x01" * 32] == b"bytes"
    assert cache["\x01" * 32] == b"bytes", "a str key is its UTF-8 bytes"
    del cache[b"\x01" * 32]
    with pytest.raises(KeyError):
        cache[b"\x01" * 32]
    with pytest.raises(KeyError):
        del cache[b"\x01" * 32]
    long_key = b"k" * 500  # past a blob key's 256 bytes: hashed
    cache[long_key] = b"long"
    assert cache[long_key] == b"long"
    with pytest.raises(NotImplementedError):
        len(cache)
    assert cache  # truthy all the same
    # No daemon: a miss, never an error.
    gone = ProgramCache(str(Path(daemon.root) / "nobody.sock"), timeout=2)
    with pytest.raises(KeyError):
        gone[b"\x02" * 32]
    gone[b"\x02" * 32] = b"dropped"
    cache.close()
