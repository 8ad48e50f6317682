"""kjit.cuda_core.ProgramCache against cuda.core's ProgramCacheResource
contract, with cuda.core's own InMemoryProgramCache run side by side as the
reference: each public method (__getitem__, __setitem__, __delitem__,
__len__, clear, get, update, close and the context manager) gives the same
answer or raises the same error, overwrites and key and value types
included. A real kjitd; no GPU and no NVRTC needed (ObjectCode is made from
bytes)."""

import subprocess
import sys
import threading

import pytest

from conftest import unique

core = pytest.importorskip("cuda.core", reason="cuda-core is not installed (client/python/run-tests.sh installs it)")
from cuda.core import ObjectCode  # noqa: E402
from cuda.core.utils import InMemoryProgramCache  # noqa: E402


@pytest.fixture
def caches(daemon):
    from kjit.cuda_core import ProgramCache
    ours = ProgramCache(daemon.socket, namespace=unique("contract"), wait=0)
    yield ours, InMemoryProgramCache()
    ours.close()


def outcome(call):
    """What a call did, comparable across the two caches: its value, or the
    type and message of what it raised."""
    try:
        return ("returned", call())
    except Exception as error:  # noqa: BLE001
        return ("raised", type(error), str(error))


def same(caches, call):
    """call(cache) on both; the outcomes must be equal. Returns ours."""
    ours, reference = caches
    got, expected = outcome(lambda: call(ours)), outcome(lambda: call(reference))
    assert got == expected
    return got


def setitem(key, value):
    def call(cache):
        cache[key] = value
    return call


def delitem(key):
    def call(cache):
        del cache[key]
    return call


def test_every_method_answers_as_cuda_cores_in_memory_cache(caches, tmp_path):
    key = b"\x01" * 32
    assert same(caches, lambda c: c[key])[1] is KeyError
    assert same(caches, lambda c: c.get(key)) == ("returned", None)
    assert same(caches, lambda c: c.get(key, b"default")) == ("returned", b"default")
    assert same(caches, len) == ("returned", 0)
    same(caches, delitem(key))  # KeyError on both

    for value in (b"bytes", bytearray(b"a bytearray"), memoryview(b"a memoryview"),
                  ObjectCode.from_cubin(b"\x7fELF an ObjectCode")):
        same(caches, setitem(key, value))
        stored = same(caches, lambda c: c[key])
        assert stored == ("returned", bytes(value.code if isinstance(value, ObjectCode) else value))
        assert type(stored[1]) is bytes
    path = tmp_path / "k.cubin"
    path.write_bytes(b"\x7fELF read from a file")
    same(caches, setitem(key, ObjectCode.from_cubin(str(path))))
    path.write_bytes(b"changed after the store")
    assert same(caches, lambda c: c[key]) == ("returned", b"\x7fELF read from a file")

    # One entry under its str, bytes and bytearray spellings.
    same(caches, setitem("k\u00e9y", b"by str"))
    assert same(caches, lambda c: c["k\u00e9y".encode("utf-8")]) == ("returned", b"by str")
    assert same(caches, lambda c: c[bytearray("k\u00e9y".encode("utf-8"))]) == ("returned", b"by str")
    long_key = b"L" * 500
    same(caches, setitem(long_key, b"long"))
    assert same(caches, lambda c: c[long_key]) == ("returned", b"long")
    assert same(caches, len) == ("returned", 3)

    same(caches, lambda c: c.update({b"u1": b"one", "u2": bytearray(b"two")}))
    same(caches, lambda c: c.update([(b"u3", b"three"), (b"u1", b"one again")]))
    assert same(caches, lambda c: [c[k] for k in (b"u1", b"u2", b"u3")]) == (
        "returned", [b"one again", b"two", b"three"])
    assert same(caches, len) == ("returned", 6)

    same(caches, delitem("u2"))
    assert same(caches, lambda c: c.get(b"u2")) == ("returned", None)
    assert same(caches, delitem(b"u2"))[1] is KeyError
    assert same(caches, len) == ("returned", 5)
    same(caches, lambda c: c.clear())
    assert same(caches, len) == ("returned", 0)
    assert same(caches, lambda c: c.get(key)) == ("returned", None)


