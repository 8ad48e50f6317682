"""kjit.Client and kjit.aio.Client are one client over two transports: the
same methods and signatures, each sending the Call kjit._calls builds for it.
Needs no daemon: the stubs are replaced by fakes that record what is sent."""

import ast
import asyncio
import inspect
import pathlib

import pytest

import kjit
import kjit._client
import kjit.aio
from kjit import _calls, _health
from kjit.v1 import cache_pb2, compiler_pb2, diagnostics_pb2, launch_pb2

# Methods that fetch a group's deferred members and merge them with add_deferred.
DEFERRING = {"get_blob_group", "claim_blob_group"}
# Methods whose call stays open past its first answer: sent without a deadline.
HOLDING = {"claim_blob_group"}
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

# Arguments for each RPC method, as a user passes them: the defaults left to
# the method, so that both clients' defaults are exercised too.
ARGUMENTS = {
    "compile": ((SOURCE,), dict(target=["cuda:90"], options="-DX=1", headers={"a.h": "int a;"}, name="k.cu",
                                allow_ptx_fallback=True)),
    "describe_pipeline": (("ptx", "cuda:90"), {}),
    "plan": ((SOURCE, "k"), dict(grid=(4, 2), block=128, cooperative=True, target="cuda:90", options=["-DY"])),
    "stats": ((), {}),
    "explain": ((KEY, {"source": SOURCE, "options": ["-DX=1"]}), dict(target="cuda:90")),
    "cache_list": ((5,), {}),
    "cache_remove": ((KEY,), {}),
    "cache_gc": ((1 << 20,), {}),
    "cache_verify": ((), {}),
    "put_blob": (("ns", "key", "a.bin", "text"), {}),
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
}

# What the fake daemon answers, per "<stub>.<Method>".
RESPONSES = {
    "compiler.Compile": compiler_pb2.CompileResponse(
        artifact=b"\x7fELF", target="cuda:90", cache="compiled", key=KEY,
        kernels=[compiler_pb2.KernelInfo(name="k", registers=7)]),
    "compiler.DescribePipeline": compiler_pb2.DescribePipelineResponse(name="ptx", toml="[pipelines.ptx]"),
    "launcher.PlanLaunch": launch_pb2.PlanLaunchResponse(key=KEY, plan=launch_pb2.LaunchPlan(kernel="k")),
    "cache.Stats": cache_pb2.StatsResponse(compiles=3, lookups=5),
    "cache.Explain": cache_pb2.ExplainResponse(left_key=KEY, right_key="cd" * 32),
    "cache.List": cache_pb2.ListResponse(entries=[cache_pb2.CacheListing(key=KEY, bytes=10)]),
    "cache.Remove": cache_pb2.RemoveResponse(),
    "cache.Gc": cache_pb2.GcResponse(removed_entries=2, bytes_after=7),
    "cache.Verify": cache_pb2.VerifyResponse(checked=4, removed=1),
    "cache.PutBlob": cache_pb2.PutBlobResponse(cache_key="blob-key", already_stored=True, conflict=True),
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
}

SERVICES = {"compiler": compiler_pb2.DESCRIPTOR.services_by_name["Compiler"],
            "cache": cache_pb2.DESCRIPTOR.services_by_name["Cache"],
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


class FakeStub:
    """A stub whose every method records its call and answers RESPONSES[rpc]."""

    def __init__(self, stub, sent, awaitable):
        self._stub, self._sent, self._awaitable = stub, sent, awaitable

    def __getattr__(self, method):
        rpc = "%s.%s" % (self._stub, method)

        def call(request, timeout, metadata):
            self._sent.append((rpc, request.SerializeToString(deterministic=True), timeout, metadata))
            response = type(RESPONSES[rpc])()
            response.CopyFrom(RESPONSES[rpc])
            return response

        async def call_async(request, timeout, metadata):
            return call(request, timeout, metadata)

        stub, name = rpc.split(".")
        if stub in SERVICES and SERVICES[stub].methods_by_name[name].server_streaming:
            return lambda request, timeout, metadata: FakeStream(call(request, timeout, metadata))
        return call_async if self._awaitable else call


class FakeStream:
    """A server-streaming call that answers one message and stays open, as
    grpc's (next) and grpc.aio's (read) calls do."""

    def __init__(self, response):
        self._responses = [response]
        self.cancelled = False

    def __next__(self):
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
    assert sync_sent[0][0] == call.rpc and sync_sent[0][1] == call.request.SerializeToString(deterministic=True)
    stub, method = call.rpc.split(".")
    if stub in SERVICES:
        descriptor = SERVICES[stub].methods_by_name[method]
        assert call.request.DESCRIPTOR is descriptor.input_type
        assert RESPONSES[call.rpc].DESCRIPTOR is descriptor.output_type
    if name != "get_blob_group":
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
