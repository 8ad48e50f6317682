"""kjit.cutile with the real cuda-tile package: a process whose cuTile cache
is empty gets its cubins from kjitd and runs tileiras not at all; those
cubins are byte for byte cuTile's own; without a daemon cuTile compiles as
it would without kjit. And install's checks of the cuTile functions it
replaces, and its error handling, with a stand-in client.

No GPU needed: cuTile's export_kernel for an explicit sm stops at the cubin.
The end-to-end tests need tileiras ($KJIT_TILEIRAS, build/cutile-venv's, or
scripts/install-deps.sh's .deps/tileiras): they start a kjitd of their own
with --tileiras, and put a wrapper of it first on the children's PATH, where
cuTile's own compiles find it (and log each run)."""

import glob
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, Daemon

ct = pytest.importorskip("cuda.tile", reason="cuda-tile is not installed (client/python/run-tests.sh installs it "
                                             "where a tileiras is present; pip install cuda-tile)")
import cuda.tile._compile as cutile_compile  # noqa: E402

import kjit  # noqa: E402
import kjit.cutile  # noqa: E402

CHILD = Path(__file__).with_name("cutile_child.py")
CHILD_SECONDS = 600
SM = "sm_90"
KERNELS = ["vector_add", "matmul"]


def find_tileiras():
    configured = os.environ.get("KJIT_TILEIRAS")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    patterns = [str(REPO / "build" / "cutile-venv" / "lib" / "python3*" / "site-packages" / "nvidia" / "cu*" / "bin"
                    / "tileiras"),
                str(REPO / ".deps" / "tileiras" / "nvidia" / "cu*" / "bin" / "tileiras")]
    for pattern in patterns:
        for candidate in sorted(glob.glob(pattern), reverse=True):
            if os.access(candidate, os.X_OK):
                return candidate
    return None


@pytest.fixture(scope="module")
def tileiras():
    found = find_tileiras()
    if found is None:
        pytest.skip("no tileiras (set KJIT_TILEIRAS, run scripts/install-deps.sh with KJIT_INSTALL_TILEIRAS=1, or pip "
                    "install \"cuda-tile[tileiras]\" into build/cutile-venv)")
    return found


@pytest.fixture(scope="module")
def tile_daemon(tmp_path_factory, tileiras):
    d = Daemon(tmp_path_factory.mktemp("kjitd-tileir"),
               ["--tileiras", tileiras, "--compile-workers", "2", "--log-level", "warn"])
    d.start()
    yield d
    d.stop()


def run_child(tmp_path: Path, name: str, tileiras: str, cache_dir: Path, socket, use_kjit: bool,
              kernels=KERNELS) -> dict:
    """Runs cutile_child.py in a fresh process with cuTile's cache at
    cache_dir and a logging tileiras wrapper first on PATH."""
    bin_dir = tmp_path / ("%s-bin" % name)
    bin_dir.mkdir()
    log = tmp_path / ("%s.tileiras.log" % name)
    wrapper = bin_dir / "tileiras"
    wrapper.write_text('#!/bin/sh\nprintf "%%s\\n" "$*" >> "%s"\nexec "%s" "$@"\n' % (log, tileiras))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, CUDA_TILE_CACHE_DIR=str(cache_dir), PATH=str(bin_dir) + os.pathsep + os.environ["PATH"])
    # tileiras takes CUDA_HOME's libraries over its own wheel's.
    env.pop("CUDA_HOME", None)
    env.pop("KJIT_ADDRESS", None)
    if socket is None:
        env.pop("KJIT_SOCKET", None)
    else:
        env["KJIT_SOCKET"] = str(socket)
    command = [sys.executable, str(CHILD), str(tmp_path / ("%s-out" % name)), SM] + list(kernels)
    if use_kjit:
        command.append("--kjit")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=CHILD_SECONDS)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wrapper_runs"] = log.read_text().splitlines() if log.exists() else []
    result["stderr"] = done.stderr
    result["cubin_bytes"] = {k: Path(p).read_bytes() for k, p in result["cubins"].items()}
    return result


