"""Recipes, the warm-up seal and cache bundles against real kjitds: what a
compile leaves behind, built again for another target; a seal that refuses
misses and serves hits; a bundle of one daemon's cache that makes a fresh
daemon's compiles hits."""

import asyncio
import datetime
import hashlib
import time

import pytest

import kjit
import kjit.aio
from conftest import Daemon, unique
from test_compile import ELF_MAGIC, TARGET, vector_add

# Recipes are recorded off the compile's path, by a thread of the daemon.
RECORDED_SECONDS = 30
HEADER = {"tile.h": "#define TILE 4\n"}
OPTIONS = ["-DX=1"]


def source_of(name: str) -> str:
    return '#include "tile.h"\n' + vector_add(name)


def compile_args(name: str) -> dict:
    return dict(source=source_of(name), headers=HEADER, options=OPTIONS, name=name + ".cu")


def recorded(client, names, **listing):
    """The recipes of the kernels named, by input name, once the daemon has recorded them all."""
    wanted = {name + ".cu" for name in names}
    deadline = time.monotonic() + RECORDED_SECONDS
    while True:
        found = {r.input_name: r for r in client.recipes(**listing) if r.input_name in wanted}
        if set(found) == wanted or time.monotonic() > deadline:
            assert set(found) == wanted, "recipes recorded: %s" % sorted(found)
            return found
        time.sleep(0.05)


@pytest.fixture
def fresh(tmp_path):
    """Starts daemons of their own (one to seal, empty caches), stopped after the test."""
    started = []

    def start(tag, args=()):
        d = Daemon(tmp_path / tag, args)
        d.root.mkdir()
        d.start()
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


def test_compiles_are_kept_as_recipes_that_build_for_another_target(client):
    names = [unique("recipe"), unique("recipe")]
    for name in names:
        assert client.compile(**compile_args(name), target=TARGET).cache == "compiled"
    found = recorded(client, names)
    first, second = (found[name + ".cu"] for name in names)
    assert len(first.digest) == 64 and first.digest != second.digest
    assert (first.input_kind, first.artifact, first.last_target) == ("cuda-source", "cubin", TARGET)
    assert first.bytes > len(source_of(names[0])) and first.last_asked_unix >= first.created_unix > 0
    assert len(client.recipes(limit=1)) == 1
    tomorrow = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    assert client.recipes(since=tomorrow) == []
    assert first.digest in [r.digest for r in client.recipes(since=first.last_asked_unix)]

    recipe = client.recipe(first.digest)
    assert recipe.summary.digest == first.digest and recipe.summary.input_name == names[0] + ".cu"
    assert (recipe.kind, recipe.name, recipe.options) == ("cuda-source", names[0] + ".cu", OPTIONS)
    assert recipe.source == source_of(names[0]).encode() and recipe.headers == {"tile.h": HEADER["tile.h"].encode()}
    assert recipe.name_expressions == [] and recipe.artifact == ""

    # Built for another target from what the recipe holds: the same request
    # for that target is then a hit.
    other = client.compile(**recipe.compile_args, target="cuda:100")
    assert other.cache == "compiled" and other.target == "cuda:100" and other.artifact.startswith(ELF_MAGIC)
    again = client.compile(**compile_args(names[0]), target="cuda:100")
    assert again.cache == "memory" and again.key == other.key

    assert client.remove_recipe(second.digest) is True
    assert client.remove_recipe(second.digest) is False
    assert second.digest not in [r.digest for r in client.recipes()]
    with pytest.raises(kjit.NotFound):
        client.recipe(second.digest)
    with pytest.raises(kjit.InvalidArgument) as caught:
        client.recipe("not-a-digest")
    assert "64 lowercase hex" in caught.value.details


def test_a_seal_that_refuses_refuses_a_miss_and_serves_a_hit(fresh, tmp_path):
    token = "tenant-token-for-seals"
    tenants = tmp_path / "tenants.toml"
    tenants.write_text('[[tenants]]\nname = "alpha"\ntoken_sha256 = "%s"\n' % hashlib.sha256(token.encode()).hexdigest())
    d = fresh("sealed", ["--tenants", str(tenants)])
    warmed, cold = vector_add(unique("warmed")), vector_add(unique("cold"))
    with kjit.Client(d.socket) as client, kjit.Client(d.socket, token=token) as tenant:
        assert client.compile(warmed, target=TARGET).cache == "compiled"
        seals = client.seal(mode="refuse")
        assert len(seals) == 1 and seals[0].all_namespaces and seals[0].after_warmup == "refuse"
        assert seals[0].sealed_unix > 0

        assert client.compile(warmed, target=TARGET).cache == "memory"
        with pytest.raises(kjit.FailedPrecondition) as caught:
            client.compile(cold, target=TARGET)
        assert "sealed" in caught.value.details and "refuse" in caught.value.details

        # The operator's alone; a tenant reaches its own recipes alone.
        with pytest.raises(kjit.PermissionDenied):
            tenant.unseal()
        with pytest.raises(kjit.PermissionDenied):
            tenant.recipes(namespace="another")
        with pytest.raises(ValueError):
            client.seal(mode="sometimes")

        assert client.unseal() == []
        assert client.compile(cold, target=TARGET).cache == "compiled"
        # One namespace's seal, and its lifting.
        [one] = client.seal("alpha", mode="warn")
        assert (one.all_namespaces, one.namespace, one.after_warmup) == (False, "alpha", "warn")
        assert client.unseal("alpha") == []


