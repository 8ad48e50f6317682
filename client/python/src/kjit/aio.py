"""The asyncio client: kjit.Client's methods as coroutines, on grpc.aio.

    async with kjit.aio.Client() as client:
        result = await client.compile(source, target="cuda:90")

Create it inside the event loop it is used from.
"""

import asyncio
import os
from typing import Any, AsyncIterator, BinaryIO, Iterator, List, Mapping, Optional, Sequence, Union

import grpc
import grpc.aio

from kjit import _calls
from kjit._client import _Base
from kjit._errors import from_rpc_error
from kjit._request import Source
from kjit._types import (ReloadResult, BlobClaim, BlobGroup, CacheListing, CacheStats, CompileResult, DaemonStatus, DirectReadGrant,
                         ExplainResult, ExportResult, GcResult, ImportResult, PipelineDescription, PlanResult, Recipe, TritonBuild,
                         RecipeSummary, Seal, StoredBlob, StoredGroup, VerifyResult)

__all__ = ["Client"]


async def _read_aside(messages: Iterator) -> AsyncIterator:
    """messages, each read in the loop's executor: a bundle's file is read
    while the loop serves on."""
    loop = asyncio.get_running_loop()
    while True:
        message = await loop.run_in_executor(None, next, messages, None)
        if message is None:
            return
        yield message