@pytest.fixture(scope="module")
def plain(tmp_path_factory, tileiras):
    """cuTile's own cubins, compiled by a process without kjit."""
    tmp = tmp_path_factory.mktemp("cutile-plain")
    result = run_child(tmp, "plain", tileiras, tmp / "cache", None, use_kjit=False)
    assert result["tileiras_runs"], "cuTile without kjit runs tileiras"
    return result


def test_a_process_with_an_empty_cutile_cache_gets_its_cubins_from_kjit_and_runs_no_tileiras(
        tile_daemon, tileiras, tmp_path):
    cache = tmp_path / "cutile-cache"
    first = run_child(tmp_path, "first", tileiras, cache, tile_daemon.socket, use_kjit=True)
    assert first["tileiras_runs"] == [], first["tileiras_runs"]
    assert first["wrapper_runs"] == [], first["wrapper_runs"]
    assert first["stats"]["kjit"] == len(KERNELS) and first["stats"]["local"] == 0, first["stats"]
    for name, cubin in first["cubin_bytes"].items():
        assert cubin.startswith(b"\x7fELF"), name

    # cuTile stored them in its own cache as it stores its own: a second
    # process on that cache asks kjitd for nothing but the probes.
    assert any(cache.iterdir()), "cuTile's cache is empty"
    second = run_child(tmp_path, "second", tileiras, cache, tile_daemon.socket, use_kjit=True)
    assert second["tileiras_runs"] == [] and second["wrapper_runs"] == []
    assert second["stats"]["kjit"] == 0 and second["stats"]["local"] == 0, second["stats"]
    assert second["cubin_bytes"] == first["cubin_bytes"]


def test_the_cubins_from_kjit_are_cutiles_own_byte_for_byte(tile_daemon, tileiras, plain, tmp_path):
    via_kjit = run_child(tmp_path, "kjit", tileiras, tmp_path / "cache", tile_daemon.socket, use_kjit=True)
    assert via_kjit["stats"]["kjit"] == len(KERNELS), via_kjit["stats"]
    for name in KERNELS:
        assert via_kjit["cubin_bytes"][name] == plain["cubin_bytes"][name], \
            "%s for %s: kjit's cubin (%d bytes) differs from cuTile's own (%d bytes)" % (
                name, SM, len(via_kjit["cubin_bytes"][name]), len(plain["cubin_bytes"][name]))


def test_without_a_daemon_cutile_compiles_as_without_kjit(tileiras, plain, tmp_path):
    # A daemon that was there and is gone: its socket path leads nowhere.
    gone = Daemon(tmp_path)
    gone.start()
    gone.stop()
    result = run_child(tmp_path, "gone", tileiras, tmp_path / "cache", gone.socket, use_kjit=True)
    assert result["stats"]["kjit"] == 0 and result["stats"]["local"] == len(KERNELS), result["stats"]
    assert result["wrapper_runs"], "cuTile's own tileiras compiled"
    assert result["cubin_bytes"] == plain["cubin_bytes"]
    assert result["stderr"].count("without kjitd") == 1, result["stderr"]


# install's checks, and compile_cubin's answers to each kind of refusal, with
# a stand-in client and a stand-in for cuTile's own compile_cubin: no daemon,
# no tileiras.

@pytest.fixture
def uninstalled():
    kjit.cutile.uninstall()
    yield
    kjit.cutile.uninstall()


def test_unit_install_replaces_the_three_functions_and_uninstall_restores_them(uninstalled):
    originals = (cutile_compile.compile_cubin, cutile_compile._get_max_supported_bytecode_version,
                 cutile_compile._get_compiler_version_string)
    kjit.cutile.install(client=object())
    assert kjit.cutile.installed()
    assert cutile_compile.compile_cubin is not originals[0]
    kjit.cutile.install(client=object())  # again: still cuTile's own underneath
    kjit.cutile.uninstall()
    assert (cutile_compile.compile_cubin, cutile_compile._get_max_supported_bytecode_version,
            cutile_compile._get_compiler_version_string) == originals
    assert not kjit.cutile.installed()


