"""Triton's build hash (triton.runtime.cache.triton_key), remembered per
install for processes that compile through kjitd.

Triton works the hash out in every process from its own sources and the
whole of libtriton.so, hundreds of megabytes: about half a second of CPU at
the start of every process (every rank of a job), hit or miss, before its
first kernel. With remote compile in force, kjit works it out once per
install and remembers it under the user's cache directory, with every file
Triton read for it and the directories holding those files and Triton's
package, each by inode, size, modification and change time. A later process
takes the remembered value only while every one of them is as it was; an
install, an upgrade or an edit changes them (the change time cannot be set
back), and the hash is worked out again. Triton does the same in its own
compile workers, which take the value the parent worked out.

KJIT_TRITON_KEY_MEMO=0 turns it off.
"""

import builtins
import functools
import json
import os
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Set

_MEMO_FILE = "triton-keys.json"
_MAX_INSTALLS = 32  # installs remembered; the oldest are dropped


def install() -> None:
    """Puts the remembering triton_key in place of Triton's, in every Triton
    module that holds it (idempotent)."""
    if os.environ.get("KJIT_TRITON_KEY_MEMO", "1").strip() == "0":
        return
    import triton  # noqa: PLC0415
    import triton.runtime.cache as cache  # noqa: PLC0415
    original = cache.triton_key
    if getattr(original, "kjit_remembered", False):
        return
    compute = getattr(original, "__wrapped__", original)
    cache_info = getattr(original, "cache_info", None)
    package = os.path.dirname(os.path.abspath(triton.__file__))
    identity = "%s:%s:%s" % (package, triton.__version__, sys.version_info[:2])

    @functools.lru_cache()
    def triton_key():
        # Already worked out in this process (nothing to read again, and
        # nothing to learn the files of): Triton's own value.
        if cache_info is not None and cache_info().currsize:
            return original()
        return remembered(compute, identity, package, memo_path())

    triton_key.kjit_remembered = True
    for name, module in list(sys.modules.items()):
        if (name == "triton" or name.startswith("triton.")) and getattr(module, "triton_key", None) is original:
            module.triton_key = triton_key


def memo_path() -> Optional[str]:
    from kjit._direct import user_cache_directory  # noqa: PLC0415
    directory = user_cache_directory()
    return os.path.join(directory, _MEMO_FILE) if directory is not None else None


def remembered(compute: Callable[[], str], identity: str, package: str, memo: Optional[str]) -> str:
    """compute()'s value, taken from memo when what it read then is as it
    was; else computed, and remembered with what it read."""
    known = _read(memo)
    entry = known.get(identity)
    if isinstance(entry, dict) and isinstance(entry.get("key"), str) and isinstance(entry.get("stamps"), dict) \
            and entry["stamps"] and all(_stamp(path) == stamp for path, stamp in entry["stamps"].items()):
        return entry["key"]
    if memo is None:
        return compute()
    # An install replacing files while the hash is worked out changes their
    # directories: then what was read is not what is stamped, and nothing is kept.
    directories = {path: _stamp(path) for path in _directories(package)}
    key, read = _computed(compute)
    if not read:
        return key
    paths = set(read)
    paths.update(os.path.dirname(path) for path in read)
    paths.update(directories)
    stamps = {path: _stamp(path) for path in sorted(paths)}
    if any(stamp is None for stamp in stamps.values()) or \
            any(stamps[path] != stamp for path, stamp in directories.items()):
        return key
    known[identity] = {"key": key, "stamps": stamps, "at": time.time()}
    for old in sorted(known, key=lambda name: known[name].get("at", 0) if isinstance(known[name], dict) else 0)[
            :max(0, len(known) - _MAX_INSTALLS)]:
        del known[old]
    from kjit._triton_remote import _write_json  # noqa: PLC0415  (atomic; a failed write costs the next process the hash)
    _write_json(memo, known)
    return key


_recording = threading.Lock()  # one recording at a time, so each puts back the real open


def _computed(compute: Callable[[], str]):
    """(compute(), the absolute paths of the files it opened)."""
    read: Set[str] = set()
    this_thread = threading.get_ident()
    with _recording:
        real_open = builtins.open

        def recording_open(file, *args, **kwargs):
            if threading.get_ident() == this_thread and isinstance(file, (str, bytes, os.PathLike)):
                read.add(os.path.abspath(os.fsdecode(file)))
            return real_open(file, *args, **kwargs)

        builtins.open = recording_open
        try:
            key = compute()
        finally:
            builtins.open = real_open
    return key, read


def _directories(root: str) -> List[str]:
    """root and every directory under it but Python's bytecode caches, which
    change as modules are first imported."""
    out = []
    for directory, children, _ in os.walk(root):
        children[:] = [child for child in children if child != "__pycache__"]
        out.append(directory)
    return out


def _stamp(path: str) -> Optional[List[int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _read(memo: Optional[str]) -> Dict:
    if memo is None:
        return {}
    try:
        with open(memo, encoding="utf-8") as f:
            known = json.load(f)
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}