def test_a_bundle_makes_a_fresh_daemons_compiles_hits(fresh, tmp_path):
    first, second = fresh("first"), fresh("second")
    names = [unique("bundled"), unique("bundled")]
    with kjit.Client(first.socket) as a, kjit.Client(second.socket) as b:
        for name in names:
            assert a.compile(**compile_args(name), target=TARGET).cache == "compiled"
        a.put_blob("triton", "K", "k.cubin", b"\0blob bytes")
        recorded(a, names)

        path = tmp_path / "cache.kjb"
        exported = a.export_bundle(path)
        assert (exported.entries, exported.blobs, exported.recipes) == (2, 1, 2)
        assert exported.bytes == path.stat().st_size and exported.data is None
        assert not (tmp_path / "cache.kjb.partial").exists()
        assert path.read_bytes().startswith(b"KJITBNDL")

        imported = b.import_bundle(path)
        assert (imported.entries_imported, imported.blobs_imported, imported.recipes_imported) == (2, 1, 2)
        assert imported.skipped == 0 and imported.skips == [] and imported.namespace == ""
        assert imported.entry_format > 0 and imported.bundle_bytes == exported.bytes
        assert any(t.startswith("toolchain.nvrtc ") for t in imported.toolchains), imported.toolchains
        for name in names:
            hit = b.compile(**compile_args(name), target=TARGET)
            assert hit.cache_hit and hit.cache == "memory", hit.cache
        assert b.get_blob("triton", "K", "k.cubin") == b"\0blob bytes"
        assert sorted(r.input_name for r in b.recipes()) == sorted(name + ".cu" for name in names)

        # Again, as bytes: everything is there already, and stays.
        bundle = a.export_bundle().data
        assert bundle is not None and len(bundle) == exported.bytes
        twice = b.import_bundle(bundle)
        assert twice.entries_imported + twice.blobs_imported + twice.recipes_imported == 0
        assert twice.skipped_for("already there (kept)") == 3
        assert twice.skipped_for("recipe already there (kept)") == 2
        assert twice.skipped == 5 and all(s.example for s in twice.skips)

        # A target filter, recipes alone.
        only = a.export_bundle(targets="cuda:80")
        assert (only.entries, only.blobs, only.recipes) == (0, 0, 2)
        assert a.export_bundle(recipes_only=True).recipes == 2
        with pytest.raises(kjit.InvalidArgument):
            a.export_bundle(targets=["cuda:nine"])

        # Damaged, or not a bundle at all: refused, and the daemon serves on.
        flipped = bytearray(bundle)
        flipped[len(flipped) // 2] ^= 0x10
        for bad in (bytes(flipped), b"#!/bin/sh\n"):
            with pytest.raises(kjit.InvalidArgument):
                b.import_bundle(bad)
        # Another entry format: refused before any record.
        other_format = bytearray(bundle)
        other_format[12] = (other_format[12] - 1) % 256
        with pytest.raises(kjit.FailedPrecondition) as caught:
            b.import_bundle(bytes(other_format))
        assert "bundle entry format" in caught.value.details
        assert b.health() == "SERVING"


def test_the_aio_client_exports_and_imports_a_bundle(fresh, tmp_path):
    first, second = fresh("first"), fresh("second")
    name = unique("aio_bundled")

    async def main():
        async with kjit.aio.Client(first.socket) as a, kjit.aio.Client(second.socket) as b:
            assert (await a.compile(**compile_args(name), target=TARGET)).cache == "compiled"
            deadline = time.monotonic() + RECORDED_SECONDS
            while not [r for r in await a.recipes() if r.input_name == name + ".cu"]:
                assert time.monotonic() < deadline, "no recipe recorded"
                await asyncio.sleep(0.05)
            with open(tmp_path / "cache.kjb", "wb") as f:
                exported = await a.export_bundle(f, recipes_only=False)
            with open(tmp_path / "cache.kjb", "rb") as f:
                imported = await b.import_bundle(f)
            hit = await b.compile(**compile_args(name), target=TARGET)
            again = await b.import_bundle(tmp_path / "cache.kjb")
            with pytest.raises(kjit.InvalidArgument):  # cut short
                await b.import_bundle((tmp_path / "cache.kjb").read_bytes()[:-5])
            [recipe] = [r for r in await b.recipes() if r.input_name == name + ".cu"]
            return exported, imported, hit, again, await b.recipe(recipe.digest)

    exported, imported, hit, again, recipe = asyncio.run(main())
    assert (exported.entries, exported.recipes) == (1, 1) and exported.bytes == (tmp_path / "cache.kjb").stat().st_size
    assert (imported.entries_imported, imported.recipes_imported, imported.skipped) == (1, 1, 0)
    assert hit.cache == "memory"
    assert again.skipped == 2 and again.entries_imported + again.recipes_imported == 0
    assert recipe.source == source_of(name).encode()
