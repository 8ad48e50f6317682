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
"""

import logging
import os
import threading
import time
from typing import Dict, Optional

from triton.runtime.cache import CacheManager, FileCacheManager

from kjit._client import Client
from kjit._errors import KjitError

__all__ = ["KjitCacheManager"]

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
_client: Optional[Client] = None
_client_pid: Optional[int] = None
_down_until = 0.0
_warned = False


def _namespace() -> str:
    return os.environ.get("KJIT_TRITON_NAMESPACE", "triton")


def _shared_client() -> Optional[Client]:
    """One client per process: a gRPC channel does not survive fork, so a
    child (a compile worker pool, say) makes its own."""
    global _client, _client_pid
    if time.monotonic() < _down_until:
        return None
    with _lock:
        if _client is None or _client_pid != os.getpid():
            _client = Client(timeout=_TIMEOUT)
            _client_pid = os.getpid()
        return _client


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

    def _remote(self, name: str) -> Optional[Client]:
        if not self._shared or name.endswith(_LOCAL_ONLY_SUFFIXES):
            return None
        return _shared_client()

    def get_file(self, filename: str) -> Optional[str]:
        path = self._local.get_file(filename)
        if path is not None:
            return path
        client = self._remote(filename)
        if client is None:
            return None
        try:
            data = client.get_blob(_namespace(), self.key, filename)
        except KjitError as error:
            _failed(error)
            return None
        if data is None:
            return None
        return self._local.put(data, filename, binary=True)

    def put(self, data, filename: str, binary=True) -> str:
        data = _as_bytes(data)
        path = self._local.put(data, filename, binary=True)
        client = self._remote(filename)
        if client is not None:
            try:
                client.put_blob(_namespace(), self.key, filename, data)
            except KjitError as error:
                _failed(error)
        return path

    def get_group(self, filename: str) -> Optional[Dict[str, str]]:
        group = self._local.get_group(filename)
        if group is not None:
            return group
        client = self._remote(filename)
        if client is None:
            return None
        try:
            answer = client.get_blob_group(_namespace(), self.key, filename)
        except KjitError as error:
            _failed(error)
            return None
        # Triton takes a group as a whole compile: a partial one (a member
        # evicted) is a miss, and the compile that follows stores it again.
        if not answer.complete:
            return None
        # The names become paths in the local directory: only plain file names.
        if any(not _is_file_name(name) for name in answer.members):
            return None
        paths = {name: self._local.put(data, name, binary=True) for name, data in answer.members.items()}
        # The local group file last, so a reader of this directory that sees
        # it sees every member.
        self._local.put_group(filename, paths)
        return paths

    def put_group(self, filename: str, group: Dict[str, str]):
        path = self._local.put_group(filename, group)
        client = self._remote(filename)
        if client is not None:
            try:
                client.put_blob_group(_namespace(), self.key, filename, list(group))
            except KjitError as error:
                _failed(error)
        return path
