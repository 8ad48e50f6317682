"""Remote compile for Triton (KJIT_TRITON=compile, kjit.triton.install(compile=True))
with the real triton package and a real kjitd, whose default Triton build is
the same Triton (scripts/install-deps.sh's .deps/triton-builds/triton-3.9.0):
the process runs its front end and kjitd the rest, and what lands in
Triton's cache directory is what a local compile writes, byte for byte,
under the same key. No GPU needed: triton.compile for an explicit target
stops at the binary."""

import json
import os
from pathlib import Path

import pytest

from conftest import files_of, unique
from test_triton import run_child

triton = pytest.importorskip("triton", reason="the triton package is not installed (client/python/run-tests.sh "
                                               "installs it; pip install triton)")
import kjit  # noqa: E402


@pytest.fixture
def remote_env(daemon, xdg_cache):
    builds = kjit.Client(daemon.socket).triton_builds()
    mine = "triton-" + triton.__version__
    if mine not in [b.name for b in builds]:
        if os.environ.get("CI"):
            pytest.fail("kjitd has no %s (it has %s): CI installs it" % (mine, [b.name for b in builds]))
        pytest.skip("kjitd has no Triton build %s (scripts/install-deps.sh installs it)" % mine)
    os.environ.pop("KJIT_ADDRESS", None)
    # A namespace of the test's own: the first process finds nothing in kjitd's blobs.
    return {"KJIT_SOCKET": daemon.socket, "KJIT_TRITON": "compile", "KJIT_TRITON_NAMESPACE": unique("triton"),
            "XDG_CACHE_HOME": xdg_cache}


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_remote_compile_writes_what_a_local_compile_writes(daemon, remote_env, tmp_path, target, capsys):
    env = {"KJIT_CHILD_TARGET": target, "KJIT_CHILD_OPTIONS": json.dumps({"num_warps": 8})}
    with kjit.Client(daemon.socket) as client:
        compiles_before = client.stats().compiles
        remote = run_child(tmp_path, "remote", tmp_path / "remote", dict(remote_env, **env))
        compiles_after = client.stats().compiles
    local = run_child(tmp_path, "local", tmp_path / "local", env)

    assert remote["remote"] == {"remote": 3}, remote["remote"]
    # The process assembled nothing; the daemon compiled the three kernels.
    assert remote["assembles"] == []
    assert compiles_after - compiles_before == 3
    # The same keys, and every file the same bytes: binary, metadata, IR.
    assert remote["hashes"] == local["hashes"]
    assert remote["cubins"] == local["cubins"]
    mine, theirs = files_of(tmp_path / "remote"), files_of(tmp_path / "local")
    assert sorted(mine) == sorted(theirs)
    assert len(mine) == 3 * 8  # per kernel: source, ttir, ttgir, llir, ptx/amdgcn, binary, json, group
    for name in theirs:
        assert mine[name] == theirs[name], name
    with capsys.disabled():
        print("\n%s, 3 kernels: local %.2f s (CPU %.2f s), through kjitd %.2f s (CPU %.2f s)" % (
            target, local["seconds"], local["cpu_seconds"], remote["seconds"], remote["cpu_seconds"]))


def test_a_second_process_gets_every_kernel_and_the_daemon_compiles_nothing(daemon, remote_env, tmp_path):
    run_child(tmp_path, "first", tmp_path / "first", remote_env)
    with kjit.Client(daemon.socket) as client:
        before = client.stats().compiles
        second = run_child(tmp_path, "second", tmp_path / "second", remote_env)
        assert client.stats().compiles == before
    assert second["remote"] == {"remote": 3}
    assert second["assembles"] == []
    assert files_of(tmp_path / "second").keys() == files_of(tmp_path / "first").keys()


def test_install_from_code_is_the_same_as_the_environment(daemon, remote_env, tmp_path):
    env = dict(remote_env, KJIT_CHILD_INSTALL="1")
    del env["KJIT_TRITON"]
    result = run_child(tmp_path, "installed", tmp_path / "installed", env)
    assert result["remote"] == {"remote": 3}
    assert result["assembles"] == []


