"""The asyncio client: kjit.Client's methods as coroutines, on grpc.aio.

    async with kjit.aio.Client() as client:
        result = await client.compile(source, target="cuda:90")

Create it inside the event loop it is used from.
"""

from typing import Any, List, Mapping, Optional, Sequence, Union

import grpc
import grpc.aio

from kjit import _health
from kjit._client import _Base, _blob_bytes
from kjit._errors import from_rpc_error
from kjit._request import Request, Source, explain_request, parse_kind, plan_request
from kjit._types import (BlobGroup, CacheListing, CacheStats, CompileResult, DaemonStatus, ExplainResult, GcResult,
                         PipelineDescription, PlanResult, VerifyResult, convert)
from kjit.v1 import cache_pb2, compiler_pb2, diagnostics_pb2

__all__ = ["Client"]


class Client(_Base):
    """A connection to kjitd; the same arguments as kjit.Client."""

    _grpc = grpc.aio

    async def _call(self, method, request, timeout):
        try:
            return await method(request, timeout=self._timeout(timeout), metadata=self._metadata)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None

    async def compile(self, source: Source, target: Union[str, Sequence[str], None] = None, kind: Any = None,
                      headers: Optional[Mapping[str, Any]] = None, options: Union[str, Sequence[str], None] = None,
                      name_expressions: Union[str, Sequence[str], None] = None, pipeline: Optional[str] = None,
                      artifact: Any = None, pass_args: Optional[Mapping[str, str]] = None, *,
                      name: Optional[str] = None, allow_ptx_fallback: bool = False,
                      timeout: Optional[float] = None) -> CompileResult:
        """See kjit.Client.compile."""
        request = Request(source, target, kind, headers, options, name_expressions, pipeline, artifact, pass_args,
                          name, allow_ptx_fallback).to_proto()
        return convert(CompileResult, await self._call(self._compiler.Compile, request, timeout))

    async def describe_pipeline(self, kind: Any = "cuda", target: str = "", pipeline: str = "", *,
                                timeout: Optional[float] = None) -> PipelineDescription:
        request = compiler_pb2.DescribePipelineRequest(input_kind=parse_kind(kind), target=target, pipeline=pipeline)
        return convert(PipelineDescription, await self._call(self._compiler.DescribePipeline, request, timeout))

    async def plan(self, source, kernel: str, *, grid=1, block=1, cluster=None, dynamic_shared_bytes: int = 0,
                   cooperative: bool = False, programmatic_dependent_launch: bool = False, stream_priority: int = 0,
                   device_target: Optional[str] = None, timeout: Optional[float] = None,
                   **compile_args) -> PlanResult:
        """See kjit.Client.plan."""
        config = dict(grid=grid, block=block, cluster=cluster, dynamic_shared_bytes=dynamic_shared_bytes,
                      cooperative=cooperative, programmatic_dependent_launch=programmatic_dependent_launch,
                      stream_priority=stream_priority)
        request = plan_request(source, kernel, config, compile_args, device_target)
        return convert(PlanResult, await self._call(self._launcher.PlanLaunch, request, timeout))

    async def stats(self, *, timeout: Optional[float] = None) -> CacheStats:
        return convert(CacheStats, await self._call(self._cache.Stats, cache_pb2.StatsRequest(), timeout))

    async def explain(self, a, b, *, timeout: Optional[float] = None, **compile_args) -> ExplainResult:
        """See kjit.Client.explain."""
        request = explain_request(a, b, compile_args)
        return convert(ExplainResult, await self._call(self._cache.Explain, request, timeout))

    async def cache_list(self, limit: int = 0, *, timeout: Optional[float] = None) -> List[CacheListing]:
        response = await self._call(self._cache.List, cache_pb2.ListRequest(limit=limit), timeout)
        return [convert(CacheListing, e) for e in response.entries]

    async def cache_remove(self, key: str, *, timeout: Optional[float] = None) -> None:
        await self._call(self._cache.Remove, cache_pb2.RemoveRequest(key=key), timeout)

    async def cache_gc(self, max_bytes: int, *, timeout: Optional[float] = None) -> GcResult:
        return convert(GcResult, await self._call(self._cache.Gc, cache_pb2.GcRequest(max_bytes=max_bytes), timeout))

    async def cache_verify(self, *, timeout: Optional[float] = None) -> VerifyResult:
        return convert(VerifyResult, await self._call(self._cache.Verify, cache_pb2.VerifyRequest(), timeout))

    async def put_blob(self, namespace: str, key: str, name: str, data, *, timeout: Optional[float] = None) -> str:
        """See kjit.Client.put_blob."""
        request = cache_pb2.PutBlobRequest(namespace=namespace, key=key, name=name, data=_blob_bytes(data))
        return (await self._call(self._cache.PutBlob, request, timeout)).cache_key

    async def get_blob(self, namespace: str, key: str, name: str, *,
                       timeout: Optional[float] = None) -> Optional[bytes]:
        request = cache_pb2.GetBlobRequest(namespace=namespace, key=key, name=name)
        response = await self._call(self._cache.GetBlob, request, timeout)
        return bytes(response.data) if response.found else None

    async def put_blob_group(self, namespace: str, key: str, group: str, names: Sequence[str], *,
                             timeout: Optional[float] = None) -> None:
        request = cache_pb2.PutBlobGroupRequest(namespace=namespace, key=key, group=group, names=list(names))
        await self._call(self._cache.PutBlobGroup, request, timeout)

    async def get_blob_group(self, namespace: str, key: str, group: str, *,
                             timeout: Optional[float] = None) -> BlobGroup:
        """See kjit.Client.get_blob_group."""
        request = cache_pb2.GetBlobGroupRequest(namespace=namespace, key=key, group=group)
        result = convert(BlobGroup, await self._call(self._cache.GetBlobGroup, request, timeout))
        for name in result.deferred:
            data = await self.get_blob(namespace, key, name, timeout=timeout)
            if data is None:
                result.missing.append(name)
            else:
                result.members[name] = data
        result.deferred = []
        return result

    async def health(self, service: str = "", *, timeout: Optional[float] = None) -> str:
        response = await self._call(self._health_check, _health.HealthCheckRequest(service=service), timeout)
        return _health.status_name(response)

    async def status(self, *, timeout: Optional[float] = None) -> DaemonStatus:
        response = await self._call(self._diagnostics.GetStatus, diagnostics_pb2.GetStatusRequest(), timeout)
        return convert(DaemonStatus, response)

    async def echo(self, payload: bytes = b"", *, timeout: Optional[float] = None) -> bytes:
        response = await self._call(self._diagnostics.Echo, diagnostics_pb2.EchoRequest(payload=payload), timeout)
        return bytes(response.payload)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
