"""kjit.aio.Client against the real kjitd."""

import asyncio

import grpc
import pytest

import kjit
import kjit.aio
from conftest import unique
from test_compile import ELF_MAGIC, TARGET, vector_add


def test_the_aio_client_does_what_the_sync_one_does(daemon):
    async def main():
        async with kjit.aio.Client(daemon.socket) as client:
            assert await client.health() == "SERVING"
            name = unique("aio")
            source = vector_add(name)
            before = await client.stats()
            first = await client.compile(source, target=TARGET)
            second = await client.compile(source, target=TARGET)
            after = await client.stats()
            plan = await client.plan(first, name, block=128)
            explained = await client.explain(first.key, second.key)
            status = await client.status()
            with pytest.raises(kjit.InvalidArgument) as caught:
                await client.compile("__global__ void k( {", target=TARGET, name="bad.cu")
            return before, first, second, after, plan, explained, status, caught.value, name

    before, first, second, after, plan, explained, status, error, name = asyncio.run(main())
    assert first.artifact.startswith(ELF_MAGIC) and first.kernels[0].name == name
    assert (first.cache, second.cache) == ("compiled", "memory")
    assert after.compiles - before.compiles == 1
    assert plan.plan.block == kjit.Dim3(128, 1, 1) and plan.key == first.key
    assert explained.same
    assert status.version
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT and "bad.cu" in error.log


def test_concurrent_identical_compiles_compile_once(daemon):
    source = vector_add(unique("together"))

    async def main():
        async with kjit.aio.Client(daemon.socket) as client:
            before = await client.stats()
            results = await asyncio.gather(*(client.compile(source, target=TARGET) for _ in range(4)))
            return before, results, await client.stats()

    before, results, after = asyncio.run(main())
    assert len({r.key for r in results}) == 1
    assert all(r.artifact == results[0].artifact for r in results)
    assert after.compiles - before.compiles == 1
    assert sorted(r.cache for r in results).count("compiled") == 1


def test_the_aio_client_reports_an_absent_daemon(tmp_path):
    async def main():
        async with kjit.aio.Client(str(tmp_path / "nobody.sock"), timeout=5) as client:
            await client.health()

    with pytest.raises(kjit.Unavailable):
        asyncio.run(main())
