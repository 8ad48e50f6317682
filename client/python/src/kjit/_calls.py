"""Each client method's RPC, written once for kjit.Client and kjit.aio.Client.

A function here takes a method's arguments (all but timeout, in the method's
order, defaults left to the method) and returns a Call: the stub method to
invoke, the request message, and how to read the response into what the
method returns. The clients only send the Call, one blocking and one
awaiting, so what the two send and return cannot drift apart.

The bundle calls stream: ImportBundle's request is a BundleIn, an iterator
of the messages that reads the bundle as they are sent; ExportBundle's
result is a BundleOut, which each message of the answer is handed to as it
comes (take), and which is the method's result once the answer is whole
(finish), or is dropped (abandon).
"""

import datetime
import io
import os
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

from kjit import _health
from kjit._request import Request, _strings, explain_request, parse_kind, plan_request
from kjit._types import (ReloadResult, BlobClaim, BlobGroup, CacheListing, CacheStats, CompileResult, DaemonStatus, DirectReadGrant,
                         ExplainResult, ExportResult, GcResult, ImportResult, PipelineDescription, PlanResult, Recipe, TritonBuild,
                         RecipeSummary, Seal, StoredBlob, StoredGroup, VerifyResult, _enum_name, convert)
from kjit.v1 import cache_pb2, compiler_pb2, diagnostics_pb2


class Call(NamedTuple):
    rpc: str                      # "<stub>.<Method>", the stub named as in _Base._stubs: "cache.Stats"
    request: Any                  # the request message (a client-streaming call's: an iterator of them)
    result: Callable[[Any], Any]  # the response message -> the method's result (a server-streaming call's: a BundleOut)


def _read(cls) -> Callable[[Any], Any]:
    return lambda response: convert(cls, response)


def _nothing(response) -> None:
    return None


# Compiler --------------------------------------------------------------------

def compile(source, target, kind, headers, options, name_expressions, pipeline, artifact, pass_args, *,  # noqa: A001
            name, allow_ptx_fallback, triton_options, triton_build, triton_edits, triton_plugins_off) -> Call:
    request = Request(source, target, kind, headers, options, name_expressions, pipeline, artifact, pass_args,
                      name, allow_ptx_fallback, triton_options, triton_build, triton_edits,
                      triton_plugins_off).to_proto()
    return Call("compiler.Compile", request, _read(CompileResult))


def describe_pipeline(kind, target, pipeline) -> Call:
    request = compiler_pb2.DescribePipelineRequest(input_kind=parse_kind(kind), target=target, pipeline=pipeline)
    return Call("compiler.DescribePipeline", request, _read(PipelineDescription))


def triton_builds() -> Call:
    return Call("compiler.ListToolkits", compiler_pb2.ListToolkitsRequest(),
                lambda response: [convert(TritonBuild, b) for b in response.triton])


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


# What each ImportBundle message carries, as the C++ client sends: well
# under the daemon's bound on a message, large enough to be few messages.
BUNDLE_CHUNK_BYTES = 1 << 20


def export_bundle(path_or_file, *, namespace, targets, recipes_only) -> Call:
    request = cache_pb2.ExportBundleRequest(namespace=namespace or "", targets=_strings(targets, "targets"),
                                            recipes_only=recipes_only)
    return Call("cache.ExportBundle", request, BundleOut(path_or_file))


def import_bundle(path_or_bytes_or_file, *, namespace) -> Call:
    return Call("cache.ImportBundle", BundleIn(path_or_bytes_or_file, namespace or ""), _read(ImportResult))


class BundleOut:
    """Where an exported bundle's bytes go as they come: a file at a path
    (written as PATH.partial and renamed once whole, so that a failed export
    leaves no truncated bundle under the name asked for), a binary file
    object (written, left open), or None: kept, for ExportResult.data."""

    def __init__(self, path_or_file):
        self._target = path_or_file
        self._file = None
        self._partial: Optional[str] = None
        self._summary = None

    def _open(self):
        if self._target is None:
            self._file = io.BytesIO()
        elif hasattr(self._target, "write"):
            self._file = self._target
        else:
            self._partial = os.fspath(self._target) + ".partial"
            self._file = open(self._partial, "wb")

    def take(self, chunk) -> None:
        """One BundleChunk of the answer, in order."""
        if self._file is None:
            self._open()
        if chunk.data:
            self._file.write(chunk.data)
        if chunk.HasField("summary"):
            self._summary = chunk.summary

    def finish(self) -> ExportResult:
        """The answer is whole: the file in place, and what the bundle holds."""
        if self._file is None:
            self._open()
        result = convert(ExportResult, self._summary)
        if self._target is None:
            result.data = self._file.getvalue()
        elif self._partial is not None:
            self._file.close()
            os.replace(self._partial, os.fspath(self._target))
            self._partial = None
        else:
            self._file.flush()
        return result

    def abandon(self) -> None:
        """The export failed: no partial file is left."""
        if self._partial is not None:
            self._file.close()
            try:
                os.remove(self._partial)
            except OSError:
                pass
            self._partial = None


