"""Direct reads of kjitd's disk tier, without an RPC.

A daemon serving a unix socket with a disk tier writes a manifest beside the
socket (<socket>.direct.json) saying where its disk tier is. A client that
knows a blob's identity (namespace, key, name) derives the blob's cache key
as the daemon does and reads the entry's file itself: for a process that
needs a few blobs (Triton's cache manager at start-up), this saves loading
gRPC and protobuf's services, connecting, and the round trips.

Whose blobs: the operator (kjitd's user, root) reads those of the namespace
the manifest names, under their plain names. Every other user reads only
its own namespace's, whose files are named with a key of that namespace
(an HMAC tag): the daemon gives it over the socket, where it knows who asks
(Client.direct_read_grant), and remember_grant keeps it in the user's own
cache directory (mode 0600) for its later processes. Other users' files
cannot be named, and the daemon's directories cannot be listed.

Nothing is served that the daemon would not serve this client over its
socket:
- no manifest, one of another format, entry format or key spelling, one
  whose socket is another (inode and change time) or where nothing listens
  (a daemon that died), one that changed since it was read (a daemon that
  restarted), a client with a token (a tenant's namespace is the daemon's
  to decide), or a user without a grant for the manifest's names secret:
  no direct reads at all;
- every entry is checked as the daemon checks it (magic, format, sizes, the
  key, the XXH3-128 checksum, the blob identity in its metadata);
- whatever is missing, or fails a check, is asked of the daemon, which also
  looks in its memory and Redis tiers and removes a damaged file.
Direct reads are not counted in the daemon's stats; a hit refreshes the
entry's mtime as the daemon's own hit does, so eviction sees the use. A user
may not touch the daemon's files: an entry it has not had refreshed for
_REFRESH_AFTER_S is read through the daemon instead, whose hit refreshes it.

KJIT_DIRECT_READS=0 turns direct reads off.
"""

import hashlib
import hmac
import json
import os
import socket
import stat
import struct
import time
from typing import Dict, List, Optional

from kjit._address import default_address, socket_path_of

MANIFEST_FORMAT = 2
GRANT_FORMAT = 1
ENTRY_FORMAT = 3
BLOB_KEY_DOMAIN = "kjit client blob key v1"
BLOB_KIND = "client-blob"
GROUP_KIND = "client-blob-group"

_ENTRY_MAGIC = b"KJITCACH"
_HEADER = struct.Struct("<8sIIQQ32s")  # magic, version, key size, metadata size, payload size, checksum
_MAX_KEY_BYTES = 256
_MAX_METADATA_BYTES = 64 << 20
_MAX_FILE_BYTES = 2 << 30
_MAX_FIELD_BYTES = 256
_REFRESH_AFTER_S = 3600  # a user's direct hit on an entry untouched this long goes to the daemon
_GRANT_REFRESH_S = 3600  # a grant older than this is asked for again when a client connects


def manifest_path(socket_path: str) -> str:
    return socket_path + ".direct.json"


def _field(value: str) -> bytes:
    data = value.encode("utf-8")
    return str(len(data)).encode("ascii") + b":" + data


def blob_cache_key(kind: str, namespace: str, key: str, name: str) -> str:
    """The daemon's cache key for a blob (kind BLOB_KIND) or a group (GROUP_KIND)."""
    spelled = BLOB_KEY_DOMAIN.encode("ascii") + b"\0" + b"".join(_field(v) for v in (kind, namespace, key, name))
    return hashlib.sha256(spelled).hexdigest() + "-blob"


def stored_key(cache_key: str, tenant_namespace: str, names_key: Optional[bytes] = None) -> str:
    """The key an entry of a cache namespace is stored under ("" = the default
    one); with a names key (a user's blobs), tagged with it."""
    if names_key:
        cache_key += "-c" + hmac.new(names_key, cache_key.encode("ascii"), hashlib.sha256).hexdigest()[:32]
    return cache_key if not tenant_namespace else cache_key + "-n-" + tenant_namespace


def _valid_field(value: str, is_file_name: bool) -> bool:
    data = value.encode("utf-8", "surrogatepass")
    if not data or len(data) > _MAX_FIELD_BYTES or b"\0" in data:
        return False
    if not is_file_name:
        return True
    return "/" not in value and ".." not in value and value != "." and \
        not any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)