def test_a_store_replaces_the_value_for_every_reader(caches, daemon, client):
    ours, _ = caches
    key = b"\x02" * 32
    same(caches, setitem(key, b"xxx"))
    same(caches, setitem(key, b"yyy"))
    assert same(caches, lambda c: c[key]) == ("returned", b"yyy")
    same(caches, setitem(key, ObjectCode.from_cubin(b"zzz, longer than before")))
    assert same(caches, lambda c: c[key]) == ("returned", b"zzz, longer than before")
    same(caches, setitem(key, b"short"))
    assert same(caches, len) == ("returned", 1)

    # A new handle, a raw get and another process see the new value.
    from kjit.cuda_core import ProgramCache, _key_text
    fresh = ProgramCache(daemon.socket, namespace=ours.namespace, wait=0)
    assert fresh[key] == b"short"
    assert client.get_blob(ours.namespace, _key_text(key), "program") == b"short"
    script = ("import sys; from kjit.cuda_core import ProgramCache; "
              "sys.stdout.buffer.write(ProgramCache(sys.argv[1], namespace=sys.argv[2], wait=0)[bytes(32 * [2])])")
    def other_process():
        return subprocess.run([sys.executable, "-c", script, daemon.socket, ours.namespace], capture_output=True,
                              check=True, timeout=60).stdout
    assert other_process() == b"short"
    fresh[key] = b"stored by another handle"
    assert ours[key] == b"stored by another handle"
    assert other_process() == b"stored by another handle"
    fresh.close()


def test_readers_get_the_old_value_or_the_new_never_a_mix(caches, daemon):
    from kjit.cuda_core import ProgramCache
    ours, _ = caches
    key = b"\x03" * 32
    values = [bytes([i]) * (200_000 + i) for i in (0xA1, 0xB2)]
    ours[key] = values[0]
    stop, failures = threading.Event(), []

    def read():
        reader = ProgramCache(daemon.socket, namespace=ours.namespace, wait=0)
        try:
            while not stop.is_set():
                got = reader[key]
                if got not in values:
                    failures.append(got[:8] + b"... of %d bytes" % len(got))
        except Exception as error:  # noqa: BLE001
            failures.append(repr(error))
        finally:
            reader.close()

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    for i in range(40):
        ours[key] = values[i % 2]
    stop.set()
    for t in readers:
        t.join()
    assert failures == []
    assert ours[key] == values[1]


@pytest.mark.parametrize("key", [123, 10 ** 12, memoryview(b"k"), None, 1.5, (b"k",)],
                         ids=["int", "huge-int", "memoryview", "None", "float", "tuple"])
def test_a_key_that_is_not_bytes_or_str_is_a_type_error_naming_its_type(caches, key):
    for call in (lambda c: c[key], setitem(key, b"v"), delitem(key), lambda c: c.get(key)):
        raised = same(caches, call)
        assert raised[:2] == ("raised", TypeError)
        assert type(key).__name__ in raised[2]
    assert same(caches, len) == ("returned", 0)


def test_an_int_key_is_not_the_entry_of_that_many_nul_bytes(caches):
    same(caches, setitem(b"\0" * 5, b"five NULs"))
    assert same(caches, lambda c: c[5])[:2] == ("raised", TypeError)
    assert same(caches, lambda c: c.get(b"\0" * 5)) == ("returned", b"five NULs")


@pytest.mark.parametrize("value", [3, "text", None, [1, 2], 2.5], ids=["int", "str", "None", "list", "float"])
def test_a_value_that_is_not_bytes_like_or_object_code_is_a_type_error(caches, value):
    raised = same(caches, setitem(b"k" * 32, value))
    assert raised[:2] == ("raised", TypeError)
    assert "bytes-like or ObjectCode" in raised[2] and type(value).__name__ in raised[2]
    assert same(caches, lambda c: c.get(b"k" * 32)) == ("returned", None)
    assert same(caches, lambda c: c.update({b"u": value}))[:2] == ("raised", TypeError)
    assert same(caches, len) == ("returned", 0)


def test_the_context_manager_closes_and_a_closed_cache_reconnects(caches):
    ours, reference = caches
    for cache in caches:
        with cache as entered:
            assert entered is cache
            cache[b"ctx"] = b"in the block"
    assert ours[b"ctx"] == reference[b"ctx"] == b"in the block"