def test_without_a_daemon_every_kernel_compiles_locally_and_says_why(tmp_path, xdg_cache):
    env = {"KJIT_SOCKET": str(tmp_path / "nobody.sock"), "KJIT_TRITON": "compile", "KJIT_TRITON_TIMEOUT": "2",
           "XDG_CACHE_HOME": xdg_cache}
    result = run_child(tmp_path, "alone", tmp_path / "alone", env)
    local = run_child(tmp_path, "local", tmp_path / "local", {})
    assert result["remote"]["local"] == 3
    assert result["remote"]["local: kjitd cannot be reached"] == 3
    assert result["hashes"] == local["hashes"]
    assert len(result["assembles"]) >= 3


def test_an_option_kjitd_does_not_take_compiles_locally(daemon, remote_env, tmp_path):
    # A CUDA option kjitd does not let a request set: the process compiles it.
    env = dict(remote_env, KJIT_CHILD_OPTIONS=json.dumps({"ptx_options": "--warn-on-spills"}))
    result = run_child(tmp_path, "option", tmp_path / "option", env)
    assert result["remote"]["local"] == 3
    assert result["remote"]["local: option ptx_options='--warn-on-spills' is not one kjitd takes"] == 3
    assert len(result["assembles"]) >= 3


def test_the_cache_manager_alone_stays_the_cache_only_mode(daemon, tmp_path):
    env = {"KJIT_SOCKET": daemon.socket, "TRITON_CACHE_MANAGER": "kjit.triton:KjitCacheManager",
           "KJIT_TRITON_NAMESPACE": unique("triton")}
    result = run_child(tmp_path, "cache-only", tmp_path / "cache-only", env)
    assert result["remote"] is None  # remote compile never loaded
    assert len(result["assembles"]) >= 3


def test_a_plugin_configured_on_the_daemon_reaches_every_process_under_its_own_key(tmp_path, xdg_cache):
    """Triton's test plugin, configured once on the daemon with an edit that
    runs its pass first in ttgir (it renames the kernel to foo): a process
    compiling through kjitd gets the renamed kernel, under a key of its own,
    with nothing installed in the process; a second process gets it from
    kjitd; without the plugin the keys are Triton's own again."""
    from conftest import Daemon
    plugin = Path(triton.__file__).parent / "plugins" / "libTritonPluginsTestLib.so"
    if not plugin.is_file():
        pytest.skip("this triton ships no test plugin at %s" % plugin)
    config = tmp_path / "plugin.toml"
    config.write_text('[triton]\nplugins = ["%s"]\n\n[[edits]]\npipeline = "triton-nvidia"\nop = "insert-before"\n'
                      'anchor = "convert-triton-to-tritongpu"\npass = "tritongpu-plugin"\n' % plugin)
    daemon = Daemon(tmp_path / "d", extra_args=["--config", str(config)])
    (tmp_path / "d").mkdir()
    daemon.start()
    try:
        env = {"KJIT_SOCKET": daemon.socket, "KJIT_TRITON": "compile", "KJIT_TRITON_NAMESPACE": unique("triton"),
               "XDG_CACHE_HOME": xdg_cache}
        first = run_child(tmp_path, "first", tmp_path / "first", env)
        second = run_child(tmp_path, "second", tmp_path / "second", env)
    finally:
        daemon.stop()
    local = run_child(tmp_path, "local", tmp_path / "local", {})
    assert first["remote"] == {"remote": 3} and second["remote"] == {"remote": 3}
    assert first["assembles"] == [] and second["assembles"] == []
    assert first["hashes"] == second["hashes"]
    # Every key differs from Triton's own for the same kernel, and so does the binary.
    for name in local["hashes"]:
        assert first["hashes"][name] != local["hashes"][name]
        assert first["cubins"][name] != local["cubins"][name]
    # The plugin's pass ran: the kernel is named foo in its metadata.
    names = {json.loads(p.read_text())["name"] for p in (tmp_path / "first").rglob("*.json")
             if not p.name.startswith("__grp__")}
    assert names == {"foo"}


