"""Each client method's RPC, written once for kjit.Client and kjit.aio.Client.

A function here takes a method's arguments (all but timeout, in the method's
order, defaults left to the method) and returns a Call: the stub method to
invoke, the request message, and how to read the response into what the
method returns. The clients only send the Call, one blocking and one
awaiting, so what the two send and return cannot drift apart.
"""

from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

from kjit import _health
from kjit._request import Request, explain_request, parse_kind, plan_request
from kjit._types import (ReloadResult, BlobClaim, BlobGroup, CacheListing, CacheStats, CompileResult, DaemonStatus, DirectReadGrant,
                         ExplainResult, GcResult, PipelineDescription, PlanResult, StoredBlob, StoredGroup,
                         VerifyResult, convert)
from kjit.v1 import cache_pb2, compiler_pb2, diagnostics_pb2


class Call(NamedTuple):
    rpc: str                      # "<stub>.<Method>", the stub named as in _Base._stubs: "cache.Stats"
    request: Any                  # the request message
    result: Callable[[Any], Any]  # the response message -> the method's result


def _read(cls) -> Callable[[Any], Any]:
    return lambda response: convert(cls, response)


def _nothing(response) -> None:
    return None


# Compiler --------------------------------------------------------------------

def compile(source, target, kind, headers, options, name_expressions, pipeline, artifact, pass_args, *,  # noqa: A001
            name, allow_ptx_fallback) -> Call:
    request = Request(source, target, kind, headers, options, name_expressions, pipeline, artifact, pass_args,
                      name, allow_ptx_fallback).to_proto()
    return Call("compiler.Compile", request, _read(CompileResult))


def describe_pipeline(kind, target, pipeline) -> Call:
    request = compiler_pb2.DescribePipelineRequest(input_kind=parse_kind(kind), target=target, pipeline=pipeline)
    return Call("compiler.DescribePipeline", request, _read(PipelineDescription))


# Launcher --------------------------------------------------------------------

def plan(source, kernel, *, grid, block, cluster, dynamic_shared_bytes, cooperative, programmatic_dependent_launch,
         stream_priority, device_target, **compile_args) -> Call:
    config = dict(grid=grid, block=block, cluster=cluster, dynamic_shared_bytes=dynamic_shared_bytes,
                  cooperative=cooperative, programmatic_dependent_launch=programmatic_dependent_launch,
                  stream_priority=stream_priority)
    request = plan_request(source, kernel, config, compile_args, device_target)
    return Call("launcher.PlanLaunch", request, _read(PlanResult))


# Cache -----------------------------------------------------------------------

def stats() -> Call:
    return Call("cache.Stats", cache_pb2.StatsRequest(), _read(CacheStats))


def explain(a, b, **compile_args) -> Call:
    return Call("cache.Explain", explain_request(a, b, compile_args), _read(ExplainResult))


def cache_list(limit, *, blob_namespace) -> Call:
    return Call("cache.List", cache_pb2.ListRequest(limit=limit, blob_namespace=blob_namespace or ""),
                lambda response: [convert(CacheListing, e) for e in response.entries])


def cache_remove(key) -> Call:
    return Call("cache.Remove", cache_pb2.RemoveRequest(key=key), _nothing)


def cache_gc(max_bytes) -> Call:
    return Call("cache.Gc", cache_pb2.GcRequest(max_bytes=max_bytes), _read(GcResult))


def cache_verify() -> Call:
    return Call("cache.Verify", cache_pb2.VerifyRequest(), _read(VerifyResult))


# Blobs -----------------------------------------------------------------------

def put_blob(namespace, key, name, data) -> Call:
    data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    request = cache_pb2.PutBlobRequest(namespace=namespace, key=key, name=name, data=data)
    return Call("cache.PutBlob", request,
                lambda response: StoredBlob(response.cache_key, response.already_stored, response.conflict))


def get_blob(namespace, key, name) -> Call:
    request = cache_pb2.GetBlobRequest(namespace=namespace, key=key, name=name)
    return Call("cache.GetBlob", request, lambda response: bytes(response.data) if response.found else None)


def put_blob_group(namespace, key, group, names: Sequence[str]) -> Call:
    request = cache_pb2.PutBlobGroupRequest(namespace=namespace, key=key, group=group, names=list(names))
    return Call("cache.PutBlobGroup", request, _read(StoredGroup))


def get_blob_group(namespace, key, group) -> Call:
    """The group's first round trip; members the daemon deferred (past its
    answer size) are then fetched with get_blob and merged by add_deferred."""
    request = cache_pb2.GetBlobGroupRequest(namespace=namespace, key=key, group=group)
    return Call("cache.GetBlobGroup", request, _read(BlobGroup))


def direct_read_grant() -> Call:
    return Call("cache.GetDirectReadGrant", cache_pb2.DirectReadGrantRequest(), _read(DirectReadGrant))


def claim_blob_group(namespace, key, group, wait) -> Call:
    """The call's first message; the clients keep the call open in the
    BlobClaim while it holds a claim."""
    request = cache_pb2.ClaimBlobGroupRequest(namespace=namespace, key=key, group=group,
                                              wait_ms=max(0, min(int(wait * 1000), 2**32 - 1)))
    return Call("cache.ClaimBlobGroup", request, _read_claim)


def _read_claim(response) -> BlobClaim:
    answer = response.WhichOneof("answer")
    if answer == "group":
        return BlobClaim(outcome="hit", group=convert(BlobGroup, response.group))
    if answer == "claimed":
        claim = convert(BlobClaim, response.claimed)
        claim.outcome = "claimed"
        return claim
    return BlobClaim(outcome="timed-out")


def release_blob_claim(claim_id, failed) -> Call:
    request = cache_pb2.ReleaseBlobClaimRequest(claim_id=claim_id, failed=failed)
    return Call("cache.ReleaseBlobClaim", request, lambda response: response.released)


def add_deferred(result: BlobGroup, fetched: Mapping[str, Optional[bytes]]) -> BlobGroup:
    """result with its deferred members as get_blob answered for each (None: gone since)."""
    for name in result.deferred:
        data = fetched[name]
        if data is None:
            result.missing.append(name)
        else:
            result.members[name] = data
    result.deferred = []
    return result


# Health and diagnostics ------------------------------------------------------

def health(service) -> Call:
    return Call("health.Check", _health.HealthCheckRequest(service=service), _health.status_name)


def status() -> Call:
    return Call("diagnostics.GetStatus", diagnostics_pb2.GetStatusRequest(), _read(DaemonStatus))


def reload() -> Call:
    return Call("diagnostics.Reload", diagnostics_pb2.ReloadRequest(), _read(ReloadResult))


def echo(payload) -> Call:
    return Call("diagnostics.Echo", diagnostics_pb2.EchoRequest(payload=payload),
                lambda response: bytes(response.payload))