class Client(_Base):
    """A connection to kjitd; the same arguments as kjit.Client. Each method
    is kjit.Client's, sending the same _calls.Call, awaited."""

    _grpc = grpc.aio

    async def _send(self, call: _calls.Call, timeout):
        try:
            response = await self._invoke(call, timeout)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        return call.result(response)

    async def _receive(self, call: _calls.Call, timeout):
        """See kjit.Client._receive."""
        stream = self._invoke(call, timeout)
        try:
            async for message in stream:
                call.result.take(message)
            return call.result.finish()
        except grpc.RpcError as error:
            call.result.abandon()
            raise from_rpc_error(error) from None
        except BaseException:
            stream.cancel()
            call.result.abandon()
            raise

    async def _hold(self, call: _calls.Call, wait: float, timeout):
        """See kjit.Client._hold."""
        stream = self._open(call)
        bound = self._answer_bound(wait, timeout)
        try:
            response = await asyncio.wait_for(stream.read(), bound)
        except asyncio.TimeoutError:
            stream.cancel()
            raise self._unanswered(bound) from None
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        if response is grpc.aio.EOF:
            raise self._ended()
        result = call.result(response)
        if result.outcome == "claimed":
            result._call = stream
        return result

    async def compile(self, source: Source, target: Union[str, Sequence[str], None] = None, kind: Any = None,
                      headers: Optional[Mapping[str, Any]] = None, options: Union[str, Sequence[str], None] = None,
                      name_expressions: Union[str, Sequence[str], None] = None, pipeline: Optional[str] = None,
                      artifact: Any = None, pass_args: Optional[Mapping[str, str]] = None, *,
                      name: Optional[str] = None, allow_ptx_fallback: bool = False,
                      triton_options: Optional[Mapping[str, Any]] = None, triton_build: Optional[str] = None,
                      triton_edits: Optional[Sequence[Mapping[str, Any]]] = None,
                      triton_plugins_off: Union[str, Sequence[str], None] = None,
                      timeout: Optional[float] = None) -> CompileResult:
        """See kjit.Client.compile."""
        return await self._send(_calls.compile(source, target, kind, headers, options, name_expressions, pipeline,
                                               artifact, pass_args, name=name, allow_ptx_fallback=allow_ptx_fallback,
                                               triton_options=triton_options, triton_build=triton_build,
                                               triton_edits=triton_edits, triton_plugins_off=triton_plugins_off),
                                timeout)

    async def describe_pipeline(self, kind: Any = "cuda", target: str = "", pipeline: str = "", *,
                                timeout: Optional[float] = None) -> PipelineDescription:
        """See kjit.Client.describe_pipeline."""
        return await self._send(_calls.describe_pipeline(kind, target, pipeline), timeout)

    async def plan(self, source, kernel: str, *, grid=1, block=1, cluster=None, dynamic_shared_bytes: int = 0,
                   cooperative: bool = False, programmatic_dependent_launch: bool = False, stream_priority: int = 0,
                   device_target: Optional[str] = None, timeout: Optional[float] = None,
                   **compile_args) -> PlanResult:
        """See kjit.Client.plan."""
        return await self._send(_calls.plan(
            source, kernel, grid=grid, block=block, cluster=cluster, dynamic_shared_bytes=dynamic_shared_bytes,
            cooperative=cooperative, programmatic_dependent_launch=programmatic_dependent_launch,
            stream_priority=stream_priority, device_target=device_target, **compile_args), timeout)

    async def triton_builds(self, *, timeout: Optional[float] = None) -> List[TritonBuild]:
        """See kjit.Client.triton_builds."""
        return await self._send(_calls.triton_builds(), timeout)

    async def stats(self, *, timeout: Optional[float] = None) -> CacheStats:
        """See kjit.Client.stats."""
        return await self._send(_calls.stats(), timeout)

    async def explain(self, a, b, *, timeout: Optional[float] = None, **compile_args) -> ExplainResult:
        """See kjit.Client.explain."""
        return await self._send(_calls.explain(a, b, **compile_args), timeout)

    async def cache_list(self, limit: int = 0, *, blob_namespace: Optional[str] = None,
                         timeout: Optional[float] = None) -> List[CacheListing]:
        """See kjit.Client.cache_list."""
        return await self._send(_calls.cache_list(limit, blob_namespace=blob_namespace), timeout)

    async def cache_remove(self, key: str, *, timeout: Optional[float] = None) -> None:
        return await self._send(_calls.cache_remove(key), timeout)

    async def cache_gc(self, max_bytes: int, *, timeout: Optional[float] = None) -> GcResult:
        """See kjit.Client.cache_gc."""
        return await self._send(_calls.cache_gc(max_bytes), timeout)

    async def cache_verify(self, *, timeout: Optional[float] = None) -> VerifyResult:
        return await self._send(_calls.cache_verify(), timeout)

    async def export_bundle(self, path_or_file: Union[str, "os.PathLike[str]", BinaryIO, None] = None, *,
                            namespace: Optional[str] = None, targets: Union[str, Sequence[str]] = (),
                            recipes_only: bool = False, timeout: Optional[float] = None) -> ExportResult:
        """See kjit.Client.export_bundle."""
        return await self._receive(_calls.export_bundle(path_or_file, namespace=namespace, targets=targets,
                                                        recipes_only=recipes_only), timeout)

    async def import_bundle(self, path_or_bytes_or_file: Union[str, "os.PathLike[str]", bytes, BinaryIO], *,
                            namespace: Optional[str] = None, timeout: Optional[float] = None) -> ImportResult:
        """See kjit.Client.import_bundle; the bundle is read in the loop's executor."""
        call = _calls.import_bundle(path_or_bytes_or_file, namespace=namespace)
        try:
            return await self._send(call._replace(request=_read_aside(call.request)), timeout)
        finally:
            call.request.close()

    async def put_blob(self, namespace: str, key: str, name: str, data: Union[bytes, str], *, replace: bool = False,
                       timeout: Optional[float] = None) -> StoredBlob:
        """See kjit.Client.put_blob."""
        return await self._send(_calls.put_blob(namespace, key, name, data, replace=replace), timeout)

    async def get_blob(self, namespace: str, key: str, name: str, *,
                       timeout: Optional[float] = None) -> Optional[bytes]:
        """See kjit.Client.get_blob."""
        return await self._send(_calls.get_blob(namespace, key, name), timeout)

    async def put_blob_group(self, namespace: str, key: str, group: str, names: Sequence[str], *,
                             timeout: Optional[float] = None) -> StoredGroup:
        """See kjit.Client.put_blob_group."""
        return await self._send(_calls.put_blob_group(namespace, key, group, names), timeout)

    async def get_blob_group(self, namespace: str, key: str, group: str, *,
                             timeout: Optional[float] = None) -> BlobGroup:
        """See kjit.Client.get_blob_group."""
        result = await self._send(_calls.get_blob_group(namespace, key, group), timeout)
        fetched = {name: await self.get_blob(namespace, key, name, timeout=timeout) for name in result.deferred}
        return _calls.add_deferred(result, fetched)

    async def claim_blob_group(self, namespace: str, key: str, group: str, wait: float = 0.0, *,
                               timeout: Optional[float] = None) -> BlobClaim:
        """See kjit.Client.claim_blob_group."""
        result = await self._hold(_calls.claim_blob_group(namespace, key, group, wait), wait, timeout)
        if result.group is not None and result.group.deferred:
            fetched = {name: await self.get_blob(namespace, key, name, timeout=timeout)
                       for name in result.group.deferred}
            _calls.add_deferred(result.group, fetched)
        return result

    async def release_blob_claim(self, claim_id: str, failed: bool = False, *,
                                 timeout: Optional[float] = None) -> bool:
        """See kjit.Client.release_blob_claim."""
        return await self._send(_calls.release_blob_claim(claim_id, failed), timeout)

    async def direct_read_grant(self, *, timeout: Optional[float] = None) -> DirectReadGrant:
        """See kjit.Client.direct_read_grant."""
        return await self._send(_calls.direct_read_grant(), timeout)

    async def recipes(self, namespace: Optional[str] = None, since: Any = None, limit: int = 0, *,
                      timeout: Optional[float] = None) -> List[RecipeSummary]:
        """See kjit.Client.recipes."""
        return await self._send(_calls.recipes(namespace, since, limit), timeout)

    async def recipe(self, digest: str, namespace: Optional[str] = None, *,
                     timeout: Optional[float] = None) -> Recipe:
        """See kjit.Client.recipe."""
        return await self._send(_calls.recipe(digest, namespace), timeout)

    async def remove_recipe(self, digest: str, namespace: Optional[str] = None, *,
                            timeout: Optional[float] = None) -> bool:
        """See kjit.Client.remove_recipe."""
        return await self._send(_calls.remove_recipe(digest, namespace), timeout)

    async def seal(self, namespace: Optional[str] = None, mode: Optional[str] = None, *,
                   timeout: Optional[float] = None) -> List[Seal]:
        """See kjit.Client.seal."""
        return await self._send(_calls.seal(namespace, mode), timeout)

    async def unseal(self, namespace: Optional[str] = None, *, timeout: Optional[float] = None) -> List[Seal]:
        """See kjit.Client.unseal."""
        return await self._send(_calls.unseal(namespace), timeout)

    async def health(self, service: str = "", *, timeout: Optional[float] = None) -> str:
        """See kjit.Client.health."""
        return await self._send(_calls.health(service), timeout)

    async def status(self, *, timeout: Optional[float] = None) -> DaemonStatus:
        """See kjit.Client.status."""
        return await self._send(_calls.status(), timeout)

    async def reload(self, *, timeout: Optional[float] = None) -> ReloadResult:
        """See kjit.Client.reload."""
        return await self._send(_calls.reload(), timeout)

    async def echo(self, payload: bytes = b"", *, timeout: Optional[float] = None) -> bytes:
        return await self._send(_calls.echo(payload), timeout)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