# Drops a pass the ttgir stage runs for every kernel, which changes each
# kernel's TTGIR: a change Triton's key does not know of.
NO_SCCP = [{"op": "disable", "anchor": "ttgir/sccp"}]


def ttgir_of(cache_dir: Path) -> dict:
    return {p.stem: p.read_text() for p in cache_dir.rglob("*.ttgir")}


def test_a_process_asks_for_its_own_edits_and_gets_kernels_under_keys_of_their_own(daemon, remote_env, tmp_path):
    """KJIT_TRITON_EDITS (or install(edits=...)): kjitd applies the process's
    edits after its own; the kernels get keys no process without the edits
    has, a second process with the same edits compiles nothing, and one
    without them gets Triton's own keys."""
    env = dict(remote_env, KJIT_TRITON_EDITS=json.dumps(NO_SCCP))
    with kjit.Client(daemon.socket) as client:
        before = client.stats().compiles
        first = run_child(tmp_path, "edited", tmp_path / "edited", env)
        compiled = client.stats().compiles - before
        from_code = dict(remote_env, KJIT_CHILD_INSTALL="1", KJIT_CHILD_EDITS=json.dumps(NO_SCCP))
        del from_code["KJIT_TRITON"]
        second = run_child(tmp_path, "edited-again", tmp_path / "edited-again", from_code)
        assert client.stats().compiles - before == compiled
        plain = run_child(tmp_path, "plain", tmp_path / "plain", remote_env)
    local = run_child(tmp_path, "local", tmp_path / "local", {})
    assert first["remote"] == {"remote": 3} and second["remote"] == {"remote": 3}, (first["remote"], second["remote"])
    assert first["assembles"] == [] and second["assembles"] == [] and compiled == 3
    assert first["hashes"] == second["hashes"]
    assert plain["hashes"] == local["hashes"]
    for name in local["hashes"]:
        assert first["hashes"][name] != local["hashes"][name], name
    # The edit ran: no kernel's TTGIR is the one Triton makes.
    edited, unedited = ttgir_of(tmp_path / "edited"), ttgir_of(tmp_path / "local")
    assert sorted(edited) == sorted(unedited)
    for name in unedited:
        assert edited[name] != unedited[name], name


def test_edits_the_daemon_refuses_or_cannot_read_leave_the_kernels_to_the_process(daemon, remote_env, tmp_path):
    # An anchor in the stage Triton skips for TTIR: kjitd says INVALID_ARGUMENT
    # and the process compiles each kernel itself, under Triton's own keys.
    skipped = dict(remote_env, KJIT_TRITON_EDITS=json.dumps([{"op": "disable", "anchor": "ttir/triton-combine"}]))
    refused = run_child(tmp_path, "refused", tmp_path / "refused", skipped)
    assert refused["remote"]["local"] == 3, refused["remote"]
    reasons = [r for r in refused["remote"] if r.startswith("local: kjitd did not compile it")]
    assert reasons and "triton_edits[0]" in reasons[0] and "skips" in reasons[0], refused["remote"]
    malformed = dict(remote_env, KJIT_TRITON_EDITS="disable coalesce")
    unread = run_child(tmp_path, "unread", tmp_path / "unread", malformed)
    assert unread["remote"]["local"] == 3
    assert any(r.startswith("local: KJIT_TRITON_EDITS is not a JSON list of edits") for r in unread["remote"])
    local = run_child(tmp_path, "local", tmp_path / "local", {})
    assert refused["hashes"] == unread["hashes"] == local["hashes"]


