"""The cache RPCs (stats, explain, list, remove, verify, gc), health and status."""

import pytest

import kjit
from conftest import unique
from test_compile import TARGET, vector_add


def test_stats_count_a_compile_and_a_hit(client):
    source = vector_add(unique())
    before = client.stats()
    client.compile(source, target=TARGET)
    client.compile(source, target=TARGET)
    after = client.stats()
    assert after.compiles - before.compiles == 1
    assert after.lookups - before.lookups == 2
    assert after.misses - before.misses == 1
    memory_before, memory_after = before.tier("memory"), after.tier("memory")
    assert memory_after is not None
    assert memory_after.hits - memory_before.hits == 1
    assert memory_after.entries >= 1 and memory_after.bytes > 0
    assert after.tier("disk").puts - before.tier("disk").puts == 1
    assert after.tier("redis") is None  # the daemon runs without Redis


def test_explain_two_keys(client):
    source = vector_add(unique())
    a = client.compile(source, target="cuda:90")
    b = client.compile(source, target="cuda:100")
    explained = client.explain(a.key, b.key)
    assert explained.left_key == a.key and explained.right_key == b.key
    assert not explained.same
    assert [c.name for c in explained.left_components] == [c.name for c in a.key_components]
    assert {c.name: c.value for c in explained.right_components} == {c.name: c.value for c in b.key_components}
    target = [d for d in explained.differences if "target" in d.name]
    assert target, explained.differing
    assert "90" in target[0].left and "100" in target[0].right
    assert all(d.name != "input" for d in explained.differences)

    same = client.explain(a, a)  # a CompileResult stands for its key
    assert same.same and same.differences == []


def test_explain_two_requests_compiles_nothing(client):
    before = client.stats().compiles
    source = vector_add(unique())
    explained = client.explain(source, {"source": source, "options": ["-DX=1"]}, target=TARGET)
    assert not explained.same
    assert any("option" in name for name in explained.differing), explained.differing
    assert client.stats().compiles == before
    request = kjit.Request(source, target=TARGET)
    assert client.explain(request, source, target=TARGET).same


def test_cache_list_verify_remove(client):
    result = client.compile(vector_add(unique()), target=TARGET)
    listing = client.cache_list()
    assert result.key in [e.key for e in listing]
    entry = next(e for e in listing if e.key == result.key)
    assert entry.bytes > 0 and entry.last_access_unix > 0
    assert len(client.cache_list(limit=1)) == 1

    verified = client.cache_verify()
    assert verified.checked >= 1 and verified.removed == 0

    client.cache_remove(result.key)
    assert result.key not in [e.key for e in client.cache_list()]

    kept = client.cache_gc(1 << 40)
    assert kept.removed_entries == 0 and kept.entries_after == len(client.cache_list())


def test_health_over_the_socket_and_tcp(daemon):
    with kjit.Client(daemon.socket) as over_socket:
        assert over_socket.health() == "SERVING"
    with kjit.Client("unix:" + daemon.socket) as over_uri:
        assert over_uri.health() == "SERVING"
    with kjit.Client(daemon.tcp) as over_tcp:
        assert over_tcp.health() == "SERVING"
        assert over_tcp.compile(vector_add(unique()), target=TARGET).artifact.startswith(b"\x7fELF")


def test_the_address_comes_from_the_environment(daemon, monkeypatch):
    monkeypatch.setenv("KJIT_SOCKET", daemon.socket)
    monkeypatch.setenv("KJIT_ADDRESS", "127.0.0.1:1")
    with kjit.Client() as client:
        assert client.address == daemon.socket
        assert client.health() == "SERVING"
    monkeypatch.delenv("KJIT_SOCKET")
    monkeypatch.setenv("KJIT_ADDRESS", daemon.tcp)
    with kjit.Client() as client:
        assert client.address == daemon.tcp
        assert client.health() == "SERVING"


def test_status_and_echo(client):
    status = client.status()
    assert status.version
    assert status.confinement.mode
    assert status.bounds.timeout_seconds > 0
    # The local operator (this test, on the socket without a token) is shown
    # the configuration, key by key, as the daemon serves with it.
    settings = {s.key: s.value for s in status.settings}
    assert settings["limits.compile_timeout_s"] == str(status.bounds.timeout_seconds)
    assert all(isinstance(s, kjit.ConfigSetting) for s in status.settings)
    assert client.echo(b"\x00payload") == b"\x00payload"


def test_an_absent_daemon_is_unavailable(tmp_path):
    with kjit.Client(tmp_path / "nobody.sock", timeout=5) as client:
        with pytest.raises(kjit.Unavailable) as caught:
            client.health()
    assert caught.value.code.name == "UNAVAILABLE"


def test_the_operator_reloads_the_configuration(client):
    # Nothing changed since the start: a reload puts nothing new in force
    # that needs a restart, and the daemon serves on.
    result = client.reload()
    assert isinstance(result, kjit.ReloadResult)
    assert result.needs_restart == []
    assert client.health() == "SERVING"