class BundleIn:
    """The ImportBundle messages for a bundle: bytes, a binary file object,
    or a file's path (opened here, so that a missing file fails before the
    call). Each carries the next BUNDLE_CHUNK_BYTES, read as it is sent, so
    a large bundle is never held whole; the first names the namespace and
    goes even for an empty bundle."""

    def __init__(self, bundle, namespace: str):
        self._namespace = namespace
        self._data: Optional[memoryview] = None
        self._file = None
        self._owned = False
        if isinstance(bundle, (bytes, bytearray, memoryview)):
            self._data = memoryview(bundle).cast("B")
        elif hasattr(bundle, "read"):
            self._file = bundle
        elif isinstance(bundle, (str, os.PathLike)):
            self._file = open(os.fspath(bundle), "rb")
            self._owned = True
        else:
            raise TypeError("a bundle is bytes, a binary file or a path, not %s" % type(bundle).__name__)
        self._sent_first = False
        self._ended = False

    def _next_piece(self) -> bytes:
        if self._data is not None:
            piece, self._data = self._data[:BUNDLE_CHUNK_BYTES], self._data[BUNDLE_CHUNK_BYTES:]
            return bytes(piece)
        return self._file.read(BUNDLE_CHUNK_BYTES)

    def __iter__(self) -> "BundleIn":
        return self

    def __next__(self):
        if self._ended:
            raise StopIteration
        piece = self._next_piece()
        if not piece:
            self._ended = True
            self.close()
            if self._sent_first:
                raise StopIteration
        message = cache_pb2.ImportBundleRequest(data=piece)
        if not self._sent_first:
            message.namespace = self._namespace
            self._sent_first = True
        return message

    def close(self) -> None:
        """Closes the file opened for a path (the messages sent, or the call over)."""
        if self._owned:
            self._file.close()


# Blobs -----------------------------------------------------------------------

def put_blob(namespace, key, name, data, *, replace) -> Call:
    # memoryview: bytes-like alone (bytes(5) would store five NUL bytes).
    data = data.encode("utf-8") if isinstance(data, str) else bytes(memoryview(data))
    request = cache_pb2.PutBlobRequest(namespace=namespace, key=key, name=name, data=data, replace=replace)
    return Call("cache.PutBlob", request,
                lambda response: StoredBlob(response.cache_key, response.already_stored, response.conflict,
                                            response.replaced))


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


# Recipes and the warm-up seal ------------------------------------------------

def recipes(namespace, since, limit) -> Call:
    request = cache_pb2.ListRecipesRequest(namespace=namespace or "", since_unix=_unix(since), limit=limit)
    return Call("recipes.ListRecipes", request,
                lambda response: [convert(RecipeSummary, r) for r in response.recipes])


def _unix(when) -> int:
    """Unix seconds of a datetime (a naive one is UTC, as `kjit recipes ls
    --since` reads a date), a date (its midnight, UTC) or a number; None: 0."""
    if when is None:
        return 0
    if isinstance(when, datetime.datetime):
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        return int(when.timestamp())
    if isinstance(when, datetime.date):
        return int(datetime.datetime(when.year, when.month, when.day, tzinfo=datetime.timezone.utc).timestamp())
    return int(when)


def recipe(digest, namespace) -> Call:
    request = cache_pb2.GetRecipeRequest(namespace=namespace or "", digest=digest)
    return Call("recipes.GetRecipe", request, _read_recipe)


def _read_recipe(response) -> Recipe:
    """The summary, and the CompileRequest read as compile() takes its arguments."""
    request = response.request
    kind = request.input.DESCRIPTOR.fields_by_name["kind"]
    artifact = request.DESCRIPTOR.fields_by_name["artifact"]
    return Recipe(summary=convert(RecipeSummary, response.summary), source=bytes(request.input.data),
                  kind=_enum_name(kind, request.input.kind, "INPUT_KIND_", ""), name=request.input.name,
                  headers={k: bytes(v) for k, v in request.headers.items()}, options=list(request.options),
                  name_expressions=list(request.name_expressions), pipeline=request.pipeline,
                  artifact=_enum_name(artifact, request.artifact, "ARTIFACT_KIND_", ""),
                  pass_args=dict(request.pass_args), allow_ptx_fallback=request.allow_ptx_fallback)


def remove_recipe(digest, namespace) -> Call:
    request = cache_pb2.RemoveRecipeRequest(namespace=namespace or "", digest=digest)
    return Call("recipes.RemoveRecipe", request, lambda response: response.removed)


def seal(namespace, mode) -> Call:
    request = cache_pb2.SealRequest(all_namespaces=namespace is None, namespace=namespace or "",
                                    after_warmup=_after_warmup(mode))
    return Call("recipes.SetSeal", request, _read_seals)


def unseal(namespace) -> Call:
    request = cache_pb2.SealRequest(unseal=True, all_namespaces=namespace is None, namespace=namespace or "")
    return Call("recipes.SetSeal", request, _read_seals)


def _after_warmup(mode) -> int:
    """An AfterWarmup number from "count", "warn", "refuse", an AFTER_WARMUP_
    name or a number; None: the daemon's default."""
    if mode is None:
        return cache_pb2.AFTER_WARMUP_UNSPECIFIED
    if isinstance(mode, int):
        return mode
    name = str(mode).strip().upper()
    if not name.startswith("AFTER_WARMUP_"):
        name = "AFTER_WARMUP_" + name
    if name == "AFTER_WARMUP_UNSPECIFIED" or name not in cache_pb2.AfterWarmup.keys():
        raise ValueError("after warm-up, a miss is counted, warned of or refused: mode is \"count\", \"warn\" or "
                         "\"refuse\", not %r" % (mode,))
    return cache_pb2.AfterWarmup.Value(name)


def _read_seals(response):
    return [convert(Seal, s) for s in response.seals]


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

