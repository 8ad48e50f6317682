"""Triton's compile cache, shared through kjitd.

    TRITON_CACHE_MANAGER=kjit.triton:KjitCacheManager python train.py

Every Triton process on the host (or on every host sharing a daemon's Redis
tier) then reuses the kernels any of them compiled: a process that misses its
own cache directory asks kjitd before compiling, and a compile it runs is
stored in kjitd for the others. The daemon is found as kjit.Client finds it
($KJIT_SOCKET, then $KJIT_ADDRESS, then the default socket).

Triton reads what its cache manager returns as local paths, so each file
from kjitd is written to Triton's own cache directory ($TRITON_CACHE_DIR,
default ~/.triton/cache) first. That directory stays the first place looked
in: a kernel this process (or another on the same directory) already has
costs no round trip. The daemon is a cache, never a dependency: when it
cannot be reached, Triton compiles as it would without it (one warning).

Blobs live in kjitd under namespace "triton" ($KJIT_TRITON_NAMESPACE), key
Triton's own cache key (which covers Triton's version, its backends, the
source, the options and the target), name Triton's file name.

A second put of a key keeps the first in kjitd: the key covers everything
the compile depends on, so a second put is another process's compile of the
same kernel, and the files of one compile are never mixed with another's.
The process that put second keeps its own files in its own directory; every
other process gets the first's.

One compile per kernel: processes started together (or daemons sharing a
Redis tier) would each compile every kernel they all miss. A miss takes the
kernel's claim in kjitd (kjit.Client.claim_blob_group) or waits for the
process holding it, at most $KJIT_TRITON_CLAIM_WAIT seconds (default 600;
0: no claims), and gets the kernel it compiled. The claim is kept only while
the compile that took it runs (kjit._claims): a compile that raises, a
process that exits or is killed, hands it to the next waiter at once.

On the same host, a daemon with a disk tier publishes where it is
(kjit._direct): what is there is read directly, without an RPC, and gRPC is
loaded only for what is not (a miss, a store, a Redis-only entry). A token
($KJIT_TOKEN, for a daemon whose socket asks for one) always goes over gRPC,
as does a TCP address ($KJIT_ADDRESS, with $KJIT_TLS_CA for TLS).
"""

import logging
import os
import sys
import threading
import time
from types import FrameType
from typing import Dict, Optional

from triton.runtime.cache import CacheManager, FileCacheManager

from kjit._direct import DirectReader, remember_grant
from kjit._uploads import uploads

__all__ = ["KjitCacheManager", "install", "remote_compile_stats"]

_log = logging.getLogger("kjit.triton")

# Host code Triton builds with the host's C compiler (its launcher stubs) is
# loaded into the process: it is kept local rather than taken from whatever a
# daemon's other clients stored.
_LOCAL_ONLY_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")

# Seconds a put or get may take before Triton goes on without kjitd.
_TIMEOUT = float(os.environ.get("KJIT_TRITON_TIMEOUT", "30"))
# After a failure to reach kjitd, how long to go on without it before trying again.
_RETRY_AFTER = 30.0

_lock = threading.Lock()
_client = None  # a kjit.Client once one is needed (gRPC is loaded then)
_client_pid: Optional[int] = None
_down_until = 0.0
_warned = False
_direct: Optional[DirectReader] = None
_direct_checked = 0.0  # when the daemon's manifest was last looked for


def _namespace() -> str:
    return os.environ.get("KJIT_TRITON_NAMESPACE", "triton")


def _claim_wait() -> float:
    """Seconds a miss waits for another process's compile of the same kernel:
    long enough for a big kernel, never forever; 0 (or less) takes no claims."""
    try:
        return float(os.environ.get("KJIT_TRITON_CLAIM_WAIT", "600"))
    except ValueError:
        return 600.0


def _token() -> Optional[str]:
    return os.environ.get("KJIT_TOKEN") or None


def _shared_client():
    """One client per process: a gRPC channel does not survive fork, so a
    child (a compile worker pool, say) makes its own."""
    global _client, _client_pid, _direct_checked
    if time.monotonic() < _down_until:
        return None
    with _lock:
        if _client is None or _client_pid != os.getpid():
            from kjit._client import Client  # noqa: PLC0415  (gRPC only when needed)
            _client = Client(token=_token(), tls_ca=os.environ.get("KJIT_TLS_CA") or None, timeout=_TIMEOUT)
            _client_pid = os.getpid()
            # Connected anyway: a user's grant lets its later processes (and
            # this one) read its blobs without connecting.
            if remember_grant(_client, token=_token()) and _direct is None:
                _direct_checked = 0.0
        return _client


