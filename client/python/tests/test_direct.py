"""Direct reads of kjitd's disk tier (kjit._direct) against a real kjitd:
what the daemon stored is read back without an RPC, and nothing is read that
the daemon would not serve this client over its socket."""

import hashlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

import pytest
import xxhash

import kjit
from kjit._direct import BLOB_KIND, GROUP_KIND, DirectReader, blob_cache_key, manifest_path
from kjit.internal.artifact_record_pb2 import ArtifactRecord

from conftest import Daemon, unique


def entry_path(daemon, key: str) -> str:
    manifest = json.loads(open(manifest_path(daemon.socket)).read())
    return os.path.join(manifest["disk_root"], key[:2], key + manifest["entry_suffix"])


def encode_entry(key: str, kind: str, namespace: str, blob_key: str, name: str, payload: bytes) -> bytes:
    """An entry as the daemon writes one (format 3), for a blob identity of our choosing."""
    record = ArtifactRecord(entry_kind=kind, blob_namespace=namespace.encode(), blob_key=blob_key.encode(),
                            blob_name=name.encode(), created_unix=int(time.time()))
    metadata = record.SerializeToString()
    body = key.encode() + metadata + payload
    header = struct.pack("<8sIIQQ", b"KJITCACH", 3, len(key), len(metadata), len(payload))
    return header + xxhash.xxh3_128_digest(body) + bytes(16) + body


def write_entry(path: str, data: bytes):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


@pytest.fixture
def reader(daemon):
    found = DirectReader.open(daemon.socket)
    assert found is not None, "kjitd with a disk tier publishes %s" % manifest_path(daemon.socket)
    return found


def test_reads_back_what_the_daemon_stored(client, reader):
    ns, key = unique("direct"), "K" * 64
    cubin = bytes(range(256)) * 40
    client.put_blob(ns, key, "k.cubin", cubin)
    client.put_blob(ns, key, "k.json", b'{"name": "k"}')
    client.put_blob_group(ns, key, "__grp__k.json", ["k.cubin", "k.json"])

    assert reader.get_blob(ns, key, "k.cubin") == cubin
    assert reader.get_group(ns, key, "__grp__k.json") == {"k.cubin": cubin, "k.json": b'{"name": "k"}'}
    # What the daemon does not have is not made up.
    assert reader.get_blob(ns, key, "other.cubin") is None
    assert reader.get_blob(ns + "x", key, "k.cubin") is None
    assert reader.get_group(ns, key, "__grp__other.json") is None
    # Names the daemon would refuse are not looked up.
    assert reader.get_blob(ns, key, "../k.cubin") is None
    assert reader.get_blob("", key, "k.cubin") is None


def test_a_group_with_a_member_gone_is_a_miss(client, reader, daemon):
    ns, key = unique("direct"), "G"
    client.put_blob(ns, key, "a.cubin", b"a")
    client.put_blob(ns, key, "a.json", b"{}")
    client.put_blob_group(ns, key, "__grp__a.json", ["a.cubin", "a.json"])
    os.remove(entry_path(daemon, blob_cache_key(BLOB_KIND, ns, key, "a.json")))
    assert reader.get_group(ns, key, "__grp__a.json") is None


def test_a_damaged_entry_is_neither_read_nor_served(client, reader, daemon):
    ns, key = unique("direct"), "D"
    client.put_blob(ns, key, "d.cubin", b"x" * 1000)
    path = entry_path(daemon, blob_cache_key(BLOB_KIND, ns, key, "d.cubin"))
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 0x01
    write_entry(path, bytes(data))
    assert reader.get_blob(ns, key, "d.cubin") is None
    for cut in (0, 10, 63, 64, len(data) - 1):
        write_entry(path, bytes(data[:cut]))
        assert reader.get_blob(ns, key, "d.cubin") is None, cut


def test_an_entry_is_served_only_as_the_blob_it_records(daemon, reader):
    """Entries written here, checksum and all: one recording the blob asked
    for is read (so the writer is right), one recording another blob under
    the asked blob's key is refused, by the reader and by a fresh daemon
    alike."""
    ns, key = unique("direct"), "I"
    right = blob_cache_key(BLOB_KIND, ns, key, "right.cubin")
    write_entry(entry_path(daemon, right), encode_entry(right, BLOB_KIND, ns, key, "right.cubin", b"right"))
    assert reader.get_blob(ns, key, "right.cubin") == b"right"
    with kjit.Client(daemon.socket) as client:
        assert client.get_blob(ns, key, "right.cubin") == b"right"

    wrong = blob_cache_key(BLOB_KIND, ns, key, "wrong.cubin")
    for identity in ((BLOB_KIND, ns, key, "right.cubin"), (GROUP_KIND, ns, key, "wrong.cubin"),
                     (BLOB_KIND, ns + "x", key, "wrong.cubin"), (BLOB_KIND, ns, key + "x", "wrong.cubin"),
                     ("", ns, key, "wrong.cubin")):
        write_entry(entry_path(daemon, wrong), encode_entry(wrong, *identity, payload=b"wrong"))
        assert reader.get_blob(ns, key, "wrong.cubin") is None, identity
        with kjit.Client(daemon.socket) as client:  # the daemon has never seen this key in memory
            assert client.get_blob(ns, key, "wrong.cubin") is None, identity


