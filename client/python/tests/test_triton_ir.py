"""Triton IR through the Python client: kind="triton" (or a .ttir path, or
TTIR text recognised as such), Triton's options by their names, and
Triton's metadata back as a dict. Needs the Triton builds that
scripts/install-deps.sh installs; skips without them, except under CI."""

import os
from pathlib import Path

import grpc
import pytest

import kjit

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "tests" / "triton" / "data"
BUILDS = REPO / ".deps" / "triton-builds"

if not (BUILDS / "triton-3.9.0" / "bin" / "python").exists():
    if os.environ.get("CI"):
        raise RuntimeError("CI must run the Triton IR tests: scripts/install-deps.sh installs the builds")
    pytest.skip("no Triton builds in %s (scripts/install-deps.sh installs them)" % BUILDS, allow_module_level=True)


def a_ttir() -> Path:
    files = sorted(CORPUS.glob("*.ttir"))
    assert files, "no TTIR in %s" % CORPUS
    return files[0]


def test_compiles_ttir_with_triton_options_and_returns_its_metadata(client):
    path = a_ttir()
    result = client.compile(path.read_text(), target="cuda:90", kind="triton", triton_options={"num_warps": 8})
    assert result.artifact_kind == "cubin"
    assert result.artifact[:4] == b"\x7fELF"
    assert isinstance(result.triton_metadata, dict)
    assert result.triton_metadata["num_warps"] == 8
    assert result.triton_metadata["name"] == result.kernels[0].name
    assert result.triton_build == "triton-3.9.0"
    assert result.pipeline == "triton-nvidia"


def test_the_kind_follows_from_the_path_or_the_text(client):
    path = a_ttir()
    by_path = client.compile(path, target="cuda:90")
    by_text = client.compile(path.read_text(), target="cuda:90")
    assert by_path.triton_build == by_text.triton_build == "triton-3.9.0"
    # The input's name labels diagnostics only: both are the same kernel.
    assert by_path.artifact == by_text.artifact


def test_options_are_typed_and_a_bool_reaches_triton_as_one(client):
    path = a_ttir()
    result = client.compile(path, target="cuda:90", triton_options={"enable_fp_fusion": False, "num_stages": 2})
    assert result.triton_metadata["enable_fp_fusion"] is False
    assert result.triton_metadata["num_stages"] == 2
    with pytest.raises(TypeError):
        client.compile(path, target="cuda:90", triton_options={"num_warps": [4]})


def test_an_unknown_option_is_invalid_argument_listing_the_known_ones(client):
    with pytest.raises(kjit.KjitError) as error:
        client.compile(a_ttir(), target="cuda:90", triton_options={"num_wraps": 4})
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "num_warps" in str(error.value)


def test_a_module_that_does_not_verify_is_invalid_argument_with_tritons_diagnostic(client):
    broken = a_ttir().read_text().replace("tt.return", "tt.no_such_op", 1)
    with pytest.raises(kjit.KjitError) as error:
        client.compile(broken, target="cuda:90", kind="triton")
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.value.log or "no_such_op" in str(error.value)


def passes_of(log: str, stage: str) -> list:
    for line in log.splitlines():
        if line.startswith(stage + " passes:"):
            return line.split(":", 1)[1].split()
    raise AssertionError("the log names no %s passes:\n%s" % (stage, log))


def test_a_requests_edits_change_the_passes_that_run_and_the_key(client):
    path = a_ttir()
    plain = client.compile(path, target="cuda:90")
    disabled = client.compile(path, target="cuda:90",
                              triton_edits=[{"op": "disable", "anchor": "ttgir/tritongpu-coalesce"}])
    assert "tritongpu-coalesce" in passes_of(plain.log, "ttgir")
    assert "tritongpu-coalesce" not in passes_of(disabled.log, "ttgir")
    inserted = client.compile(path, target="cuda:90",
                              triton_edits=[{"op": "insert-after", "anchor": "ttgir/tritongpu-coalesce", "pass": "cse"}])
    ttgir = passes_of(inserted.log, "ttgir")
    at = ttgir.index("tritongpu-coalesce")
    assert ttgir[at + 1] == "cse", ttgir
    assert len({plain.key, disabled.key, inserted.key}) == 3
    # The edits are the request's: the next one without them is the plain kernel again.
    assert client.compile(path, target="cuda:90").key == plain.key