def test_unit_install_fails_loudly_when_cutiles_compile_cubin_moved(uninstalled, monkeypatch):
    monkeypatch.delattr(cutile_compile, "compile_cubin")
    with pytest.raises(kjit.cutile.CuTileHookError) as raised:
        kjit.cutile.install(client=object())
    message = str(raised.value)
    assert "cuda.tile._compile.compile_cubin(fname_bytecode, compiler_options, sm_arch" in message
    assert "cuda-tile %s" % ct.__version__ in message and "1.7.x" in message
    assert not kjit.cutile.installed()


def test_unit_install_fails_loudly_when_a_hook_takes_other_parameters(uninstalled, monkeypatch):
    monkeypatch.setattr(cutile_compile, "_get_max_supported_bytecode_version", lambda compiler, temp_dir: None)
    with pytest.raises(kjit.cutile.CuTileHookError, match=r"_get_max_supported_bytecode_version takes "
                                                          r"\(compiler, temp_dir\), not \(temp_dir, allow_dev\)"):
        kjit.cutile.install(client=object())
    assert not kjit.cutile.installed()


def test_unit_install_refuses_an_untested_cutile_version(uninstalled, monkeypatch):
    monkeypatch.setattr(ct, "__version__", "9.1.0")
    with pytest.raises(kjit.cutile.CuTileHookError, match=r"cuda-tile 9\.1\.0 is not a version"):
        kjit.cutile.install(client=object())
    kjit.cutile.install(client=object(), allow_untested=True)
    assert kjit.cutile.installed()


class StandIn:
    """A kjit.Client whose compile raises the error given (or answers), and
    whose claim_blob_group answers claim (or raises it, an exception)."""

    def __init__(self, error=None, claim=None):
        self.error = error
        import grpc  # noqa: PLC0415
        self.claim = claim if claim is not None else kjit.Unimplemented(grpc.StatusCode.UNIMPLEMENTED, "no claims")
        self.calls = []
        self.claims = []
        self.puts = []
        self.timeout = 600.0

    def claim_blob_group(self, namespace, key, group, wait):
        self.claims.append((namespace, key, group, wait))
        if isinstance(self.claim, Exception):
            raise self.claim
        return self.claim

    def put_blob(self, namespace, key, name, data):
        self.puts.append(("blob", namespace, key, name, data))

    def put_blob_group(self, namespace, key, group, names):
        self.puts.append(("group", namespace, key, group, list(names)))

    def compile(self, source, **kwargs):
        self.calls.append(kwargs)
        if self.error is not None:
            raise self.error
        return kjit.CompileResult(artifact=b"\x7fELF from kjit")


def compile_with(client, tmp_path, monkeypatch, opt_level=3, own_error=None, bytecode_bytes=b"\x7fTileIR\x00\x0d\x04",
                 sm="sm_90"):
    """Runs cuTile's compile_cubin, as compile_tile calls it, with kjit.cutile
    installed over a stand-in for cuTile's own (which raises own_error when
    given) and for its tileiras --version."""
    local = []

    def cutile_own(fname_bytecode, compiler_options, sm_arch, timeout_sec, remarks_output_file=None,
                   preview_features=(), linker_inputs=()):
        local.append(sm_arch)
        if own_error is not None:
            raise own_error
        path = Path(fname_bytecode).with_suffix(".cubin")
        path.write_bytes(b"\x7fELF from cuTile")
        return path

    monkeypatch.setattr(cutile_compile, "compile_cubin", cutile_own)
    monkeypatch.setattr(cutile_compile, "_get_compiler_version_string", lambda: "tileiras 13.4 here\n")
    kjit.cutile.install(client=client)
    bytecode = tmp_path / "k.bytecode"
    bytecode.write_bytes(bytecode_bytes)
    from cuda.tile._compiler_options import CompilerOptions  # noqa: PLC0415
    path = cutile_compile.compile_cubin(str(bytecode), CompilerOptions(opt_level=opt_level), sm, None,
                                        remarks_output_file=None, preview_features=(), linker_inputs=())
    return Path(path).read_bytes(), local


