"""kjit.Client and kjit.aio.Client are one client over two transports: the
same methods and signatures, each sending the Call kjit._calls builds for it.
Needs no daemon: the stubs are replaced by fakes that record what is sent."""

import ast
import asyncio
import inspect
import io
import pathlib

import grpc
import pytest

import kjit
import kjit._client
import kjit.aio
from kjit import _calls, _health
from google.protobuf import message
from kjit.v1 import cache_pb2, compiler_pb2, diagnostics_pb2, launch_pb2

# Methods that fetch a group's deferred members and merge them with add_deferred.
DEFERRING = {"get_blob_group", "claim_blob_group"}
# Methods whose call stays open past its first answer: sent without a deadline.
HOLDING = {"claim_blob_group"}
# Methods whose answer streams: each message goes to the Call's BundleOut.
RECEIVING = {"export_bundle"}
# Public methods that are not RPCs: they only close the channel.
TRANSPORT_ONLY = {"close"}
# Twins under another name: a context manager on each side.
RENAMED = {"__enter__": "__aenter__", "__exit__": "__aexit__"}


def public_methods(cls):
    return sorted(name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_"))


RPC_METHODS = [name for name in public_methods(kjit.Client) if name not in TRANSPORT_ONLY]
# The builders themselves, before a test puts spies in their place.
BUILDERS = {name: getattr(_calls, name, None) for name in RPC_METHODS}

KEY = "ab" * 32
SOURCE = "__global__ void k() {}"
# Two ImportBundle messages and a bit: a bundle is sent in pieces.
BUNDLE = b"KJITBNDL" + bytes(range(256)) * (2 * _calls.BUNDLE_CHUNK_BYTES // 256)

# Arguments for each RPC method, as a user passes them: the defaults left to
# the method, so that both clients' defaults are exercised too.
ARGUMENTS = {
    "compile": ((SOURCE,), dict(target=["cuda:90"], options="-DX=1", headers={"a.h": "int a;"}, name="k.cu",
                                allow_ptx_fallback=True)),
    "describe_pipeline": (("ptx", "cuda:90"), {}),
    "plan": ((SOURCE, "k"), dict(grid=(4, 2), block=128, cooperative=True, target="cuda:90", options=["-DY"])),
    "stats": ((), {}),
    "triton_builds": ((), {}),
    "explain": ((KEY, {"source": SOURCE, "options": ["-DX=1"]}), dict(target="cuda:90")),
    "cache_list": ((5,), {}),
    "cache_remove": ((KEY,), {}),
    "cache_gc": ((1 << 20,), {}),
    "cache_verify": ((), {}),
    "put_blob": (("ns", "key", "a.bin", "text"), dict(replace=True)),
    "get_blob": (("ns", "key", "a.bin"), {}),
    "put_blob_group": (("ns", "key", "g", ("a.bin", "b.bin")), {}),
    "get_blob_group": (("ns", "key", "g"), {}),
    "claim_blob_group": (("ns", "key", "g", 2.5), {}),
    "release_blob_claim": (("ab" * 16,), dict(failed=True)),
    "direct_read_grant": ((), {}),
    "health": ((), {}),
    "status": ((), {}),
    "echo": ((b"ping",), {}),
    "reload": ((), {}),
    "recipes": (("team",), dict(since=1700000000, limit=3)),
    "recipe": ((KEY,), {}),
    "remove_recipe": ((KEY,), dict(namespace="team")),
    "seal": ((), dict(mode="refuse")),
    "unseal": (("team",), {}),
    "export_bundle": ((), dict(targets=["cuda:90"], namespace="team")),
    "import_bundle": ((BUNDLE,), dict(namespace="team")),
}

# What the fake daemon answers, per "<stub>.<Method>".
RESPONSES = {
    "compiler.Compile": compiler_pb2.CompileResponse(
        artifact=b"\x7fELF", target="cuda:90", cache="compiled", key=KEY,
        kernels=[compiler_pb2.KernelInfo(name="k", registers=7)]),
    "compiler.DescribePipeline": compiler_pb2.DescribePipelineResponse(name="ptx", toml="[pipelines.ptx]"),
    "compiler.ListToolkits": compiler_pb2.ListToolkitsResponse(triton=[compiler_pb2.TritonBuild(
        name="triton-3.9.0", libtriton_sha256="ab", options=["cuda.num_warps: int"], stages_digest={"cuda": "cd"})]),
    "launcher.PlanLaunch": launch_pb2.PlanLaunchResponse(key=KEY, plan=launch_pb2.LaunchPlan(kernel="k")),
    "cache.Stats": cache_pb2.StatsResponse(compiles=3, lookups=5),
    "cache.Explain": cache_pb2.ExplainResponse(left_key=KEY, right_key="cd" * 32),
    "cache.List": cache_pb2.ListResponse(entries=[cache_pb2.CacheListing(key=KEY, bytes=10)]),
    "cache.Remove": cache_pb2.RemoveResponse(),
    "cache.Gc": cache_pb2.GcResponse(removed_entries=2, bytes_after=7),
    "cache.Verify": cache_pb2.VerifyResponse(checked=4, removed=1),
    "cache.PutBlob": cache_pb2.PutBlobResponse(cache_key="blob-key", replaced=True),
    "cache.GetBlob": cache_pb2.GetBlobResponse(found=True, data=b"deferred bytes"),
    "cache.PutBlobGroup": cache_pb2.PutBlobGroupResponse(already_stored=True),
    "cache.GetDirectReadGrant": cache_pb2.DirectReadGrantResponse(granted=True, namespace="U1000",
                                                                  names_key=b"k" * 32, names_key_id="id"),
    "cache.ClaimBlobGroup": cache_pb2.ClaimBlobGroupResponse(
        claimed=cache_pb2.BlobClaim(claim_id="ab" * 16, lease_ms=5000, fleet=True)),
    "cache.ReleaseBlobClaim": cache_pb2.ReleaseBlobClaimResponse(released=True),
    # One member deferred: the client fetches it with GetBlob.
    "cache.GetBlobGroup": cache_pb2.GetBlobGroupResponse(
        found=True, members=[cache_pb2.Blob(name="a.bin", data=b"a")], deferred=["b.bin"]),
    "health.Check": _health.HealthCheckResponse(status=1),
    "diagnostics.GetStatus": diagnostics_pb2.GetStatusResponse(version="9.9"),
    "diagnostics.Echo": diagnostics_pb2.EchoResponse(payload=b"ping"),
    "diagnostics.Reload": diagnostics_pb2.ReloadResponse(reloaded=["tenants", "log_level"],
                                                         needs_restart=["cache.memory_bytes"]),
    "recipes.ListRecipes": cache_pb2.ListRecipesResponse(recipes=[cache_pb2.RecipeSummary(
        digest=KEY, input_kind=compiler_pb2.INPUT_KIND_PTX, input_name="k.ptx", bytes=9, last_target="cuda:90")]),
    "recipes.GetRecipe": cache_pb2.GetRecipeResponse(
        summary=cache_pb2.RecipeSummary(digest=KEY, input_kind=compiler_pb2.INPUT_KIND_CUDA_SOURCE),
        request=compiler_pb2.CompileRequest(
            input=compiler_pb2.Input(kind=compiler_pb2.INPUT_KIND_CUDA_SOURCE, data=SOURCE.encode(), name="k.cu"),
            options=["-DX=1"], headers={"a.h": b"int a;"}, name_expressions=["k"])),
    "recipes.RemoveRecipe": cache_pb2.RemoveRecipeResponse(removed=True),
    "recipes.SetSeal": cache_pb2.SealResponse(seals=[cache_pb2.Seal(
        all_namespaces=True, after_warmup=cache_pb2.AFTER_WARMUP_REFUSE, sealed_unix=1700000000)]),
    # A streamed answer: the bundle's bytes in pieces, the summary on the last.
    "cache.ExportBundle": [cache_pb2.BundleChunk(data=b"KJITBNDL"), cache_pb2.BundleChunk(data=b""),
                           cache_pb2.BundleChunk(data=b"the rest", summary=cache_pb2.BundleExportSummary(
                               entries=2, blobs=1, recipes=2, bytes=16))],
    "cache.ImportBundle": cache_pb2.ImportBundleResponse(
        entries_imported=2, skipped=1, skips=[cache_pb2.BundleSkip(reason="already there (kept)", count=1,
                                                                   example=KEY)],
        entry_format=3, toolchains=["toolchain.nvrtc 13.0"], bundle_bytes=len(BUNDLE), namespace="team"),
}

SERVICES = {"compiler": compiler_pb2.DESCRIPTOR.services_by_name["Compiler"],
            "cache": cache_pb2.DESCRIPTOR.services_by_name["Cache"],
            "recipes": cache_pb2.DESCRIPTOR.services_by_name["Recipes"],
            "launcher": launch_pb2.DESCRIPTOR.services_by_name["Launcher"],
            "diagnostics": diagnostics_pb2.DESCRIPTOR.services_by_name["Diagnostics"]}


def test_every_method_has_an_async_twin_with_the_same_signature():
    assert public_methods(kjit.aio.Client) == public_methods(kjit.Client)
    for name in public_methods(kjit.Client) + list(RENAMED):
        sync = getattr(kjit.Client, name)
        twin = getattr(kjit.aio.Client, RENAMED.get(name, name))
        assert inspect.iscoroutinefunction(twin), name
        assert not inspect.iscoroutinefunction(sync), name
        if name not in RENAMED:
            assert inspect.signature(twin) == inspect.signature(sync), name


def test_every_rpc_method_has_a_builder_taking_its_arguments():
    assert sorted(ARGUMENTS) == RPC_METHODS, "a method without test arguments below, or one gone"
    for name in RPC_METHODS:
        builder = BUILDERS[name]
        assert callable(builder), "kjit._calls has no %s" % name
        method = [p for p in inspect.signature(getattr(kjit.Client, name)).parameters.values()
                  if p.name not in ("self", "timeout")]
        built = list(inspect.signature(builder).parameters.values())
        assert [(p.name, p.kind) for p in built] == [(p.name, p.kind) for p in method], name
        # The defaults are the methods' alone (and equal, by the test above).
        assert all(p.default is inspect.Parameter.empty for p in built), name


def _source_tree(module):
    return ast.parse(pathlib.Path(module.__file__).read_text())


@pytest.mark.parametrize("module", [kjit.aio, kjit._client], ids=["aio", "sync"])
def test_the_clients_build_and_read_no_messages_themselves(module):
    tree = _source_tree(module)
    # No message classes, and none of what turns arguments into them or
    # messages into results: the generated stubs are the only protos allowed.
    forbidden = {"convert", "Request", "parse_kind", "explain_request", "plan_request", "launch_config",
                 "HealthCheckRequest", "HealthCheckResponse", "status_name"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                assert alias.name not in forbidden, "%s imports %s" % (module.__name__, alias.name)
                if node.module == "kjit.v1":
                    assert alias.name.endswith("_pb2_grpc"), "%s imports %s" % (module.__name__, alias.name)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert not node.value.id.endswith("_pb2"), "%s uses %s.%s" % (module.__name__, node.value.id, node.attr)
            assert node.value.id != "_health" or node.attr == "HealthStub", "%s uses _health.%s" % (
                module.__name__, node.attr)

    # Each RPC method sends the Call of its own name (get_blob_group then
    # merges what it fetched with the shared add_deferred).
    client = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Client")
    methods = {f.name: f for f in client.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for name in RPC_METHODS:
        used = {n.func.attr for n in ast.walk(methods[name]) if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "_calls"}
        assert used == ({name, "add_deferred"} if name in DEFERRING else {name}), (module.__name__, name)


def _serialized(request):
    """What a request is on the wire: its bytes, or a client stream's list of them."""
    if isinstance(request, message.Message):
        return request.SerializeToString(deterministic=True)
    return [m.SerializeToString(deterministic=True) for m in request]


def _copies(rpc):
    """RESPONSES[rpc], copied: one message, or a server stream's list of them."""
    answer = RESPONSES[rpc]
    return [_copy(m) for m in answer] if isinstance(answer, list) else _copy(answer)


def _copy(response):
    out = type(response)()
    out.CopyFrom(response)
    return out


class FakeStub:
    """A stub whose every method records its call and answers RESPONSES[rpc],
    as grpc's and grpc.aio's multi-callables take and answer each kind of
    call: a request message or (client streaming) an iterator of them, sync
    or async; a response, or (server streaming) a call to read or iterate."""

    def __init__(self, stub, sent, awaitable):
        self._stub, self._sent, self._awaitable = stub, sent, awaitable

    def __getattr__(self, method):
        rpc = "%s.%s" % (self._stub, method)
        stub, name = rpc.split(".")
        descriptor = SERVICES[stub].methods_by_name[name] if stub in SERVICES else None

        def call(request, timeout, metadata):
            self._sent.append((rpc, _serialized(request), timeout, metadata))
            return _copies(rpc)

        async def call_async(request, timeout, metadata):
            if hasattr(request, "__aiter__"):
                request = [m async for m in request]
            return call(request, timeout, metadata)

        if descriptor is not None and descriptor.server_streaming:
            return lambda request, timeout, metadata: FakeStream(call(request, timeout, metadata))
        return call_async if self._awaitable else call


class FakeStream:
    """A server-streaming call, as grpc's (next, iteration) and grpc.aio's
    (read, async iteration) calls are: it answers its messages in order,
    then stays open (a claim) or ends (iterated to its end)."""

    def __init__(self, responses):
        self._responses = responses if isinstance(responses, list) else [responses]
        self.cancelled = False

    def __iter__(self):
        return self

    def __next__(self):
        if not self._responses:
            raise StopIteration
        return self._responses.pop(0)

    def __aiter__(self):
        return self

    async def __anext__(self):
        if not self._responses:
            raise StopAsyncIteration
        return self._responses.pop(0)

    async def read(self):
        return self._responses.pop(0)

    def cancel(self):
        self.cancelled = True


def _fake(client, awaitable):
    sent = []
    client._stubs = {stub: FakeStub(stub, sent, awaitable) for stub in client._stubs}
    return sent


@pytest.fixture
def built(monkeypatch):
    """The names of the _calls builders called, in order."""
    names = []
    for name in RPC_METHODS + ["add_deferred"]:
        def spy(*args, _name=name, _real=getattr(_calls, name), **kwargs):
            names.append(_name)
            return _real(*args, **kwargs)
        monkeypatch.setattr(_calls, name, spy)
    return names


def _run_sync(name, address):
    args, kwargs = ARGUMENTS[name]
    with kjit.Client(address, token="t", timeout=12) as client:
        sent = _fake(client, awaitable=False)
        return getattr(client, name)(*args, **kwargs), sent


def _run_async(name, address):
    args, kwargs = ARGUMENTS[name]

    async def main():
        async with kjit.aio.Client(address, token="t", timeout=12) as client:
            sent = _fake(client, awaitable=True)
            return await getattr(client, name)(*args, **kwargs), sent

    return asyncio.run(main())


@pytest.mark.parametrize("name", RPC_METHODS)
def test_both_clients_send_the_shared_call_and_return_its_result(name, built, tmp_path):
    address = str(tmp_path / "nobody.sock")  # never connected to: the stubs are fakes
    sync_result, sync_sent = _run_sync(name, address)
    sync_built = list(built)
    built.clear()
    async_result, async_sent = _run_async(name, address)

    assert sync_built == list(built) and sync_built[0] == name
    assert sync_sent == async_sent and sync_sent
    assert type(sync_result) is type(async_result) and sync_result == async_result
    assert all(timeout == (None if rpc == "cache.ClaimBlobGroup" else 12) and metadata == (("authorization", "Bearer t"),)
               for rpc, _, timeout, metadata in sync_sent)

    # What was sent is what the builder makes, to an RPC the daemon offers
    # with that request type, and the result is the builder's reading of the answer.
    call = _build(name)
    assert sync_sent[0][0] == call.rpc and sync_sent[0][1] == _serialized(_build(name).request)
    stub, method = call.rpc.split(".")
    if stub in SERVICES:
        descriptor = SERVICES[stub].methods_by_name[method]
        requests = list(call.request) if descriptor.client_streaming else [call.request]
        responses = RESPONSES[call.rpc] if descriptor.server_streaming and name not in HOLDING else [
            RESPONSES[call.rpc]]
        assert requests and all(r.DESCRIPTOR is descriptor.input_type for r in requests)
        assert all(r.DESCRIPTOR is descriptor.output_type for r in responses)
    if name in RECEIVING:
        for chunk in RESPONSES[call.rpc]:
            call.result.take(chunk)
        assert sync_result == call.result.finish()
    elif name != "get_blob_group":
        assert sync_result == call.result(RESPONSES[call.rpc])
    if name in HOLDING:
        assert sync_result.held and async_result.held, "a claim keeps its call open"


def _build(name):
    """The builder's Call for ARGUMENTS[name], the method's defaults filled in."""
    args, kwargs = ARGUMENTS[name]
    bound = inspect.signature(getattr(kjit.Client, name)).bind(None, *args, **kwargs)
    bound.apply_defaults()
    arguments = {k: v for k, v in bound.arguments.items() if k not in ("self", "timeout")}
    extra = {}
    for p in inspect.signature(BUILDERS[name]).parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            extra = arguments.pop(p.name)
    return BUILDERS[name](**arguments, **extra)


def test_a_deferred_group_member_is_fetched_by_both(tmp_path):
    address = str(tmp_path / "nobody.sock")
    for result, sent in (_run_sync("get_blob_group", address), _run_async("get_blob_group", address)):
        assert [rpc for rpc, *_ in sent] == ["cache.GetBlobGroup", "cache.GetBlob"]
        assert result.members == {"a.bin": b"a", "b.bin": b"deferred bytes"}
        assert result.complete and result.deferred == []


def test_every_call_names_a_stub_the_clients_hold(tmp_path):
    with kjit.Client(str(tmp_path / "nobody.sock")) as client:
        for rpc in RESPONSES:
            stub, method = rpc.split(".")
            assert callable(getattr(client._stubs[stub], method)), rpc


# The bundle streams, both ways, through both clients ---------------------------

class FakeRpcError(grpc.RpcError):
    """What a call that the daemon ended with a status raises."""

    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return ()


class FailingStream(FakeStream):
    """An export the daemon ends with a status after its first piece."""

    def __next__(self):
        if not self._responses:
            raise FakeRpcError(grpc.StatusCode.PERMISSION_DENIED, "a cache bundle is the operator's")
        return super().__next__()

    async def __anext__(self):
        if not self._responses:
            raise FakeRpcError(grpc.StatusCode.PERMISSION_DENIED, "a cache bundle is the operator's")
        return await super().__anext__()


def _both(address, method, arguments, failing=False, **kwargs):
    """method's results from the sync and the async client, and what each
    sent; arguments() gives each its positional arguments."""
    def fake(client, awaitable):
        sent = _fake(client, awaitable)
        if failing:
            stub = client._stubs["cache"]
            stub.ExportBundle = lambda request, timeout, metadata: FailingStream([_copies("cache.ExportBundle")[0]])
        return sent

    out = []
    with kjit.Client(address) as client:
        sent = fake(client, awaitable=False)
        try:
            out.append((getattr(client, method)(*arguments(), **kwargs), sent))
        except kjit.KjitError as error:
            out.append((error, sent))

    async def main():
        async with kjit.aio.Client(address) as client:
            sent = fake(client, awaitable=True)
            try:
                return await getattr(client, method)(*arguments(), **kwargs), sent
            except kjit.KjitError as error:
                return error, sent

    out.append(asyncio.run(main()))
    return out


def test_an_export_streams_to_a_path_a_file_or_bytes(tmp_path):
    address = str(tmp_path / "nobody.sock")
    whole = b"KJITBNDLthe rest"
    paths = []
    for result, _ in _both(address, "export_bundle", lambda: (paths.append(tmp_path / ("%d.kjb" % len(paths)))
                                                               or paths[-1],)):
        assert result.data is None and (result.entries, result.blobs, result.recipes, result.bytes) == (2, 1, 2, 16)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.kjb", "1.kjb"]  # no .partial left
    assert [p.read_bytes() for p in paths] == [whole, whole]
    files = []
    for result, _ in _both(address, "export_bundle", lambda: (files.append(io.BytesIO()) or files[-1],)):
        assert result.data is None and result.bytes == 16
    assert [f.getvalue() for f in files] == [whole, whole]
    for result, sent in _both(address, "export_bundle", lambda: (), recipes_only=True):
        assert result.data == whole
        assert cache_pb2.ExportBundleRequest.FromString(sent[0][1]) == cache_pb2.ExportBundleRequest(recipes_only=True)


def test_a_failed_export_raises_and_leaves_no_file(tmp_path):
    path = tmp_path / "cache.kjb"
    for error, _ in _both(str(tmp_path / "nobody.sock"), "export_bundle", lambda: (str(path),), failing=True):
        assert isinstance(error, kjit.PermissionDenied) and "operator" in error.details
        assert list(tmp_path.iterdir()) == []


class CountingFile(io.BytesIO):
    """A bundle file that remembers how much each read asked for."""

    def __init__(self, data):
        super().__init__(data)
        self.asked = []

    def read(self, size=-1):
        self.asked.append(size)
        return super().read(size)


def test_an_import_is_sent_in_pieces_read_as_they_go(tmp_path):
    address = str(tmp_path / "nobody.sock")
    path = tmp_path / "cache.kjb"
    path.write_bytes(BUNDLE)
    files = []
    for source in (lambda: (BUNDLE,), lambda: (str(path),), lambda: (path,),
                   lambda: (files.append(CountingFile(BUNDLE)) or files[-1],)):
        for result, sent in _both(address, "import_bundle", source, namespace="team"):
            assert result.entries_imported == 2 and result.skipped_for("already there (kept)") == 1
            [(rpc, messages, _, _)] = sent
            requests = [cache_pb2.ImportBundleRequest.FromString(m) for m in messages]
            assert rpc == "cache.ImportBundle" and len(requests) == 3
            assert [r.namespace for r in requests] == ["team", "", ""]
            assert all(len(r.data) <= _calls.BUNDLE_CHUNK_BYTES for r in requests)
            assert b"".join(r.data for r in requests) == BUNDLE
    # Never the whole file at once, and a caller's file is left open.
    assert all(f.asked and set(f.asked) == {_calls.BUNDLE_CHUNK_BYTES} and not f.closed for f in files)
    # An empty bundle is one message: it names the namespace.
    for _, sent in _both(address, "import_bundle", lambda: (b"",), namespace="team"):
        assert [cache_pb2.ImportBundleRequest.FromString(m) for m in sent[0][1]] == [
            cache_pb2.ImportBundleRequest(namespace="team")]


def test_a_bundle_path_is_closed_and_a_missing_one_fails_before_the_call(tmp_path):
    path = tmp_path / "cache.kjb"
    path.write_bytes(b"KJITBNDL")
    call = _calls.import_bundle(path, namespace=None)
    assert [m.data for m in call.request] == [b"KJITBNDL"] and call.request._file.closed
    with pytest.raises(FileNotFoundError):
        _calls.import_bundle(tmp_path / "absent.kjb", namespace=None)
    with pytest.raises(TypeError):
        _calls.import_bundle(42, namespace=None)