@pytest.mark.parametrize("edits, says", [
    ([{"op": "insert-in-the-middle", "anchor": "cse", "pass": "cse"}], "insert-in-the-middle"),
    ([{"op": "override-pipeline"}], "override-pipeline"),
    ([{"op": "insert-after", "anchor": "cse"}], "needs the name of the pass"),
    ([{"op": "disable", "anchor": "cse", "stage": "ttgir"}], "not a stage"),
    ([{"op": "disable", "anchor": "no-such-pass"}], "no-such-pass"),
    ([{"op": "disable", "anchor": "ttir/triton-combine"}], "skips"),
    ([{"op": "insert-after", "anchor": "ttgir/tritongpu-coalesce", "pass": "no-such-pass"}], "no-such-pass"),
    ([{"op": "override-stage", "stage": "nowhere", "passes": ["cse"]}], "nowhere"),
])
def test_an_edit_that_cannot_act_is_invalid_argument_naming_it(client, edits, says):
    with pytest.raises(kjit.KjitError) as error:
        client.compile(a_ttir(), target="cuda:90", triton_edits=edits)
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT, str(error.value)
    assert "triton_edits[0]" in str(error.value) and says in str(error.value), str(error.value)


def test_edits_apply_to_triton_input_only_and_have_a_shape(client):
    with pytest.raises(kjit.KjitError) as error:
        client.compile("__global__ void k() {}", target="cuda:90", kind="cuda",
                       triton_edits=[{"op": "disable", "anchor": "cse"}])
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "Triton input only" in str(error.value)
    with pytest.raises(ValueError):
        client.compile(a_ttir(), target="cuda:90", triton_edits=[{"op": "disable", "anchr": "cse"}])
    with pytest.raises(TypeError):
        client.compile(a_ttir(), target="cuda:90", triton_edits={"op": "disable"})


def test_a_plugin_switched_off_for_one_kernel_is_in_its_key_and_unknown_names_are_refused(client):
    """triton_plugins_off: uTLX's stages hook does not run for that kernel (a
    plain kernel's bytes stay Triton's), the key says so; a name that is no
    plugin of the build is INVALID_ARGUMENT listing the build's plugins."""
    builds = {b.name for b in client.triton_builds() if b.name}
    if "triton-3.8.0" not in builds:
        pytest.skip("no triton-3.8.0 build (scripts/install-deps.sh installs it)")
    path = a_ttir()
    on = client.compile(path, target="cuda:90", triton_build="triton-3.8.0")
    off = client.compile(path, target="cuda:90", triton_build="triton-3.8.0", triton_plugins_off=["triton-utlx"])
    assert off.key != on.key
    assert client.compile(path, target="cuda:90", triton_build="triton-3.8.0", triton_plugins_off="triton-utlx").key == off.key
    with pytest.raises(kjit.KjitError) as error:
        client.compile(path, target="cuda:90", triton_build="triton-3.8.0", triton_plugins_off=["no-such-plugin"])
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "its plugins: triton-utlx" in str(error.value), str(error.value)
    with pytest.raises(kjit.KjitError) as error:
        client.compile("__global__ void k() {}", target="cuda:90", kind="cuda", triton_plugins_off=["*"])
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "Triton input only" in str(error.value)


def test_a_builds_plugins_and_lent_ptxas_are_listed(client):
    """kjit.Client.triton_builds carries the plugin packages installed in a
    build, how it loads plugins, and the newer ptxas another build lends it."""
    builds = {b.name: b for b in client.triton_builds() if b.name}
    if not {"triton-3.8.0", "triton-3.9.0"} <= set(builds):
        pytest.skip("no triton-3.8.0 and triton-3.9.0 builds (scripts/install-deps.sh installs them)")
    utlx = builds["triton-3.8.0"]
    assert [(p.distribution, len(p.libraries[0].sha256)) for p in utlx.installed_plugins] == [("triton-utlx", 64)]
    assert utlx.tlx_provider == "triton-utlx" and utlx.plugin_loader == "TRITON_PLUGIN_PATHS"
    assert builds["triton-3.9.0"].plugin_loader == "extend_with"
    assert utlx.borrowed_ptxas.from_build == "triton-3.9.0" and 107 in utlx.borrowed_ptxas.cuda_archs
    assert 107 in utlx.cuda_archs and len(utlx.borrowed_ptxas.sha256) == 64
