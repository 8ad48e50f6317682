"""A real kjitd per test session, on a unix socket and a loopback TCP port,
with its own cache directory; and an in-process fake daemon for what kjitd
does not do (check tokens, speak TLS)."""

import itertools
import os
import socket
import subprocess
import time
from concurrent import futures
from pathlib import Path

import grpc
import pytest

import kjit

REPO = Path(__file__).resolve().parents[3]
KJITD = Path(os.environ.get("KJITD") or REPO / "build" / "bin" / "kjitd")
DESCRIPTIONS_DIR = KJITD.resolve().parent.parent / "triton-descriptions"
START_SECONDS = 60

_counter = itertools.count()


def unique(tag: str = "k") -> str:
    """A name no other test in this session uses, so each test compiles afresh."""
    return "%s_%d_%d" % (tag, os.getpid(), next(_counter))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, root: Path, extra_args=(), triton_prestart=False):
        self.root = root
        self.extra_args = list(extra_args)
        self.triton_prestart = triton_prestart
        self.socket = str(root / "k.sock")
        self.cache_dir = root / "cache"
        self.log = root / "kjitd.log"
        self.tcp = "127.0.0.1:%d" % free_port()
        self.process = None

    def start(self):
        if not os.access(KJITD, os.X_OK):
            pytest.fail("no kjitd at %s: build it (make build) or set KJITD" % KJITD, pytrace=False)
        env = dict(os.environ, XDG_CACHE_HOME=str(self.root / "xdg-cache"), XDG_RUNTIME_DIR=str(self.root))
        env.pop("KJIT_SOCKET", None)
        # Plaintext TCP, on the loopback, for the tests of TCP addresses.
        # No Triton worker ahead of a Triton request unless asked: each of
        # the suite's daemons would pay seconds of CPU finding the builds and
        # starting one.
        # The Triton builds' descriptions, kept beside the kjitd binary's
        # build: the suite's daemons describe the builds once between them
        # (and not at all when an earlier test run of that build did).
        command = [str(KJITD), "--socket", self.socket, "--listen", self.tcp, "--insecure-listen",
                   "--cache-dir", str(self.cache_dir), "--triton-descriptions-dir", str(DESCRIPTIONS_DIR)] + \
            ([] if self.triton_prestart else ["--no-triton-prestart"]) + self.extra_args
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        # Started once health says SERVING, which kjitd says only once its
        # start-up is over (socket mode, direct-read manifest).
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self.process.poll() is not None:
                pytest.fail("kjitd exited with %d:\n%s" % (self.process.returncode, self.log_text()), pytrace=False)
            if self._serving():
                return
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail("kjitd not started after %ds:\n%s" % (START_SECONDS, self.log_text()), pytrace=False)
            time.sleep(0.05)

    def _serving(self) -> bool:
        # A fresh channel per poll, with subchannels of its own: a channel
        # whose connects failed waits out a growing backoff before it tries
        # again, which would eat into the deadline.
        try:
            with kjit.Client(self.socket, timeout=5,
                             channel_options=[("grpc.use_local_subchannel_pool", 1)]) as client:
                return client.health() == "SERVING"
        except kjit.KjitError:
            return False

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-8000:]
        except OSError:
            return ""


@pytest.fixture(scope="session")
def daemon(tmp_path_factory):
    # A short path: a unix socket's path is limited to about 100 bytes.
    d = Daemon(tmp_path_factory.mktemp("kjitd"))
    d.start()
    yield d
    d.stop()


@pytest.fixture
def client(daemon):
    with kjit.Client(daemon.socket) as c:
        yield c


class FakeDaemon:
    """Answers Health/Check and Compiler/Compile, remembering each call's metadata.

    A compile whose source contains "FAIL" fails INVALID_ARGUMENT with
    fail_log in the kjit-log-bin trailer."""

    fail_log = "".join("fake.cu(%d): error: identifier \"x%d\" is undefined\n" % (i, i) for i in range(400))

    def __init__(self):
        self.metadata = []

    def _remember(self, context):
        self.metadata.append(dict(context.invocation_metadata()))

    def check(self, request, context):
        from kjit import _health
        self._remember(context)
        return _health.HealthCheckResponse(status=1)

    def compile(self, request, context):
        from kjit.v1 import compiler_pb2
        self._remember(context)
        if b"FAIL" in request.input.data:
            context.set_trailing_metadata((("kjit-log-bin", self.fail_log.encode()),
                                           ("kjit-message-bin", b"compilation failed")))
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "compilation failed\n" + self.fail_log[:100])
        return compiler_pb2.CompileResponse(artifact=b"\x7fELF fake", target=request.target, cache="compiled",
                                            kernels=[compiler_pb2.KernelInfo(name="fake", registers=7)])

    def handlers(self):
        from kjit import _health
        from kjit.v1 import compiler_pb2
        health = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
            "Check": grpc.unary_unary_rpc_method_handler(
                self.check, request_deserializer=_health.HealthCheckRequest.FromString,
                response_serializer=_health.HealthCheckResponse.SerializeToString)})
        compiler = grpc.method_handlers_generic_handler("kjit.v1.Compiler", {
            "Compile": grpc.unary_unary_rpc_method_handler(
                self.compile, request_deserializer=compiler_pb2.CompileRequest.FromString,
                response_serializer=compiler_pb2.CompileResponse.SerializeToString)})
        return (health, compiler)


def serve_fake(address: str, credentials=None):
    fake = FakeDaemon()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers(fake.handlers())
    port = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    server.start()
    return fake, server, port


@pytest.fixture
def fake_daemon(tmp_path):
    address = str(tmp_path / "fake.sock")
    fake, server, _ = serve_fake("unix:" + address)
    fake.address = address
    yield fake
    server.stop(grace=None)


def files_of(cache_dir: Path) -> dict:
    """Every file of Triton's cache directory by key directory and name; the
    group files' paths made relative, since they name the directory."""
    out = {}
    for path in cache_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.name.startswith("__grp__"):
                data = data.replace(str(cache_dir).encode(), b"CACHE")
            out["%s/%s" % (path.parent.name, path.name)] = data
    return out


@pytest.fixture(scope="module")
def xdg_cache(tmp_path_factory):
    """The processes' cache directory (the digest of libtriton.so, the daemon's
    builds): shared by this module's processes, never the user's own."""
    return str(tmp_path_factory.mktemp("xdg-cache"))