def test_processes_started_together_compile_each_kernel_once(daemon, remote_env, tmp_path):
    from test_triton import finish_child, start_child
    # Options no other test compiles with: kernels new to the daemon.
    remote_env = dict(remote_env, KJIT_CHILD_OPTIONS=json.dumps({"num_warps": 2}))
    with kjit.Client(daemon.socket) as client:
        before = client.stats().compiles
        started = [start_child(tmp_path, "p%d" % i, tmp_path / ("p%d" % i), remote_env) for i in range(4)]
        results = [finish_child(s) for s in started]
        assert client.stats().compiles - before == 3
    for result in results:
        assert result["remote"] == {"remote": 3}
        assert result["assembles"] == []
        assert result["hashes"] == results[0]["hashes"]


def test_a_new_gpu_type_finds_the_kernels_built_ahead_after_kjit_warm(daemon, remote_env, tmp_path):
    """Recorded on sm_90 by a process's remote compiles, built for sm_107 by
    `kjit warm --target cuda:107`: a process on sm_107 runs its front end only."""
    import subprocess
    from conftest import KJITD
    remote_env = dict(remote_env, KJIT_CHILD_OPTIONS=json.dumps({"num_warps": 1}))  # kernels new to the daemon
    run_child(tmp_path, "sm90", tmp_path / "sm90", remote_env)
    kjit_cli = KJITD.parent / "kjit"  # the CLI built beside the daemon
    if not os.access(kjit_cli, os.X_OK):
        pytest.fail("no kjit at %s: build it (make build)" % kjit_cli, pytrace=False)
    warm = subprocess.run([str(kjit_cli), "-s", daemon.socket, "warm", "--target", "cuda:107", "--json"],
                          capture_output=True, text=True, timeout=900)
    # Other tests' recipes may fail for sm_107 (the exit status says so): these three must build.
    assert warm.stdout.strip(), warm.stderr
    assert json.loads(warm.stdout)["compiled"] >= 3, warm.stdout
    with kjit.Client(daemon.socket) as client:
        before = client.stats().compiles
        on_107 = run_child(tmp_path, "sm107", tmp_path / "sm107", dict(remote_env, KJIT_CHILD_TARGET="cuda:107"))
        assert client.stats().compiles == before
    assert on_107["remote"] == {"remote": 3}
    assert on_107["assembles"] == []


def fbtriton_interpreter():
    """(python, triton package directory, PYTHONPATH) of the daemon's
    fbtriton build with the client beside it (run-tests.sh installs it in
    $KJIT_FBTRITON_PATH), else skips (fails under CI)."""
    repo = Path(__file__).resolve().parents[3]
    pythons = sorted(repo.glob(".deps/triton-builds/fbtriton-*/bin/python"))
    client_path = os.environ.get("KJIT_FBTRITON_PATH", "")
    missing = None
    if not pythons:
        missing = "no fbtriton build in %s (scripts/install-deps.sh installs it)" % (repo / ".deps/triton-builds")
    elif not client_path or not (Path(client_path) / "kjit").is_dir():
        missing = "the client is not installed for fbtriton (client/python/run-tests.sh installs it)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing + ": CI installs it", pytrace=False)
        pytest.skip(missing)
    packages = sorted(pythons[0].parent.parent.glob("lib/python3*/site-packages/triton"))
    return str(pythons[0]), packages[0], client_path


