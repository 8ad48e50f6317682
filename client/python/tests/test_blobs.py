"""Client blobs: put_blob, get_blob, put_blob_group, get_blob_group, and their counters."""

import asyncio

import pytest

import kjit
from conftest import unique


def test_put_get_and_a_miss(client):
    ns = unique("ns")
    data = bytes(range(256)) * 100
    cache_key = client.put_blob(ns, "K", "k.cubin", data)
    assert cache_key.endswith("-blob") and len(cache_key) == 69
    assert client.get_blob(ns, "K", "k.cubin") == data
    assert client.get_blob(ns, "K", "k.ptx") is None
    client.put_blob(ns, "K", "k.ptx", "// text is stored as UTF-8 \u00e9")
    assert client.get_blob(ns, "K", "k.ptx") == "// text is stored as UTF-8 \u00e9".encode()


def test_a_group_in_one_call(client):
    ns = unique("ns")
    client.put_blob(ns, "K", "a.cubin", b"\x7fELF")
    client.put_blob(ns, "K", "a.json", "{}")
    client.put_blob_group(ns, "K", "a.json", ["a.cubin", "a.json"])
    group = client.get_blob_group(ns, "K", "a.json")
    assert group.complete
    assert group.members == {"a.cubin": b"\x7fELF", "a.json": b"{}"}
    client.put_blob_group(ns, "K", "partial", ["a.cubin", "gone"])
    partial = client.get_blob_group(ns, "K", "partial")
    assert partial.found and not partial.complete and partial.missing == ["gone"]
    absent = client.get_blob_group(ns, "K", "absent")
    assert not absent.found and not absent.complete


@pytest.mark.parametrize("name", ["", "a/b", "..", "x\0y", "n" * 257])
def test_bad_names_are_refused(client, name):
    with pytest.raises(kjit.InvalidArgument):
        client.put_blob("ns", "K", name, b"x")


def test_blobs_are_counted_apart(client):
    ns = unique("ns")
    before = client.stats()
    client.put_blob(ns, "K", "a", b"abc")
    client.get_blob(ns, "K", "a")
    client.get_blob(ns, "K", "b")
    after = client.stats()
    assert after.blobs.puts - before.blobs.puts == 1
    assert after.blobs.put_bytes - before.blobs.put_bytes == 3
    assert after.blobs.hits - before.blobs.hits == 1
    assert after.blobs.misses - before.blobs.misses == 1
    assert after.lookups == before.lookups and after.misses == before.misses


def test_the_asyncio_client(daemon):
    ns = unique("ns")

    async def go():
        async with kjit.aio.Client(daemon.socket) as client:
            await client.put_blob(ns, "K", "a", b"1")
            await client.put_blob_group(ns, "K", "g", ["a"])
            assert await client.get_blob(ns, "K", "a") == b"1"
            assert (await client.get_blob_group(ns, "K", "g")).members == {"a": b"1"}

    asyncio.run(go())