def test_unit_compile_cubin_asks_kjitd_with_cutiles_flags(uninstalled, monkeypatch, tmp_path):
    client = StandIn()
    cubin, local = compile_with(client, tmp_path, monkeypatch, opt_level=2)
    assert cubin == b"\x7fELF from kjit" and local == []
    assert client.calls[0]["target"] == "cuda:90" and client.calls[0]["kind"] == "tileir"
    assert client.calls[0]["options"] == ["-O2", "-lineinfo"]
    assert kjit.cutile.stats()["kjit"] == 1


def test_unit_compile_cubin_falls_back_when_kjitd_is_unreachable(uninstalled, monkeypatch, tmp_path):
    import grpc  # noqa: PLC0415
    cubin, local = compile_with(StandIn(kjit.Unavailable(grpc.StatusCode.UNAVAILABLE, "connection refused")),
                                tmp_path, monkeypatch)
    assert cubin == b"\x7fELF from cuTile" and local == ["sm_90"]
    assert kjit.cutile.stats() == {"kjit": 0, "local": 1, "probes": 0, "shared": 0}


def test_unit_an_unreachable_kjitd_is_not_asked_for_claims(uninstalled, monkeypatch, tmp_path):
    import grpc  # noqa: PLC0415
    client = StandIn(kjit.Unavailable(grpc.StatusCode.UNAVAILABLE, "connection refused"))
    cubin, local = compile_with(client, tmp_path, monkeypatch)
    assert cubin == b"\x7fELF from cuTile" and local == ["sm_90"]
    assert client.claims == [] and client.puts == []


def test_unit_compile_cubin_falls_back_when_kjitd_refuses_before_tileiras_runs(uninstalled, monkeypatch, tmp_path):
    import grpc  # noqa: PLC0415
    for error in (kjit.InvalidArgument(grpc.StatusCode.INVALID_ARGUMENT, "option -lineinfo is not one it takes"),
                  kjit.FailedPrecondition(grpc.StatusCode.FAILED_PRECONDITION, "Tile IR needs tileiras"),
                  kjit.ResourceExhausted(grpc.StatusCode.RESOURCE_EXHAUSTED, "the compile queue is full")):
        kjit.cutile.uninstall()
        monkeypatch.undo()
        cubin, local = compile_with(StandIn(error), tmp_path, monkeypatch)
        assert cubin == b"\x7fELF from cuTile", error


def test_unit_compile_cubin_raises_cutiles_error_when_tileiras_rejects_the_kernel(uninstalled, monkeypatch,
                                                                                  tmp_path):
    import grpc  # noqa: PLC0415
    from cuda.tile._exception import TileCompilerExecutionError  # noqa: PLC0415
    error = kjit.InvalidArgument(grpc.StatusCode.INVALID_ARGUMENT,
                                 "k.tileirbc: tileiras could not assemble it for sm_90 (status 1)",
                                 'loc("kernel.py":12:3): error: tile shape must be a power of two\n')
    with pytest.raises(TileCompilerExecutionError) as raised:
        compile_with(StandIn(error), tmp_path, monkeypatch)
    assert "tile shape must be a power of two" in raised.value.message
    assert raised.value.loc.line == 12


# Claims, where this process compiles a kernel itself while kjitd answers
# (here: kjitd's queue is full).

def full_queue():
    import grpc  # noqa: PLC0415
    return kjit.ResourceExhausted(grpc.StatusCode.RESOURCE_EXHAUSTED, "the compile queue is full")


class HeldCall:
    def __init__(self):
        self.cancelled = False

    def cancel(self):
        self.cancelled = True


def claimed():
    call = HeldCall()
    return kjit.BlobClaim(outcome="claimed", claim_id="c1", _call=call), call


def test_unit_a_local_compile_under_the_claim_shares_its_cubin(uninstalled, monkeypatch, tmp_path):
    claim, call = claimed()
    client = StandIn(full_queue(), claim)
    cubin, local = compile_with(client, tmp_path, monkeypatch)
    assert cubin == b"\x7fELF from cuTile" and local == ["sm_90"]
    (namespace, key, group, wait), = client.claims
    assert (namespace, group, wait) == ("cutile", "cubin", 600.0) and len(key) == 64
    assert client.puts == [("blob", "cutile", key, "kernel.cubin", b"\x7fELF from cuTile"),
                           ("group", "cutile", key, "cubin", ["kernel.cubin"])]
    assert call.cancelled  # ended here too, once put
    assert kjit.cutile.stats()["local"] == 1 and kjit.cutile.stats()["shared"] == 0