def _direct_reader() -> Optional[DirectReader]:
    """The disk tier's direct reader, while the daemon publishes one; looked
    for again at most every _RETRY_AFTER seconds when there is none. Each of
    its reads checks that the daemon still serves as its manifest says."""
    global _direct, _direct_checked
    with _lock:
        now = time.monotonic()
        if _direct is None and _direct_checked and now - _direct_checked < _RETRY_AFTER:
            return None
        if _direct is None:
            _direct_checked = now
            _direct = DirectReader.open(token=_token())
        return _direct


def _direct_missed(reader: DirectReader) -> None:
    """After a direct read found nothing: a reader whose daemon no longer
    serves as its manifest said (stopped, restarted with other settings) is
    dropped, so that the next lookup looks for the manifest again."""
    global _direct, _direct_checked
    with _lock:
        if _direct is reader and not reader.serving():
            _direct = None
            _direct_checked = 0.0


def _failed(error: Exception) -> None:
    global _down_until, _warned
    _down_until = time.monotonic() + _RETRY_AFTER
    if not _warned:
        _warned = True
        _log.warning("kjit: Triton's cache goes on without kjitd for now: %s", error)


def _as_bytes(data) -> bytes:
    # Triton hands over bytes (cubins), str (PTX, JSON) or an MLIR module,
    # whose text is what Triton's own file cache writes.
    if isinstance(data, bytes):
        return data
    return str(data).encode("utf-8")


def _is_file_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and ".." not in name and name != "." \
        and "\0" not in name


class KjitCacheManager(CacheManager):
    """A triton.runtime.cache.CacheManager backed by kjitd, with Triton's own
    file cache directory as the local copy Triton reads."""

    def __init__(self, key, override=False, dump=False):
        self.key = key
        self._local = FileCacheManager(key, override=override, dump=dump)
        # Override and dump directories are a developer's local tools:
        # nothing there is shared.
        self._shared = not (override or dump)
        self.cache_dir = self._local.cache_dir

    def _remote(self, name: str):
        if not self._shares(name):
            return None
        return _shared_client()

    def _shares(self, name: str) -> bool:
        return self._shared and not name.endswith(_LOCAL_ONLY_SUFFIXES)

    def get_file(self, filename: str) -> Optional[str]:
        path = self._local.get_file(filename)
        if path is not None or not self._shares(filename):
            return path
        direct = _direct_reader()
        data = direct.get_blob(_namespace(), self.key, filename) if direct is not None else None
        if data is not None:
            return self._write_fetched(filename, data)
        if direct is not None:
            _direct_missed(direct)
        client = self._remote(filename)
        if client is None:
            return None
        from kjit._errors import KjitError  # noqa: PLC0415
        try:
            data = client.get_blob(_namespace(), self.key, filename)
        except KjitError as error:
            _failed(error)
            return None
        if data is None:
            return None
        return self._write_fetched(filename, data)

    def put(self, data, filename: str, binary=True) -> str:
        data = _as_bytes(data)
        path = self._local.put(data, filename, binary=True)
        client = self._remote(filename)
        if client is not None:
            namespace, key = _namespace(), self.key

            def store():
                from kjit._errors import KjitError  # noqa: PLC0415
                try:
                    client.put_blob(namespace, key, filename, data)
                except KjitError as error:
                    _failed(error)

            # Stored behind the compile: this process reads its own directory.
            uploads.submit(store, len(data))
        return path

    def get_group(self, filename: str) -> Optional[Dict[str, str]]:
        # Triton's compile calls this; the claim lives while compile's caller
        # waits on it (found only on a miss: most lookups hit).
        caller = sys._getframe(1)
        return self._lookup(filename, lambda: caller.f_back or caller)

    def fetch_group(self, filename: str) -> Optional[Dict[str, str]]:
        """get_group without a claim."""
        return self._lookup(filename, None)

    def claim_group(self, filename: str, compiling: FrameType) -> Optional[Dict[str, str]]:
        """get_group for remote compile, before its front end: a miss takes the
        kernel's claim, held while `compiling` (the frame of the compile that
        will put the group) waits on its call, or waits for another
        process's compile of it, so that processes started together run the
        front end of a kernel once, not each."""
        return self._lookup(filename, lambda: compiling)

    def _lookup(self, filename: str, compiling) -> Optional[Dict[str, str]]:
        """The group from the local directory, kjitd's disk tier directly, or
        kjitd; with `compiling` (gives the frame the claim lives with), a miss
        takes the kernel's claim or waits for another process's compile of it."""
        group = self._local.get_group(filename)
        if group is not None or not self._shares(filename):
            return group
        direct = _direct_reader()
        members = direct.get_group(_namespace(), self.key, filename) if direct is not None else None
        if members is None:
            if direct is not None:
                _direct_missed(direct)
            members = self._claim_or_fetch(filename, compiling()) if compiling is not None else \
                self._remote_group(filename)
        # The names become paths in the local directory: only plain file names.
        if members is None or any(not _is_file_name(name) for name in members):
            return None
        paths = {name: self._write_fetched(name, data) for name, data in members.items()}
        # The local group file last, so a reader of this directory that sees
        # it sees every member.
        self._local.put_group(filename, paths)
        return paths

    def _write_fetched(self, name: str, data: bytes) -> str:
        """Writes what kjitd had into the local directory, atomically as
        Triton's own put does (a temporary file renamed over the name), but
        without the temporary directory Triton makes and removes for each
        file: a fetched group is a few files, and this is a fifth of the cost."""
        path = os.path.join(self.cache_dir, name)
        temp = os.path.join(self.cache_dir, ".kjit-tmp.%d.%d.%s" % (os.getpid(), threading.get_ident(), name))
        try:
            with open(temp, "wb") as f:
                f.write(data)
            os.replace(temp, path)
        except BaseException:
            try:
                os.remove(temp)
            except OSError:
                pass
            raise
        return path

    def _claim_or_fetch(self, filename: str, compiling) -> Optional[Dict[str, bytes]]:
        """The group from kjitd, after waiting for another process's compile
        of it if one runs; None (compile it) with the claim taken, after the
        wait, or when claims cannot be had."""
        wait = _claim_wait()
        client = self._remote(filename)
        if client is None or wait <= 0:
            return self._remote_group(filename)
        from kjit._claims import holder  # noqa: PLC0415
        from kjit._errors import KjitError, ResourceExhausted, Unimplemented  # noqa: PLC0415
        try:
            claim = client.claim_blob_group(_namespace(), self.key, filename, wait)
        except (ResourceExhausted, Unimplemented):
            # Too many waiting, or a daemon without claims: as before claims.
            return self._remote_group(filename)
        except KjitError as error:
            _failed(error)
            return None
        if claim.outcome == "hit":
            return claim.group.members if claim.group.complete else None
        if claim.outcome == "claimed":
            holder.hold((_namespace(), self.key, filename), claim, compiling)
        return None

    def _remote_group(self, filename: str) -> Optional[Dict[str, bytes]]:
        client = self._remote(filename)
        if client is None:
            return None
        from kjit._errors import KjitError  # noqa: PLC0415
        try:
            answer = client.get_blob_group(_namespace(), self.key, filename)
        except KjitError as error:
            _failed(error)
            return None
        # Triton takes a group as a whole compile: a partial one (a member
        # evicted) is a miss, and the compile that follows stores it again.
        return answer.members if answer.complete else None

    def put_group(self, filename: str, group: Dict[str, str]):
        path = self._local.put_group(filename, group)
        client = self._remote(filename)
        name = (_namespace(), self.key, filename)
        claims = sys.modules.get("kjit._claims")
        if claims is not None:
            claims.holder.keep(name)  # past the compile, until the group is stored
        members = list(group)

        def store():
            from kjit._errors import KjitError  # noqa: PLC0415
            try:
                if client is not None:
                    client.put_blob_group(name[0], name[1], filename, members)
            except KjitError as error:
                _failed(error)
            finally:
                # The put ended this kernel's claim in kjitd (or, failed, gives it up).
                if claims is not None:
                    claims.holder.finish(name)

        # After the members' stores, on the same queue.
        uploads.submit(store, 0)
        return path