class DirectReader:
    """Reads blobs from the disk tier of the daemon whose manifest it found.

    open() checks the manifest and that the daemon still serves its socket;
    each get re-checks that, so a daemon that stopped or restarted with other
    settings is noticed at the next read."""

    def __init__(self, socket_path: str, manifest_bytes: bytes, manifest: dict, grant: Optional[dict] = None):
        self.socket_path = socket_path
        self.disk_root = manifest["disk_root"]
        self.namespace = grant["namespace"] if grant else manifest["namespace"]
        self._names_key = bytes.fromhex(grant["names_key"]) if grant else None
        self._owner = grant is None  # the operator: the files are its user's, and it may touch them
        self._manifest_bytes = manifest_bytes
        self._suffix = manifest["entry_suffix"]
        self._touch_ns = int(manifest["touch_interval_ms"]) * 1_000_000
        self._socket_id = (manifest["socket_device"], manifest["socket_inode"], manifest["socket_ctime_ns"])

    @classmethod
    def open(cls, address=None, token: Optional[str] = None) -> Optional["DirectReader"]:
        """A reader for the daemon at address (default: as kjit.Client finds
        it), or None where direct reads cannot serve exactly what the daemon
        would: a TCP address, a token, no valid manifest, no daemon, a user
        without a grant (remember_grant)."""
        found = _manifest_for(address, token)
        if found is None:
            return None
        socket_path, manifest_bytes, manifest = found
        grant = None
        if not _is_operator(manifest):
            grant = load_grant(manifest["names_key_id"])
            if grant is None:
                return None
        reader = cls(socket_path, manifest_bytes, manifest, grant)
        return reader if reader.serving() else None

    def serving(self) -> bool:
        """Whether the daemon that wrote the manifest still serves its socket
        with the settings the manifest describes."""
        if _read_manifest(self.socket_path) != self._manifest_bytes:
            return False
        try:
            st = os.stat(self.socket_path)
        except OSError:
            return False
        if not stat.S_ISSOCK(st.st_mode) or (st.st_dev, st.st_ino, st.st_ctime_ns) != self._socket_id:
            return False
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(1.0)
            probe.connect(self.socket_path)
            return True
        except OSError:
            return False
        finally:
            probe.close()

    def get_blob(self, namespace: str, key: str, name: str) -> Optional[bytes]:
        """The blob's bytes, or None: not on disk here, or not verified."""
        if not self.serving() or not (_valid_field(namespace, False) and _valid_field(key, False)
                                      and _valid_field(name, True)):
            return None
        return self._read(BLOB_KIND, namespace, key, name)

    def get_group(self, namespace: str, key: str, group: str) -> Optional[Dict[str, bytes]]:
        """Every member of a group as {name: bytes}, or None unless the group
        and all its members are on disk here and verified."""
        if not self.serving() or not (_valid_field(namespace, False) and _valid_field(key, False)
                                      and _valid_field(group, True)):
            return None
        listing = self._read(GROUP_KIND, namespace, key, group)
        if listing is None:
            return None
        names: List[str] = [n for n in listing.decode("utf-8", "replace").split("\n") if n]
        if not names or any(not _valid_field(n, True) for n in names):
            return None
        members = {}
        for name in names:
            data = self._read(BLOB_KIND, namespace, key, name)
            if data is None:
                return None
            members[name] = data
        return members

    def _path(self, key: str) -> str:
        return os.path.join(self.disk_root, key[:2], key + self._suffix)

    def _read(self, kind: str, namespace: str, key: str, name: str) -> Optional[bytes]:
        stored = stored_key(blob_cache_key(kind, namespace, key, name), self.namespace, self._names_key)
        try:
            fd = os.open(self._path(stored), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_FILE_BYTES:
                return None
            data = _read_all(fd, st.st_size)
            if data is None:
                return None
            payload = _verify(data, stored, (kind, namespace, key, name))
            if payload is None:
                return None
            age_ns = time.time_ns() - st.st_mtime_ns
            if age_ns >= self._touch_ns:
                if not self._owner:
                    # Not this user's file to touch: when stale enough to
                    # matter to eviction, the daemon's hit refreshes it.
                    return payload if age_ns < _REFRESH_AFTER_S * 1_000_000_000 else None
                try:  # the shared recency clock, as the daemon's own hit keeps it
                    os.utime(fd, ns=(st.st_atime_ns, time.time_ns()))
                except OSError:
                    pass
            return payload
        finally:
            os.close(fd)


def _read_all(fd: int, size: int) -> Optional[bytes]:
    chunks = []
    left = size
    while left > 0:
        chunk = os.read(fd, left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _manifest_for(address, token):
    """(socket path, manifest bytes, manifest) of the daemon at address, or
    None where no direct reads can be: turned off, a token, TCP, no valid manifest."""
    if os.environ.get("KJIT_DIRECT_READS", "1") == "0" or token:
        return None
    socket_path = socket_path_of(default_address() if address is None else address)
    if socket_path is None:
        return None
    manifest_bytes = _read_manifest(socket_path)
    manifest = _parse_manifest(manifest_bytes) if manifest_bytes is not None else None
    if manifest is None:
        return None
    return socket_path, manifest_bytes, manifest


def _is_operator(manifest: dict) -> bool:
    # Root and kjitd's user; other operators (an admin group's members) read
    # over the socket: the plain-named files are kjitd's user's alone.
    return os.geteuid() in (0, manifest["daemon_uid"])


def user_cache_directory() -> Optional[str]:
    """kjit's directory in this user's cache ($XDG_CACHE_HOME/kjit, else
    ~/.cache/kjit); None when neither is an absolute path."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "kjit")


def _grants_directory() -> Optional[str]:
    directory = user_cache_directory()
    return os.path.join(directory, "direct-read") if directory is not None else None


def _grant_path(names_key_id: str) -> Optional[str]:
    directory = _grants_directory()
    if directory is None or not names_key_id or not all(c in "0123456789abcdef" for c in names_key_id):
        return None
    return os.path.join(directory, names_key_id + ".json")


def load_grant(names_key_id: str, max_age_s: Optional[float] = None) -> Optional[dict]:
    """The grant this user keeps for the names secret names_key_id: a file of
    its own, not readable by others; None if there is none (or it is older
    than max_age_s)."""
    path = _grant_path(names_key_id)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077 or st.st_size > 4096:
            return None
        if max_age_s is not None and time.time() - st.st_mtime > max_age_s:
            return None
        grant = json.loads(os.read(fd, 4096))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    expected = {"format": int, "names_key_id": str, "namespace": str, "names_key": str}
    if not isinstance(grant, dict) or any(not isinstance(grant.get(k), t) for k, t in expected.items()):
        return None
    if grant["format"] != GRANT_FORMAT or grant["names_key_id"] != names_key_id or not grant["namespace"] or \
            len(grant["names_key"]) != 64 or not all(c in "0123456789abcdef" for c in grant["names_key"]):
        return None
    return grant


def remember_grant(client, address=None, token: Optional[str] = None) -> bool:
    """For a user that is not the operator: asks the daemon (through client,
    connected to address) for its direct-read grant, unless one it keeps is
    recent, and keeps it for this user's processes. True when a new grant
    was kept. Errors are swallowed: direct reads are an optimisation."""
    found = _manifest_for(address, token)
    if found is None or _is_operator(found[2]):
        return False
    names_key_id = found[2]["names_key_id"]
    path = _grant_path(names_key_id)
    if path is None or load_grant(names_key_id, max_age_s=_GRANT_REFRESH_S) is not None:
        return False
    try:
        grant = client.direct_read_grant()
    except Exception:  # noqa: BLE001  (any failure: no direct reads, the RPC path serves)
        return False
    if not grant.granted or grant.names_key_id != names_key_id or len(grant.names_key) != 32 or not grant.namespace:
        return False
    body = json.dumps({"format": GRANT_FORMAT, "names_key_id": names_key_id, "namespace": grant.namespace,
                       "names_key": grant.names_key.hex()})
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        temp = "%s.%d.tmp" % (path, os.getpid())
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, body.encode("ascii"))
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError:
        return False
    return True


def _read_manifest(socket_path: str) -> Optional[bytes]:
    try:
        with open(manifest_path(socket_path), "rb") as f:
            return f.read(1 << 16)
    except OSError:
        return None


def _parse_manifest(data: bytes) -> Optional[dict]:
    try:
        manifest = json.loads(data)
    except ValueError:
        return None
    expected = {"format": int, "socket_device": int, "socket_inode": int, "socket_ctime_ns": int, "disk_root": str,
                "entry_format": int, "entry_suffix": str, "blob_key_domain": str, "namespace": str,
                "touch_interval_ms": int, "daemon_uid": int, "names_key_id": str}
    if not isinstance(manifest, dict) or any(not isinstance(manifest.get(k), t) for k, t in expected.items()):
        return None
    if manifest["format"] != MANIFEST_FORMAT or manifest["entry_format"] != ENTRY_FORMAT or \
            manifest["blob_key_domain"] != BLOB_KEY_DOMAIN or not os.path.isabs(manifest["disk_root"]):
        return None
    return manifest


def _xxh3_128(data) -> bytes:
    import xxhash  # noqa: PLC0415  (only once something is read)
    return xxhash.xxh3_128_digest(data)


def _verify(data: bytes, expected_key: str, identity) -> Optional[bytes]:
    """The payload of an entry the daemon would accept as this blob, else None."""
    if len(data) < _HEADER.size:
        return None
    magic, version, key_size, metadata_size, payload_size, checksum = _HEADER.unpack_from(data)
    if magic != _ENTRY_MAGIC or version != ENTRY_FORMAT:
        return None
    left = len(data) - _HEADER.size
    if key_size > _MAX_KEY_BYTES or key_size > left:
        return None
    left -= key_size
    if metadata_size > _MAX_METADATA_BYTES or metadata_size > left:
        return None
    left -= metadata_size
    if payload_size != left:
        return None
    key_end = _HEADER.size + key_size
    if data[_HEADER.size:key_end] != expected_key.encode("ascii"):
        return None
    body = memoryview(data)[_HEADER.size:]
    if checksum != _xxh3_128(body) + bytes(16):
        return None
    metadata_end = key_end + metadata_size
    if not _is_blob(data[key_end:metadata_end], identity):
        return None
    return data[metadata_end:]


def _is_blob(metadata: bytes, identity) -> bool:
    from google.protobuf.message import DecodeError  # noqa: PLC0415

    from kjit.internal.artifact_record_pb2 import ArtifactRecord  # noqa: PLC0415
    record = ArtifactRecord()
    try:
        record.ParseFromString(metadata)
    except DecodeError:
        return False
    kind, namespace, key, name = identity
    return (record.entry_kind, record.blob_namespace, record.blob_key, record.blob_name) == \
        (kind, namespace.encode("utf-8"), key.encode("utf-8"), name.encode("utf-8"))