def test_unit_a_kernel_another_process_compiled_under_its_claim_is_not_compiled_again(uninstalled, monkeypatch,
                                                                                      tmp_path):
    group = kjit.BlobGroup(found=True, members={"kernel.cubin": b"\x7fELF from another process"})
    client = StandIn(full_queue(), kjit.BlobClaim(outcome="hit", group=group))
    cubin, local = compile_with(client, tmp_path, monkeypatch)
    assert cubin == b"\x7fELF from another process" and local == []
    assert client.puts == []
    assert kjit.cutile.stats()["shared"] == 1 and kjit.cutile.stats()["local"] == 0


def test_unit_a_local_compile_that_raises_gives_its_claim_up(uninstalled, monkeypatch, tmp_path):
    claim, call = claimed()
    client = StandIn(full_queue(), claim)
    with pytest.raises(RuntimeError, match="tileiras crashed"):
        compile_with(client, tmp_path, monkeypatch, own_error=RuntimeError("tileiras crashed"))
    assert call.cancelled and client.puts == []


def test_unit_a_wait_that_timed_out_compiles_and_still_shares(uninstalled, monkeypatch, tmp_path):
    client = StandIn(full_queue(), kjit.BlobClaim(outcome="timed-out"))
    cubin, local = compile_with(client, tmp_path, monkeypatch)
    assert cubin == b"\x7fELF from cuTile" and local == ["sm_90"]
    assert [p[0] for p in client.puts] == ["blob", "group"]