def test_a_hit_refreshes_the_entrys_recency(client, reader, daemon):
    ns, key = unique("direct"), "T"
    client.put_blob(ns, key, "t.cubin", b"t")
    path = entry_path(daemon, blob_cache_key(BLOB_KIND, ns, key, "t.cubin"))
    old = time.time() - 3600
    os.utime(path, (old, old))
    assert reader.get_blob(ns, key, "t.cubin") == b"t"
    assert os.stat(path).st_mtime > old + 3000, "eviction would see the entry as unused for an hour"


def test_no_direct_reads_where_the_daemon_decides_or_is_not_local(daemon, monkeypatch):
    assert DirectReader.open(daemon.socket, token="a-token") is None
    assert DirectReader.open(daemon.tcp) is None
    assert DirectReader.open("unix:" + daemon.socket) is not None
    monkeypatch.setenv("KJIT_DIRECT_READS", "0")
    assert DirectReader.open(daemon.socket) is None


def test_a_tenants_blobs_are_not_read_without_its_token(tmp_path):
    token = "tenant-token-for-direct-reads"
    tenants = tmp_path / "tenants.toml"
    tenants.write_text('[[tenants]]\nname = "alpha"\ntoken_sha256 = "%s"\n' % hashlib.sha256(token.encode()).hexdigest())
    d = Daemon(tmp_path / "d", ["--tenants", str(tenants)])
    d.root.mkdir()
    d.start()
    try:
        with kjit.Client(d.socket, token=token) as tenant, kjit.Client(d.socket) as operator:
            tenant.put_blob("triton", "K", "t.cubin", b"the tenant's")
            operator.put_blob("triton", "K", "o.cubin", b"the operator's")
            reader = DirectReader.open(d.socket)
            assert reader is not None and reader.namespace == ""
            assert reader.get_blob("triton", "K", "o.cubin") == b"the operator's"
            # What the daemon answers the same tokenless caller.
            assert operator.get_blob("triton", "K", "t.cubin") is None
            assert reader.get_blob("triton", "K", "t.cubin") is None
    finally:
        d.stop()


def test_a_stopped_or_dead_daemon_is_read_no_more(tmp_path):
    d = Daemon(tmp_path / "d")
    d.root.mkdir()
    d.start()
    with kjit.Client(d.socket) as client:
        client.put_blob("ns", "K", "k.cubin", b"k")
    reader = DirectReader.open(d.socket)
    assert reader.get_blob("ns", "K", "k.cubin") == b"k"
    manifest = open(manifest_path(d.socket), "rb").read()
    d.stop()
    assert not os.path.exists(manifest_path(d.socket))
    assert reader.get_blob("ns", "K", "k.cubin") is None
    assert DirectReader.open(d.socket) is None

    # A daemon killed outright leaves its socket and manifest; nothing listens.
    d.start()
    reader = DirectReader.open(d.socket)
    assert reader.get_blob("ns", "K", "k.cubin") == b"k"
    d.process.send_signal(signal.SIGKILL)
    d.process.wait()
    assert os.path.exists(manifest_path(d.socket))
    assert reader.get_blob("ns", "K", "k.cubin") is None
    assert DirectReader.open(d.socket) is None

    # Another daemon on the same path: the old manifest names another socket.
    d.start()
    stale_reader = reader
    assert stale_reader.get_blob("ns", "K", "k.cubin") is None
    assert DirectReader.open(d.socket).get_blob("ns", "K", "k.cubin") == b"k"
    with open(manifest_path(d.socket), "wb") as f:
        f.write(manifest)  # the first daemon's, naming its socket's inode
    assert DirectReader.open(d.socket) is None
    d.stop()


def test_no_manifest_without_a_disk_tier_or_when_turned_off(tmp_path):
    for args in (["--no-disk-cache"], ["--no-direct-reads"]):
        d = Daemon(tmp_path / args[0].lstrip("-"), args)
        d.root.mkdir()
        d.start()
        try:
            assert not os.path.exists(manifest_path(d.socket))
            assert DirectReader.open(d.socket) is None
        finally:
            d.stop()