def test_fbtriton_compiles_through_kjitd_as_upstream_triton_does(daemon, xdg_cache, tmp_path, capsys):
    """A process running fbtriton, turned on by KJIT_TRITON=compile (its
    client is on PYTHONPATH, where no .pth file runs, so the child also
    installs from code): kjitd routes it to its own fbtriton build, and what
    lands in Triton's cache directory is what fbtriton compiling locally
    writes, byte for byte, under the same keys."""
    python, triton_dir, client_path = fbtriton_interpreter()
    builds = [b.name for b in kjit.Client(daemon.socket).triton_builds()]
    fbtriton_builds = [name for name in builds if name.startswith("fbtriton-")]
    if not fbtriton_builds:
        pytest.fail("kjitd lists no fbtriton build (it has %s) though %s exists" % (builds, python), pytrace=False)
    os.environ.pop("KJIT_ADDRESS", None)
    interpreter = {"python": python, "triton_dir": triton_dir}
    env = {"PYTHONPATH": client_path, "KJIT_CHILD_OPTIONS": json.dumps({"num_warps": 4})}
    remote_env = dict(env, KJIT_SOCKET=daemon.socket, KJIT_TRITON="compile", KJIT_CHILD_INSTALL="1",
                      KJIT_TRITON_NAMESPACE=unique("fbtriton"), XDG_CACHE_HOME=xdg_cache)
    with kjit.Client(daemon.socket) as client:
        before = client.stats().compiles
        remote = run_child(tmp_path, "fb-remote", tmp_path / "fb-remote", remote_env, **interpreter)
        compiled = client.stats().compiles - before
        second = run_child(tmp_path, "fb-second", tmp_path / "fb-second", remote_env, **interpreter)
        assert client.stats().compiles - before == compiled
    local = run_child(tmp_path, "fb-local", tmp_path / "fb-local", env, **interpreter)

    assert remote["triton"] == local["triton"]
    assert remote["remote"] == {"remote": 3}, remote["remote"]
    assert remote["assembles"] == [] and compiled == 3
    assert second["remote"] == {"remote": 3} and second["assembles"] == []
    assert remote["hashes"] == local["hashes"] == second["hashes"]
    assert remote["cubins"] == local["cubins"]
    mine, theirs = files_of(tmp_path / "fb-remote"), files_of(tmp_path / "fb-local")
    assert sorted(mine) == sorted(theirs)
    for name in theirs:
        assert mine[name] == theirs[name], name
    with capsys.disabled():
        print("\nfbtriton %s, 3 kernels: local %.2f s (CPU %.2f s), through kjitd %.2f s (CPU %.2f s)" % (
            local["triton"], local["seconds"], local["cpu_seconds"], remote["seconds"], remote["cpu_seconds"]))


def test_a_daemon_can_warm_every_build_so_the_first_fbtriton_process_waits_for_none(tmp_path, xdg_cache, capsys):
    """[triton] prestart_builds = ["*"]: the prestarted Triton worker has
    every build's interpreter started and warm before any request, and the
    first fbtriton process compiles through it."""
    import time
    from conftest import Daemon
    python, triton_dir, client_path = fbtriton_interpreter()
    config = tmp_path / "prestart.toml"
    config.write_text('[triton]\nprestart_builds = ["*"]\n')
    (tmp_path / "d").mkdir()
    daemon = Daemon(tmp_path / "d", extra_args=["--config", str(config)], triton_prestart=True)
    daemon.start()
    try:
        names = sorted(b.name for b in kjit.Client(daemon.socket).triton_builds())
        assert any(n.startswith("fbtriton-") for n in names), names
        deadline = time.monotonic() + 300
        warm = None
        while warm is None and time.monotonic() < deadline:
            warm = next((line for line in daemon.log_text().splitlines() if "imported and warm" in line), None)
            time.sleep(0.2)
        assert warm is not None, "no Triton worker became warm within 300 s:\n" + daemon.log_text()
        for name in names:
            assert name in warm, (name, warm)
        env = {"PYTHONPATH": client_path, "KJIT_CHILD_OPTIONS": json.dumps({"num_warps": 2}),
               "KJIT_SOCKET": daemon.socket, "KJIT_TRITON": "compile", "KJIT_CHILD_INSTALL": "1",
               "KJIT_TRITON_NAMESPACE": unique("fbtriton-warm"), "XDG_CACHE_HOME": xdg_cache}
        os.environ.pop("KJIT_ADDRESS", None)
        first = run_child(tmp_path, "fb-first", tmp_path / "fb-first", env, python=python, triton_dir=triton_dir)
    finally:
        daemon.stop()
    assert first["remote"] == {"remote": 3}, first["remote"]
    assert first["assembles"] == []
    with capsys.disabled():
        print("\nfbtriton's first process on a daemon that warmed every build: 3 kernels in %.2f s (CPU %.2f s)" % (
            first["seconds"], first["cpu_seconds"]))
