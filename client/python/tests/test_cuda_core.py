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
    assert len(cache) == 1, "the long key's program; the first was deleted"
    cache.clear()
    assert len(cache) == 0
    assert cache  # truthy all the same
    # No daemon: a miss, never an error.
    gone = ProgramCache(str(Path(daemon.root) / "nobody.sock"), timeout=2)
    with pytest.raises(KeyError):
        gone[b"\x02" * 32]
    gone[b"\x02" * 32] = b"dropped"
    cache.close()


def test_len_and_clear_count_and_remove_this_caches_programs_alone(daemon, client):
    from kjit.cuda_core import ProgramCache
    mine = ProgramCache(daemon.socket, namespace=unique("cuda-core-len"), wait=0)
    other = ProgramCache(daemon.socket, namespace=unique("cuda-core-len"), wait=0)
    assert len(mine) == 0
    keys = [bytes([i]) * 32 for i in range(3)]
    for i, key in enumerate(keys):
        mine[key] = b"program %d" % i
    mine[keys[0]] = b"program 0"  # stored already: still one program
    other[keys[0]] = b"another's"
    # Another blob of the same namespace, not a program: neither counted nor removed.
    client.put_blob(mine.namespace, "not-a-program", "notes", b"x")
    assert len(mine) == 3 and len(other) == 1
    listed = client.cache_list(blob_namespace=mine.namespace)
    assert {e.blob_kind for e in listed if e.blob_name == "program"} == {"client-blob", "client-blob-group"}
    assert all(e.blob_namespace == mine.namespace for e in listed)
    assert len(listed) == 7, [(e.blob_kind, e.blob_key, e.blob_name) for e in listed]
    mine.clear()
    assert len(mine) == 0
    for key in keys:
        assert mine.get(key) is None
    assert other[keys[0]] == b"another's" and len(other) == 1
    assert client.get_blob(mine.namespace, "not-a-program", "notes") == b"x"
    assert [e.blob_name for e in client.cache_list(blob_namespace=mine.namespace)] == ["notes"]
    other.clear()
    # Through the TCP listener too, where the same caller is the operator.
    over_tcp = ProgramCache(daemon.tcp, namespace=other.namespace, wait=0)
    over_tcp[keys[1]] = b"tcp"
    assert len(over_tcp) == 1 and len(other) == 1
    over_tcp.clear()
    assert len(other) == 0
    for cache in (mine, other, over_tcp):
        cache.close()


def test_len_without_kjitd_raises(daemon):
    from kjit import KjitError
    from kjit.cuda_core import ProgramCache
    gone = ProgramCache(str(Path(daemon.root) / "nobody.sock"), timeout=2)
    with pytest.raises(KjitError):
        len(gone)
    with pytest.raises(KjitError):
        gone.clear()
