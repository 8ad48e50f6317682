"""The blocking client."""

import os
import threading
from typing import Any, BinaryIO, List, Mapping, Optional, Sequence, Union

import grpc

from kjit import _calls, _health
from kjit._errors import DeadlineExceeded, Internal, from_rpc_error
from kjit._request import (CHANNEL_OPTIONS, DEFAULT_TIMEOUT, Source, call_metadata, channel_credentials,
                           channel_target, default_address)
from kjit._types import (ReloadResult, BlobClaim, BlobGroup, CacheListing, CacheStats, CompileResult, DaemonStatus, DirectReadGrant,
                         ExplainResult, ExportResult, GcResult, ImportResult, PipelineDescription, PlanResult, Recipe, TritonBuild,
                         RecipeSummary, Seal, StoredBlob, StoredGroup, VerifyResult)
from kjit.v1 import cache_pb2_grpc, compiler_pb2_grpc, diagnostics_pb2_grpc, launch_pb2_grpc


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
        # By the names a _calls.Call's rpc gives them ("cache.Stats").
        self._stubs = {
            "compiler": compiler_pb2_grpc.CompilerStub(self._channel),
            "cache": cache_pb2_grpc.CacheStub(self._channel),
            "recipes": cache_pb2_grpc.RecipesStub(self._channel),
            "launcher": launch_pb2_grpc.LauncherStub(self._channel),
            "diagnostics": diagnostics_pb2_grpc.DiagnosticsStub(self._channel),
            "health": _health.HealthStub(self._channel),
        }

    def _invoke(self, call: _calls.Call, timeout):
        """Starts call on its stub: the response (sync), or an awaitable of it (aio)."""
        stub, method = call.rpc.split(".")
        timeout = self.timeout if timeout is None else timeout
        return getattr(self._stubs[stub], method)(call.request, timeout=timeout, metadata=self._metadata)

    def _open(self, call: _calls.Call):
        """Starts a call that stays open while it holds what its first message
        answered (a claim): no deadline on the call itself."""
        stub, method = call.rpc.split(".")
        return getattr(self._stubs[stub], method)(call.request, timeout=None, metadata=self._metadata)

    def _answer_bound(self, wait: float, timeout) -> Optional[float]:
        """How long to wait for such a call's first message: its own wait and the timeout."""
        timeout = self.timeout if timeout is None else timeout
        return None if timeout is None else max(0.0, wait) + timeout

    @staticmethod
    def _unanswered(bound: Optional[float]) -> DeadlineExceeded:
        return DeadlineExceeded(grpc.StatusCode.DEADLINE_EXCEEDED, "no answer within %.1f s" % bound)

    @staticmethod
    def _ended() -> Internal:
        return Internal(grpc.StatusCode.INTERNAL, "the call ended without an answer")

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

    def _send(self, call: _calls.Call, timeout):
        try:
            response = self._invoke(call, timeout)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        return call.result(response)

    def _receive(self, call: _calls.Call, timeout):
        """A server-streaming call's result: each message goes to call.result
        (a _calls.BundleOut) as it comes."""
        stream = self._invoke(call, timeout)
        try:
            for message in stream:
                call.result.take(message)
            return call.result.finish()
        except grpc.RpcError as error:
            call.result.abandon()
            raise from_rpc_error(error) from None
        except BaseException:
            stream.cancel()
            call.result.abandon()
            raise

    def _hold(self, call: _calls.Call, wait: float, timeout):
        """A claim call's answer; a claim keeps its call open (BlobClaim)."""
        stream = self._open(call)
        bound = self._answer_bound(wait, timeout)
        unanswered = threading.Event()

        def give_up():
            unanswered.set()
            stream.cancel()

        guard = threading.Timer(bound, give_up) if bound is not None else None
        if guard is not None:
            guard.daemon = True
            guard.start()
        try:
            response = next(stream)
        except grpc.RpcError as error:
            if unanswered.is_set():
                raise self._unanswered(bound) from None
            raise from_rpc_error(error) from None
        except StopIteration:
            raise self._ended() from None
        finally:
            if guard is not None:
                guard.cancel()
        result = call.result(response)
        if result.outcome == "claimed":
            result._call = stream
        return result

    def compile(self, source: Source, target: Union[str, Sequence[str], None] = None, kind: Any = None,
                headers: Optional[Mapping[str, Any]] = None, options: Union[str, Sequence[str], None] = None,
                name_expressions: Union[str, Sequence[str], None] = None, pipeline: Optional[str] = None,
                artifact: Any = None, pass_args: Optional[Mapping[str, str]] = None, *, name: Optional[str] = None,
                allow_ptx_fallback: bool = False, triton_options: Optional[Mapping[str, Any]] = None,
                triton_build: Optional[str] = None, triton_edits: Optional[Sequence[Mapping[str, Any]]] = None,
                triton_plugins_off: Union[str, Sequence[str], None] = None,
                timeout: Optional[float] = None) -> CompileResult:
        """Compiles source (text, bytes, or a pathlib.Path) for target ("cuda:90"; a
        list of targets asks for a fatbin). kind: "cuda", "ptx", "llvm-ir",
        "llvm-bitcode", "hip", "triton"; None infers it from the path's extension or
        the text. For Triton IR: triton_options by Triton's names ({"num_warps": 8}),
        triton_build the build to use ("triton-3.9.0"; None: the daemon's default),
        triton_edits edits to its stages after the daemon's own ([{"op":
        "insert-after", "anchor": "ttgir/canonicalize", "pass": "cse"}], as
        [[edits]] tables say them), triton_plugins_off the build's plugins
        switched off for this kernel ("triton-utlx", a configured library's
        path; "*" all); the result's triton_metadata is Triton's metadata (a
        dict)."""
        return self._send(_calls.compile(source, target, kind, headers, options, name_expressions, pipeline, artifact,
                                         pass_args, name=name, allow_ptx_fallback=allow_ptx_fallback,
                                         triton_options=triton_options, triton_build=triton_build,
                                         triton_edits=triton_edits, triton_plugins_off=triton_plugins_off), timeout)

    def describe_pipeline(self, kind: Any = "cuda", target: str = "", pipeline: str = "", *,
                          timeout: Optional[float] = None) -> PipelineDescription:
        """The pipeline a request would run, after all edits; compiles nothing."""
        return self._send(_calls.describe_pipeline(kind, target, pipeline), timeout)

    def triton_builds(self, *, timeout: Optional[float] = None) -> List[TritonBuild]:
        """The Triton builds the daemon compiles Triton IR with (`kjit toolkits`):
        name, version, distribution, libtriton_sha256, options, is_default, ..."""
        return self._send(_calls.triton_builds(), timeout)

    def plan(self, source, kernel: str, *, grid=1, block=1, cluster=None, dynamic_shared_bytes: int = 0,
             cooperative: bool = False, programmatic_dependent_launch: bool = False, stream_priority: int = 0,
             device_target: Optional[str] = None, timeout: Optional[float] = None, **compile_args) -> PlanResult:
        """The launch plan kjitd would apply to kernel, without launching.

        source: a cache key (or a CompileResult), a Request, or a source that is
        compiled with compile_args (target=, headers=, ...) as compile() takes them.
        grid, block, cluster: an int or a tuple of up to three. device_target: for
        a fatbin, the GPU to plan for ("cuda:100"); None: the daemon's GPU."""
        return self._send(_calls.plan(
            source, kernel, grid=grid, block=block, cluster=cluster, dynamic_shared_bytes=dynamic_shared_bytes,
            cooperative=cooperative, programmatic_dependent_launch=programmatic_dependent_launch,
            stream_priority=stream_priority, device_target=device_target, **compile_args), timeout)

    def stats(self, *, timeout: Optional[float] = None) -> CacheStats:
        """The compile cache's counters."""
        return self._send(_calls.stats(), timeout)

    def explain(self, a, b, *, timeout: Optional[float] = None, **compile_args) -> ExplainResult:
        """Why two requests get different cache keys: their key components side by side.

        a, b: each a cache key (or a CompileResult), a Request, a dict of compile
        arguments, or a source keyed with compile_args."""
        return self._send(_calls.explain(a, b, **compile_args), timeout)

    def cache_list(self, limit: int = 0, *, blob_namespace: Optional[str] = None,
                   timeout: Optional[float] = None) -> List[CacheListing]:
        """The disk tier's entries, most recently used first (limit 0: all).

        blob_namespace: only your blobs and groups put under that namespace,
        each with its identity (blob_kind, blob_namespace, blob_key, blob_name)."""
        return self._send(_calls.cache_list(limit, blob_namespace=blob_namespace), timeout)

    def cache_remove(self, key: str, *, timeout: Optional[float] = None) -> None:
        return self._send(_calls.cache_remove(key), timeout)

    def cache_gc(self, max_bytes: int, *, timeout: Optional[float] = None) -> GcResult:
        """Shrinks the disk tier to max_bytes."""
        return self._send(_calls.cache_gc(max_bytes), timeout)

    def cache_verify(self, *, timeout: Optional[float] = None) -> VerifyResult:
        return self._send(_calls.cache_verify(), timeout)

    def export_bundle(self, path_or_file: Union[str, "os.PathLike[str]", BinaryIO, None] = None, *,
                      namespace: Optional[str] = None, targets: Union[str, Sequence[str]] = (),
                      recipes_only: bool = False, timeout: Optional[float] = None) -> ExportResult:
        """Writes a portable cache bundle (docs/bundle-format.md) of the caller's
        namespace: its compile entries, client blobs and recipes, streamed as
        they come to path_or_file (a path, written as PATH.partial and renamed
        once whole; or a binary file object), or kept in the result's .data
        when None. Returns what it holds (.entries, .blobs, .recipes, .bytes).

        namespace: another namespace, the operator's to name. targets: only the
        compile entries built for these ("cuda:90"), and no client blobs.
        recipes_only: the recipes alone, for a node that warms them itself.
        A socket user that is not the operator and has no token: PermissionDenied.
        timeout bounds the whole transfer."""
        return self._receive(_calls.export_bundle(path_or_file, namespace=namespace, targets=targets,
                                                  recipes_only=recipes_only), timeout)

    def import_bundle(self, path_or_bytes_or_file: Union[str, "os.PathLike[str]", bytes, BinaryIO], *,
                      namespace: Optional[str] = None, timeout: Optional[float] = None) -> ImportResult:
        """Loads a bundle (a path, as str or os.PathLike; its bytes; or a binary
        file object) into the caller's namespace (namespace: another, the
        operator's to name), sent in 1 MiB messages read as they go. Entries
        already there are kept; each is verified as the disk tier verifies
        its files. Returns the counts imported and the skips with their
        reasons (ImportResult.skips). A damaged bundle: InvalidArgument;
        another entry format or a CUDA toolkit the daemon lacks:
        FailedPrecondition (the records before it stay imported)."""
        call = _calls.import_bundle(path_or_bytes_or_file, namespace=namespace)
        try:
            return self._send(call, timeout)
        finally:
            call.request.close()

    def put_blob(self, namespace: str, key: str, name: str, data: Union[bytes, str], *, replace: bool = False,
                 timeout: Optional[float] = None) -> StoredBlob:
        """Stores data (bytes-like; str is stored as UTF-8) under (namespace, key,
        name) in the daemon's cache tiers; returns the cache key it lives under, as
        cache_list shows it (a str, with already_stored and conflict: the first
        writer wins). replace=True stores data over other bytes (replaced says it
        did; readers get the old bytes or the new), except in a [[blob_sharing]]
        namespace, where that raises FailedPrecondition. Fields: 1 to 256 bytes;
        name has no '/', '..' or control character."""
        return self._send(_calls.put_blob(namespace, key, name, data, replace=replace), timeout)

    def get_blob(self, namespace: str, key: str, name: str, *, timeout: Optional[float] = None) -> Optional[bytes]:
        """The bytes stored under (namespace, key, name), None on a miss."""
        return self._send(_calls.get_blob(namespace, key, name), timeout)

    def put_blob_group(self, namespace: str, key: str, group: str, names: Sequence[str], *,
                       timeout: Optional[float] = None) -> StoredGroup:
        """Records names (blobs under namespace and key, put first) as a group;
        groups and blobs are apart, so group may be a member's name. The first
        writer wins, as for put_blob."""
        return self._send(_calls.put_blob_group(namespace, key, group, names), timeout)

    def get_blob_group(self, namespace: str, key: str, group: str, *,
                       timeout: Optional[float] = None) -> BlobGroup:
        """The group and its members' bytes, in one round trip (more only for
        members past the daemon's answer size, fetched here one by one)."""
        result = self._send(_calls.get_blob_group(namespace, key, group), timeout)
        fetched = {name: self.get_blob(namespace, key, name, timeout=timeout) for name in result.deferred}
        return _calls.add_deferred(result, fetched)

    def claim_blob_group(self, namespace: str, key: str, group: str, wait: float = 0.0, *,
                         timeout: Optional[float] = None) -> BlobClaim:
        """The group, or its claim: for a client that compiles for itself, one
        compile per group across every caller of its cache namespace (and the
        daemons sharing a Redis tier). Waits at most wait seconds while another
        caller holds the claim (the daemon's [limits] max_claim_wait_ms bounds
        it), then answers "hit" (the group, put meanwhile), "claimed" (compile,
        then put_blob and put_blob_group, which end the claim), or "timed-out".
        The claim is given up when the BlobClaim is cancelled or dropped.
        ResourceExhausted past the daemon's bounds on waiters: compile without one."""
        result = self._hold(_calls.claim_blob_group(namespace, key, group, wait), wait, timeout)
        if result.group is not None and result.group.deferred:
            fetched = {name: self.get_blob(namespace, key, name, timeout=timeout) for name in result.group.deferred}
            _calls.add_deferred(result.group, fetched)
        return result

    def release_blob_claim(self, claim_id: str, failed: bool = False, *, timeout: Optional[float] = None) -> bool:
        """Gives up the claim claim_id (failed: its compile failed); False when
        it had ended already (its group put, say)."""
        return self._send(_calls.release_blob_claim(claim_id, failed), timeout)

    def direct_read_grant(self, *, timeout: Optional[float] = None) -> DirectReadGrant:
        """What this caller needs to read its own blobs from the daemon's
        disk tier itself (kjit.DirectReader); only on the daemon's unix socket."""
        return self._send(_calls.direct_read_grant(), timeout)

    def recipes(self, namespace: Optional[str] = None, since: Any = None, limit: int = 0, *,
                timeout: Optional[float] = None) -> List[RecipeSummary]:
        """The recipes (the requests the daemon compiled, kept without their
        targets) of the caller's namespace, most recently asked first.

        namespace: another namespace, the operator's to name. since: only those
        last asked for at or after it (a datetime, naive ones UTC; a date;
        or unix seconds). limit 0: all. A socket user without a token, whose compiles
        are everyone's, has none of its own: PermissionDenied."""
        return self._send(_calls.recipes(namespace, since, limit), timeout)

    def recipe(self, digest: str, namespace: Optional[str] = None, *, timeout: Optional[float] = None) -> Recipe:
        """The recipe digest names: its summary and its request, without a
        target: client.compile(**recipe.compile_args, target="cuda:100")
        builds it for another target. NotFound when there is none."""
        return self._send(_calls.recipe(digest, namespace), timeout)

    def remove_recipe(self, digest: str, namespace: Optional[str] = None, *, timeout: Optional[float] = None) -> bool:
        """Removes a recipe; False when there was none."""
        return self._send(_calls.remove_recipe(digest, namespace), timeout)

    def seal(self, namespace: Optional[str] = None, mode: Optional[str] = None, *,
             timeout: Optional[float] = None) -> List[Seal]:
        """The operator's (PermissionDenied for anyone else): declares warm-up
        over, for every namespace (namespace None) or one ("" is the default
        one). After it each miss is counted, with mode "warn" also logged as a
        warning, with "refuse" also answered FailedPrecondition naming the
        seal; hits are served as before. mode None: the daemon's after_warmup.
        Returns the seals in force after it."""
        return self._send(_calls.seal(namespace, mode), timeout)

    def unseal(self, namespace: Optional[str] = None, *, timeout: Optional[float] = None) -> List[Seal]:
        """The operator's: lifts every seal (namespace None), or the seal of
        one namespace; the seals in force after it."""
        return self._send(_calls.unseal(namespace), timeout)

    def health(self, service: str = "", *, timeout: Optional[float] = None) -> str:
        """grpc.health.v1 Check: "SERVING" when the daemon serves."""
        return self._send(_calls.health(service), timeout)

    def status(self, *, timeout: Optional[float] = None) -> DaemonStatus:
        """The daemon's version, how compiles are confined and bounded."""
        return self._send(_calls.status(), timeout)

    def reload(self, *, timeout: Optional[float] = None) -> ReloadResult:
        """The operator's (PermissionDenied for anyone else): kjitd reads its
        configuration, tenants and TLS files again, as on SIGHUP. A refused
        reload (a file that does not parse, a certificate that does not match
        its key) raises InvalidArgument or FailedPrecondition, and the daemon
        serves on as before."""
        return self._send(_calls.reload(), timeout)

    def echo(self, payload: bytes = b"", *, timeout: Optional[float] = None) -> bytes:
        return self._send(_calls.echo(payload), timeout)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
