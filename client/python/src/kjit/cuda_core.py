"""NVIDIA cuda.core's program cache, shared through kjitd.

    from cuda.core import Program, ProgramOptions
    from kjit.cuda_core import ProgramCache

    cache = ProgramCache()
    program = Program(code, "c++", ProgramOptions(arch="sm_90"))
    cubin = program.compile("cubin", cache=cache)

Every process on the host (or on every host sharing a daemon's Redis tier)
then reuses what any of them compiled, and a program missed by several
processes at once is compiled by one of them: a miss takes the program's
claim in kjitd (kjit.Client.claim_blob_group), or waits for the process
holding it, at most `wait` seconds ($KJIT_CUDA_CORE_CLAIM_WAIT, default 600;
0: no claims), and gets the bytes it compiled. cuda.core tells a cache
nothing when a compile fails, so the claim is kept only while the compile
that missed runs (kjit._claims): one that raises, a process that exits or is
killed, hands it to the next waiter at once.

A lookup is Program.compile's own (ProgramCacheResource.get, which turns a
KeyError into a miss); the claim then lives while the frame that called
Program.compile waits on that call. A lookup made by hand (`cache[key]`
before compiling yourself) takes a claim only for as long as the frame that
made it stays on that line, that is, none to speak of.

Entries live in kjitd as a group of one blob: namespace "cuda.core"
($KJIT_CUDA_CORE_NAMESPACE), key the cache key's hex digits (a key longer
than 64 bytes: its SHA-256), name "program". The daemon is a cache, never a
dependency: when it cannot be reached, lookups miss (one warning) and
cuda.core compiles as it would without a cache.

As cuda.core's own caches, a store replaces: `cache[key] = value` over
another value stores the new bytes (PutBlob with replace), which every
process's next lookup gets; a reader gets the old bytes or the new, never a
mix. Keys are bytes, bytearray or str (as UTF-8), values bytes-like or
ObjectCode; anything else is a TypeError, as cuda.core's are. In a
namespace a [[blob_sharing]] entry shares between users, kjitd keeps a
stored program's first bytes, since it cannot tell whose they are: a store of
other bytes there raises kjit.FailedPrecondition (after `del cache[key]`, it
stores), as does a store to a daemon without a cache. A store while kjitd
cannot be reached is skipped (one warning), as lookups then miss.
"""

import hashlib
import logging
import os
import sys
import threading
import time
from typing import Optional, Union

from cuda.core import ObjectCode
from cuda.core.utils import ProgramCacheResource

__all__ = ["ProgramCache"]

_log = logging.getLogger("kjit.cuda_core")

_NAME = "program"
# After a failure to reach kjitd, how long to go on without it before trying again.
_RETRY_AFTER = 30.0
_GET = ProgramCacheResource.get.__code__


def _key_text(key: Union[bytes, str]) -> str:
    # The types cuda.core's caches take, and its message: bytes(5) would be
    # five NUL bytes, a memoryview's bytes could change after the store.
    if isinstance(key, str):
        raw = key.encode("utf-8")
    elif isinstance(key, (bytes, bytearray)):
        raw = bytes(key)
    else:
        raise TypeError("cache keys must be bytes or str, got %s" % type(key).__name__)
    return raw.hex() if len(raw) <= 64 else "sha256:" + hashlib.sha256(raw).hexdigest()


def _as_bytes(value) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, ObjectCode):
        code = value.code
        if isinstance(code, (bytes, bytearray, memoryview)):
            return bytes(code)
        with open(code, "rb") as f:  # path-backed: the bytes, read now
            return f.read()
    raise TypeError("cache values must be bytes-like or ObjectCode, got %s" % type(value).__name__)


