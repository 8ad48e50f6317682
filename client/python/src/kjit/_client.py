"""The blocking client."""

import os
from typing import Any, List, Mapping, Optional, Sequence, Union

import grpc

from kjit import _health
from kjit._errors import from_rpc_error
from kjit._request import (CHANNEL_OPTIONS, DEFAULT_TIMEOUT, Request, Source, call_metadata, channel_credentials,
                           channel_target, default_address, explain_request, parse_kind, plan_request)
from kjit._types import (BlobGroup, CacheListing, CacheStats, CompileResult, DaemonStatus, ExplainResult, GcResult,
                         PipelineDescription, PlanResult, VerifyResult, convert)
from kjit.v1 import (cache_pb2, cache_pb2_grpc, compiler_pb2, compiler_pb2_grpc, diagnostics_pb2,
                     diagnostics_pb2_grpc, launch_pb2_grpc)


def _blob_bytes(data) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


class _Base:
    """Channel set-up shared with kjit.aio.Client."""

    _grpc = grpc

    def __init__(self, address=None, token: Optional[str] = None, tls_ca=None, *,
                 timeout: Optional[float] = DEFAULT_TIMEOUT, channel_options: Sequence = ()):
        self.address = os.fspath(address) if address is not None else default_address()
        self.timeout = timeout
        self._metadata = call_metadata(token)
        target = channel_target(self.address)
        options = CHANNEL_OPTIONS + list(channel_options)
        credentials = channel_credentials(tls_ca)
        if credentials is None:
            self._channel = self._grpc.insecure_channel(target, options=options)
        else:
            self._channel = self._grpc.secure_channel(target, credentials, options=options)
        self._compiler = compiler_pb2_grpc.CompilerStub(self._channel)
        self._cache = cache_pb2_grpc.CacheStub(self._channel)
        self._launcher = launch_pb2_grpc.LauncherStub(self._channel)
        self._diagnostics = diagnostics_pb2_grpc.DiagnosticsStub(self._channel)
        self._health_check = self._channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString)

    def _timeout(self, timeout):
        return self.timeout if timeout is None else timeout

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.address)