class FullQueue(kjit.Client):
    """A real client whose compiles kjitd refuses as a full queue: this
    process compiles for itself, under claims and puts the real daemon keeps."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.claimed_keys = []

    def compile(self, source, **kwargs):
        raise full_queue()

    def claim_blob_group(self, namespace, key, group, wait=0.0, **kwargs):
        self.claimed_keys.append(key)
        return super().claim_blob_group(namespace, key, group, wait, **kwargs)


def test_a_second_put_of_a_kernel_keeps_the_first_cubin_in_kjit(uninstalled, monkeypatch, tmp_path, daemon):
    """The route puts the cubin it compiled under the kernel's claim (or after
    its wait timed out); a cubin another process put meanwhile stays, as the
    first writer's (a cubin already loaded elsewhere is never swapped), and a
    later process gets that one, while this process keeps its own."""
    monkeypatch.setenv("KJIT_CUTILE_CLAIM_WAIT", "5")
    client = FullQueue(daemon.socket)
    other = kjit.Client(daemon.socket)
    bytecode = tmp_path / "k.bytecode"
    bytecode.write_bytes(b"\x7fTileIR\x00\x0d\x04 second put " + str(tmp_path).encode())

    def cutile_own(fname_bytecode, compiler_options, sm_arch, timeout_sec, remarks_output_file=None,
                   preview_features=(), linker_inputs=()):
        # Another process, whose wait for this claim timed out, compiled and put first.
        other.put_blob("cutile", client.claimed_keys[-1], "kernel.cubin", b"\x7fELF of another process")
        other.put_blob_group("cutile", client.claimed_keys[-1], "cubin", ["kernel.cubin"])
        path = Path(fname_bytecode).with_suffix(".cubin")
        path.write_bytes(b"\x7fELF of this process")
        return path

    monkeypatch.setattr(cutile_compile, "compile_cubin", cutile_own)
    monkeypatch.setattr(cutile_compile, "_get_compiler_version_string", lambda: "tileiras 13.4 here\n")
    kjit.cutile.install(client=client)
    from cuda.tile._compiler_options import CompilerOptions  # noqa: PLC0415
    compile_once = lambda: Path(cutile_compile.compile_cubin(  # noqa: E731
        str(bytecode), CompilerOptions(opt_level=3), "sm_90", None, remarks_output_file=None, preview_features=(),
        linker_inputs=())).read_bytes()
    assert compile_once() == b"\x7fELF of this process"
    key = client.claimed_keys[-1]
    assert other.get_blob("cutile", key, "kernel.cubin") == b"\x7fELF of another process"
    # The next compile of the kernel finds the group and compiles nothing.
    assert compile_once() == b"\x7fELF of another process"
    assert kjit.cutile.stats()["local"] == 1 and kjit.cutile.stats()["shared"] == 1
    other.close()
    client.close()


def test_unit_claims_can_be_turned_off(uninstalled, monkeypatch, tmp_path):
    monkeypatch.setenv("KJIT_CUTILE_CLAIM_WAIT", "0")
    client = StandIn(full_queue(), claimed()[0])
    cubin, local = compile_with(client, tmp_path, monkeypatch)
    assert cubin == b"\x7fELF from cuTile" and client.claims == []


def test_unit_the_claim_key_covers_the_bytecode_the_sm_and_the_opt_level(uninstalled, monkeypatch, tmp_path):
    def key(**kwargs):
        kjit.cutile.uninstall()
        monkeypatch.undo()
        client = StandIn(full_queue(), kjit.BlobClaim(outcome="timed-out"))
        compile_with(client, tmp_path, monkeypatch, **kwargs)
        return client.claims[0][1]

    base = key()
    assert key() == base
    others = [key(opt_level=2), key(sm="sm_100"), key(bytecode_bytes=b"\x7fTileIR\x00\x0d\x05")]
    assert len({base, *others}) == 4


# End to end: processes compiling for themselves (their kjitd has no
# tileiras) compile each kernel once between them.

def compile_runs(result):
    """The tileiras runs that compiled a kernel (cuTile names the bytecode
    file after it), not its probes."""
    return [r for r in result["wrapper_runs"] if "--gpu-name" in r and any(k in r for k in KERNELS)]


def test_processes_that_compile_for_themselves_compile_each_kernel_once(tmp_path, tileiras, plain):
    no_tileiras = Daemon(tmp_path / "d", ["--tileiras", str(tmp_path / "no" / "tileiras"), "--log-level", "warn"])
    (tmp_path / "d").mkdir()
    no_tileiras.start()
    try:
        first = run_child(tmp_path, "first", tileiras, tmp_path / "cache1", no_tileiras.socket, use_kjit=True)
        assert first["stats"]["local"] == len(KERNELS) and first["stats"]["kjit"] == 0, first["stats"]
        assert len(compile_runs(first)) == len(KERNELS), first["wrapper_runs"]
        # A second process, its cuTile cache empty: the first one's cubins.
        second = run_child(tmp_path, "second", tileiras, tmp_path / "cache2", no_tileiras.socket, use_kjit=True)
        assert second["stats"]["shared"] == len(KERNELS) and second["stats"]["local"] == 0, second["stats"]
        assert compile_runs(second) == [], second["wrapper_runs"]
        assert second["cubin_bytes"] == first["cubin_bytes"] == plain["cubin_bytes"]
    finally:
        no_tileiras.stop()


def test_processes_compiling_at_once_for_themselves_wait_for_each_other(tmp_path, tileiras, plain):
    no_tileiras = Daemon(tmp_path / "d", ["--tileiras", str(tmp_path / "no" / "tileiras"), "--log-level", "warn"])
    (tmp_path / "d").mkdir()
    no_tileiras.start()
    try:
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415
        with ThreadPoolExecutor(3) as pool:
            results = list(pool.map(lambda i: run_child(tmp_path, "p%d" % i, tileiras, tmp_path / ("cache%d" % i),
                                                        no_tileiras.socket, use_kjit=True), range(3)))
        assert sum(len(compile_runs(r)) for r in results) == len(KERNELS), [r["wrapper_runs"] for r in results]
        assert sum(r["stats"]["shared"] for r in results) == 2 * len(KERNELS), [r["stats"] for r in results]
        for r in results:
            assert r["cubin_bytes"] == plain["cubin_bytes"]
    finally:
        no_tileiras.stop()
