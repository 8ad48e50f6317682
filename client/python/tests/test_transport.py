"""Tokens, TLS and error trailers, against an in-process fake daemon (kjitd
checks no tokens and speaks no TLS yet)."""

import asyncio
import shutil
import subprocess

import grpc
import pytest

import kjit
import kjit.aio
from conftest import FakeDaemon, serve_fake


def test_the_token_is_sent_as_bearer_metadata(fake_daemon):
    with kjit.Client(fake_daemon.address, token="s3cret") as client:
        assert client.health() == "SERVING"
        result = client.compile("__global__ void k() {}", target="cuda:90")
    assert result.artifact == b"\x7fELF fake" and result.kernels[0].registers == 7
    assert len(fake_daemon.metadata) == 2
    assert all(m.get("authorization") == "Bearer s3cret" for m in fake_daemon.metadata)

    with kjit.Client(fake_daemon.address) as client:
        client.health()
    assert "authorization" not in fake_daemon.metadata[-1]


def test_the_aio_client_sends_the_token_too(fake_daemon):
    async def main():
        async with kjit.aio.Client(fake_daemon.address, token="t0ken") as client:
            return await client.health(), await client.compile("__global__ void k() {}")

    health, result = asyncio.run(main())
    assert health == "SERVING" and result.cache == "compiled"
    assert [m.get("authorization") for m in fake_daemon.metadata] == ["Bearer t0ken"] * 2


def test_the_log_comes_whole_from_the_trailer(fake_daemon):
    with kjit.Client(fake_daemon.address) as client:
        with pytest.raises(kjit.InvalidArgument) as caught:
            client.compile("FAIL", target="cuda:90")
    assert caught.value.log == FakeDaemon.fail_log
    assert len(caught.value.log) > 8192  # more than a status message could carry
    assert caught.value.details == "compilation failed"
    assert "x399" in str(caught.value)

    async def main():
        async with kjit.aio.Client(fake_daemon.address) as client:
            await client.compile("FAIL")

    with pytest.raises(kjit.InvalidArgument) as caught:
        asyncio.run(main())
    assert caught.value.log == FakeDaemon.fail_log


@pytest.fixture
def certificate(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make a certificate with")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return key.read_bytes(), cert


def test_tls_with_a_ca(certificate):
    key, cert = certificate
    credentials = grpc.ssl_server_credentials([(key, cert.read_bytes())])
    fake, server, port = serve_fake("127.0.0.1:0", credentials)
    try:
        address = "127.0.0.1:%d" % port
        with kjit.Client(address, token="tls-token", tls_ca=str(cert)) as client:
            assert client.health() == "SERVING"
        with kjit.Client(address, tls_ca=cert.read_bytes()) as client:
            assert client.compile("__global__ void k() {}").artifact == b"\x7fELF fake"
        assert fake.metadata[0]["authorization"] == "Bearer tls-token"
        with kjit.Client(address, timeout=5) as plaintext:
            with pytest.raises(kjit.Unavailable):
                plaintext.health()
    finally:
        server.stop(grace=None)