class ProgramCache(ProgramCacheResource):
    """A cuda.core.utils.ProgramCacheResource backed by kjitd's blobs.

    address, token, tls_ca: as kjit.Client takes them (None: $KJIT_SOCKET,
    then $KJIT_ADDRESS, then the default socket; $KJIT_TOKEN; $KJIT_TLS_CA).
    wait: seconds a miss waits for another process's compile of the same
    program (None: $KJIT_CUDA_CORE_CLAIM_WAIT, else 600; 0: no claims).
    timeout: seconds each call to kjitd may take.

    len() counts the programs stored under this cache's namespace among the
    caller's blobs in kjitd's disk tier (every put reaches it; what it has
    evicted is gone), and clear() removes them from every tier; both ask
    kjitd (Cache.List with blob_namespace, Cache.Remove) and raise
    kjit.KjitError when it cannot answer, or has no disk tier. Another
    process may put or remove programs meanwhile."""

    def __init__(self, address=None, token: Optional[str] = None, tls_ca=None, *, namespace: Optional[str] = None,
                 wait: Optional[float] = None, timeout: float = 30.0):
        self._address = address
        self._token = token if token is not None else (os.environ.get("KJIT_TOKEN") or None)
        self._tls_ca = tls_ca if tls_ca is not None else (os.environ.get("KJIT_TLS_CA") or None)
        self.namespace = namespace or os.environ.get("KJIT_CUDA_CORE_NAMESPACE", "cuda.core")
        if wait is None:
            wait = float(os.environ.get("KJIT_CUDA_CORE_CLAIM_WAIT", "600"))
        self.wait = wait
        self.timeout = timeout
        self._lock = threading.Lock()
        self._client = None
        self._client_pid: Optional[int] = None
        self._down_until = 0.0
        self._warned = False

    def _remote(self):
        """One client per process (a gRPC channel does not survive fork); None
        for a while after kjitd could not be reached."""
        if time.monotonic() < self._down_until:
            return None
        with self._lock:
            if self._client is None or self._client_pid != os.getpid():
                from kjit._client import Client  # noqa: PLC0415
                self._client = Client(self._address, token=self._token, tls_ca=self._tls_ca, timeout=self.timeout)
                self._client_pid = os.getpid()
            return self._client

    def _failed(self, error: Exception) -> None:
        self._down_until = time.monotonic() + _RETRY_AFTER
        if not self._warned:
            self._warned = True
            _log.warning("kjit: cuda.core's program cache goes on without kjitd for now: %s", error)

    def _compiling_frame(self):
        """The frame whose call compiles on a miss: Program.compile's caller
        when the lookup is Program.compile's (through get), else the lookup's."""
        frame = sys._getframe(2)
        if frame.f_code is _GET and frame.f_back is not None:
            return frame.f_back
        return frame

    def __getitem__(self, key: Union[bytes, str]) -> bytes:
        text = _key_text(key)
        client = self._remote()
        if client is None:
            raise KeyError(key)
        from kjit._claims import holder  # noqa: PLC0415
        from kjit._errors import KjitError, ResourceExhausted, Unimplemented  # noqa: PLC0415
        try:
            if self.wait > 0:
                claim = client.claim_blob_group(self.namespace, text, _NAME, self.wait)
                if claim.outcome == "claimed":
                    holder.hold((self.namespace, text), claim, self._compiling_frame())
                group = claim.group
            else:
                group = client.get_blob_group(self.namespace, text, _NAME)
        except (ResourceExhausted, Unimplemented):
            group = None  # too many waiting, or a daemon without claims: compile
        except KjitError as error:
            self._failed(error)
            raise KeyError(key) from None
        if group is None or not group.complete or _NAME not in group.members:
            raise KeyError(key)
        return group.members[_NAME]

    def __setitem__(self, key: Union[bytes, str], value) -> None:
        # Value first, as cuda.core's caches check them.
        data = _as_bytes(value)
        text = _key_text(key)
        client = self._remote()
        try:
            if client is not None:
                from kjit._errors import FailedPrecondition, KjitError  # noqa: PLC0415
                try:
                    # The program's bytes replace what is stored; its group
                    # (one name) stays as it is, or is put the first time.
                    client.put_blob(self.namespace, text, _NAME, data, replace=True)
                    client.put_blob_group(self.namespace, text, _NAME, [_NAME])
                except FailedPrecondition:
                    raise  # kjitd answered and did not store it (a shared namespace's other bytes, no cache)
                except KjitError as error:
                    self._failed(error)
        finally:
            # The put ended the program's claim in kjitd (or, failed, gives it up).
            if "kjit._claims" in sys.modules:
                sys.modules["kjit._claims"].holder.finish((self.namespace, text))

    def __delitem__(self, key: Union[bytes, str]) -> None:
        text = _key_text(key)
        client = self._remote()
        if client is None:
            raise KeyError(key)
        from kjit._direct import BLOB_KIND, GROUP_KIND, blob_cache_key  # noqa: PLC0415
        from kjit._errors import KjitError  # noqa: PLC0415
        try:
            if client.get_blob(self.namespace, text, _NAME) is None:
                raise KeyError(key)
            client.cache_remove(blob_cache_key(GROUP_KIND, self.namespace, text, _NAME))
            client.cache_remove(blob_cache_key(BLOB_KIND, self.namespace, text, _NAME))
        except KjitError as error:
            self._failed(error)
            raise KeyError(key) from None

    def _programs(self):
        """This namespace's program entries in kjitd: groups and their members."""
        client = self._remote() or self._reconnect()
        return [entry for entry in client.cache_list(blob_namespace=self.namespace) if entry.blob_name == _NAME]

    def _reconnect(self):
        # len() and clear() answer or raise: a recent failure does not make them guess.
        self._down_until = 0.0
        return self._remote()

    def __len__(self) -> int:
        from kjit._direct import GROUP_KIND  # noqa: PLC0415
        return sum(1 for entry in self._programs() if entry.blob_kind == GROUP_KIND)

    def __bool__(self) -> bool:
        return True  # a cache, whatever len() would say

    def clear(self) -> None:
        from kjit._direct import GROUP_KIND  # noqa: PLC0415
        client = self._remote() or self._reconnect()
        # Groups first: a program is then a miss before its bytes go.
        for entry in sorted(self._programs(), key=lambda e: e.blob_kind != GROUP_KIND):
            client.cache_remove(entry.key)

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None and self._client_pid == os.getpid():
            client.close()