def install(compile: bool = False, edits=None) -> None:  # noqa: A002  (the documented name)
    """Makes this process's Triton use kjit, as KJIT_TRITON does from the
    environment: the cache manager (TRITON_CACHE_MANAGER=kjit.triton:KjitCacheManager)
    and, with compile=True, remote compile: the process runs its front end
    (Python -> TTIR) and kjitd the rest of Triton's pipeline (kjit._triton_remote).

    edits: this process's own edits to Triton's stages, applied by kjitd after
    its configured ones, as a list of [[edits]]-like mappings
    ({"op": "insert-after", "anchor": "ttgir/canonicalize", "pass": "cse"});
    KJIT_TRITON_EDITS holds the same as JSON. They are in every kernel's key."""
    if edits is not None and not compile:
        raise ValueError("edits change Triton's stages in kjitd: they need compile=True")
    os.environ.setdefault("TRITON_CACHE_MANAGER", "kjit.triton:KjitCacheManager")
    from triton import knobs  # noqa: PLC0415
    if knobs.cache.manager_class is None:
        knobs.cache.manager_class = KjitCacheManager
    if compile:
        from kjit import _triton_remote  # noqa: PLC0415
        if edits is not None:
            _triton_remote.set_edits(edits)
        _triton_remote.install()


def remote_compile_stats() -> Dict[str, int]:
    """What remote compile did in this process: "remote" (kernels kjitd
    compiled or had), "local" (compiled here) and "local: REASON" for each reason."""
    from kjit import _triton_remote  # noqa: PLC0415
    return _triton_remote.stats()