def test_importing_kjit_loads_grpc_only_for_a_client():
    code = ("import sys, kjit\n"
            "from kjit import DirectReader, default_address\n"
            "assert 'grpc' not in sys.modules, 'grpc loaded by import kjit'\n"
            "kjit.Client\n"
            "assert 'grpc' in sys.modules\n"
            "from kjit import *\n"
            "assert Client is kjit.Client and aio.Client\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


_USER_CHILD = r"""
import json, sys
import kjit
from kjit._direct import DirectReader, remember_grant
socket_path, op = sys.argv[1], sys.argv[2]
out = {}
if op == "put":
    with kjit.Client(socket_path) as client:
        stored = client.put_blob("triton", "K", "k.cubin", sys.argv[3].encode())
        out["already_stored"] = stored.already_stored
out["reader_before_grant"] = DirectReader.open(socket_path) is not None
with kjit.Client(socket_path) as client:
    out["granted"] = remember_grant(client, socket_path)
reader = DirectReader.open(socket_path)
out["namespace"] = reader.namespace if reader else None
data = reader.get_blob("triton", "K", "k.cubin") if reader else None
out["read"] = data.decode() if data is not None else None
print(json.dumps(out))
"""


def _as_user(user: str, home, *args) -> dict:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_CACHE_HOME": str(home), "KJIT_DIRECT_READS": "1"}
    command = ["setpriv", "--reuid", user, "--regid", "kjit-test", "--init-groups", sys.executable, "-c", _USER_CHILD]
    done = subprocess.run(command + [str(a) for a in args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(os.geteuid() != 0, reason="runs clients as the users kjit-test-a and kjit-test-b (root only)")
def test_each_user_reads_its_own_blobs_directly_and_no_one_elses():
    import grp
    import pwd
    import tempfile
    for user in ("kjit-test-a", "kjit-test-b"):
        try:
            pwd.getpwnam(user)
            grp.getgrnam("kjit-test")
        except KeyError:
            pytest.skip("no user %s (tests/integration's local users test makes it)" % user)
    # pytest's own temporary directory is root's alone; the users must reach this one.
    from pathlib import Path
    tmp_path = Path(tempfile.mkdtemp(prefix="kjit-users-"))
    os.chmod(tmp_path, 0o755)
    d = Daemon(tmp_path / "d", ["--socket-group", "kjit-test"])
    d.root.mkdir()
    os.chmod(d.root, 0o755)
    d.start()
    homes = {}
    for user in ("kjit-test-a", "kjit-test-b"):
        homes[user] = tmp_path / ("home-" + user)
        homes[user].mkdir()
        os.chown(homes[user], pwd.getpwnam(user).pw_uid, grp.getgrnam("kjit-test").gr_gid)
    try:
        a = _as_user("kjit-test-a", homes["kjit-test-a"], d.socket, "put", "bytes-of-a")
        # Without a grant, no direct reads; with it, A reads its own blob.
        assert a["reader_before_grant"] is False and a["granted"] is True
        assert a["namespace"] == "U%d" % pwd.getpwnam("kjit-test-a").pw_uid
        assert a["read"] == "bytes-of-a"
        # The grant is kept, for A's later processes, in A's own directory.
        kept = _as_user("kjit-test-a", homes["kjit-test-a"], d.socket, "read")
        assert kept["reader_before_grant"] is True and kept["granted"] is False and kept["read"] == "bytes-of-a"
        grants = list((homes["kjit-test-a"] / "kjit" / "direct-read").iterdir())
        assert len(grants) == 1 and grants[0].stat().st_mode & 0o777 == 0o600
        # B, with a grant of its own, reads nothing of A's, before and after storing its own.
        b = _as_user("kjit-test-b", homes["kjit-test-b"], d.socket, "read")
        assert b["granted"] is True and b["read"] is None
        b = _as_user("kjit-test-b", homes["kjit-test-b"], d.socket, "put", "bytes-of-b")
        assert b["already_stored"] is False and b["read"] == "bytes-of-b"
        assert _as_user("kjit-test-a", homes["kjit-test-a"], d.socket, "read")["read"] == "bytes-of-a"
        # A's grant copied into B's directory names A's namespace, whose files
        # B may read only as A could: it had to steal A's key first. What B
        # cannot do is list the tier to find A's files without it.
        with kjit.Client(d.socket) as operator:
            assert operator.get_blob("triton", "K", "k.cubin") is None  # the users' blobs are not the operator's
    finally:
        d.stop()
        shutil.rmtree(tmp_path, ignore_errors=True)