class Client(_Base):
    """A connection to kjitd.

    address: a unix socket path, a "unix:" URI, or HOST:PORT for TCP. None:
    $KJIT_SOCKET, then $KJIT_ADDRESS, then the daemon's default socket
    ($XDG_RUNTIME_DIR/kjit/kjitd.sock, else /tmp/kjit-$UID/kjitd.sock).
    token: sent with every call as "authorization: Bearer <token>".
    tls_ca: TLS with these roots (a PEM file's path, PEM bytes, or True for
    the system's); None: plaintext.
    timeout: seconds each call may take unless the call says otherwise.

    Every method raises kjit.KjitError (a subclass per status code) on failure.
    """

    def _call(self, method, request, timeout):
        try:
            return method(request, timeout=self._timeout(timeout), metadata=self._metadata)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None

    def compile(self, source: Source, target: Union[str, Sequence[str], None] = None, kind: Any = None,
                headers: Optional[Mapping[str, Any]] = None, options: Union[str, Sequence[str], None] = None,
                name_expressions: Union[str, Sequence[str], None] = None, pipeline: Optional[str] = None,
                artifact: Any = None, pass_args: Optional[Mapping[str, str]] = None, *, name: Optional[str] = None,
                allow_ptx_fallback: bool = False, timeout: Optional[float] = None) -> CompileResult:
        """Compiles source (text, bytes, or a pathlib.Path) for target ("cuda:90"; a
        list of targets asks for a fatbin). kind: "cuda", "ptx", "llvm-ir",
        "llvm-bitcode", "hip"; None infers it from the path's extension or the text."""
        request = Request(source, target, kind, headers, options, name_expressions, pipeline, artifact, pass_args,
                          name, allow_ptx_fallback).to_proto()
        return convert(CompileResult, self._call(self._compiler.Compile, request, timeout))

    def describe_pipeline(self, kind: Any = "cuda", target: str = "", pipeline: str = "", *,
                          timeout: Optional[float] = None) -> PipelineDescription:
        """The pipeline a request would run, after all edits; compiles nothing."""
        request = compiler_pb2.DescribePipelineRequest(input_kind=parse_kind(kind), target=target, pipeline=pipeline)
        return convert(PipelineDescription, self._call(self._compiler.DescribePipeline, request, timeout))

    def plan(self, source, kernel: str, *, grid=1, block=1, cluster=None, dynamic_shared_bytes: int = 0,
             cooperative: bool = False, programmatic_dependent_launch: bool = False, stream_priority: int = 0,
             device_target: Optional[str] = None, timeout: Optional[float] = None, **compile_args) -> PlanResult:
        """The launch plan kjitd would apply to kernel, without launching.

        source: a cache key (or a CompileResult), a Request, or a source that is
        compiled with compile_args (target=, headers=, ...) as compile() takes them.
        grid, block, cluster: an int or a tuple of up to three. device_target: for
        a fatbin, the GPU to plan for ("cuda:100"); None: the daemon's GPU."""
        config = dict(grid=grid, block=block, cluster=cluster, dynamic_shared_bytes=dynamic_shared_bytes,
                      cooperative=cooperative, programmatic_dependent_launch=programmatic_dependent_launch,
                      stream_priority=stream_priority)
        request = plan_request(source, kernel, config, compile_args, device_target)
        return convert(PlanResult, self._call(self._launcher.PlanLaunch, request, timeout))

    def stats(self, *, timeout: Optional[float] = None) -> CacheStats:
        """The compile cache's counters."""
        return convert(CacheStats, self._call(self._cache.Stats, cache_pb2.StatsRequest(), timeout))

    def explain(self, a, b, *, timeout: Optional[float] = None, **compile_args) -> ExplainResult:
        """Why two requests get different cache keys: their key components side by side.

        a, b: each a cache key (or a CompileResult), a Request, a dict of compile
        arguments, or a source keyed with compile_args."""
        request = explain_request(a, b, compile_args)
        return convert(ExplainResult, self._call(self._cache.Explain, request, timeout))

    def cache_list(self, limit: int = 0, *, timeout: Optional[float] = None) -> List[CacheListing]:
        """The disk tier's entries, most recently used first (limit 0: all)."""
        response = self._call(self._cache.List, cache_pb2.ListRequest(limit=limit), timeout)
        return [convert(CacheListing, e) for e in response.entries]

    def cache_remove(self, key: str, *, timeout: Optional[float] = None) -> None:
        self._call(self._cache.Remove, cache_pb2.RemoveRequest(key=key), timeout)

    def cache_gc(self, max_bytes: int, *, timeout: Optional[float] = None) -> GcResult:
        """Shrinks the disk tier to max_bytes."""
        return convert(GcResult, self._call(self._cache.Gc, cache_pb2.GcRequest(max_bytes=max_bytes), timeout))

    def cache_verify(self, *, timeout: Optional[float] = None) -> VerifyResult:
        return convert(VerifyResult, self._call(self._cache.Verify, cache_pb2.VerifyRequest(), timeout))

    def put_blob(self, namespace: str, key: str, name: str, data: Union[bytes, str], *,
                 timeout: Optional[float] = None) -> str:
        """Stores data (str is stored as UTF-8) under (namespace, key, name) in the
        daemon's cache tiers; returns the cache key it lives under, as cache_list
        shows it. Fields: 1 to 256 bytes; name has no '/', '..' or control character."""
        request = cache_pb2.PutBlobRequest(namespace=namespace, key=key, name=name, data=_blob_bytes(data))
        return self._call(self._cache.PutBlob, request, timeout).cache_key

    def get_blob(self, namespace: str, key: str, name: str, *, timeout: Optional[float] = None) -> Optional[bytes]:
        """The bytes stored under (namespace, key, name), None on a miss."""
        request = cache_pb2.GetBlobRequest(namespace=namespace, key=key, name=name)
        response = self._call(self._cache.GetBlob, request, timeout)
        return bytes(response.data) if response.found else None

    def put_blob_group(self, namespace: str, key: str, group: str, names: Sequence[str], *,
                       timeout: Optional[float] = None) -> None:
        """Records names (blobs under namespace and key, put first) as a group;
        groups and blobs are apart, so group may be a member's name."""
        request = cache_pb2.PutBlobGroupRequest(namespace=namespace, key=key, group=group, names=list(names))
        self._call(self._cache.PutBlobGroup, request, timeout)

    def get_blob_group(self, namespace: str, key: str, group: str, *,
                       timeout: Optional[float] = None) -> BlobGroup:
        """The group and its members' bytes, in one round trip (more only for
        members past the daemon's answer size, fetched here one by one)."""
        request = cache_pb2.GetBlobGroupRequest(namespace=namespace, key=key, group=group)
        result = convert(BlobGroup, self._call(self._cache.GetBlobGroup, request, timeout))
        for name in result.deferred:
            data = self.get_blob(namespace, key, name, timeout=timeout)
            if data is None:
                result.missing.append(name)
            else:
                result.members[name] = data
        result.deferred = []
        return result

    def health(self, service: str = "", *, timeout: Optional[float] = None) -> str:
        """grpc.health.v1 Check: "SERVING" when the daemon serves."""
        response = self._call(self._health_check, _health.HealthCheckRequest(service=service), timeout)
        return _health.status_name(response)

    def status(self, *, timeout: Optional[float] = None) -> DaemonStatus:
        """The daemon's version, how compiles are confined and bounded."""
        response = self._call(self._diagnostics.GetStatus, diagnostics_pb2.GetStatusRequest(), timeout)
        return convert(DaemonStatus, response)

    def echo(self, payload: bytes = b"", *, timeout: Optional[float] = None) -> bytes:
        response = self._call(self._diagnostics.Echo, diagnostics_pb2.EchoRequest(payload=payload), timeout)
        return bytes(response.payload)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
