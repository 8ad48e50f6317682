"""Stores to kjitd that a compile does not wait for (kjit.triton's puts).

A compile writes its files to its own cache directory, which is what the
process reads; sending them to kjitd as well is for the other processes, and
need not hold up this one's next kernel. The calls run in order on one
background thread: a group is sent after its members, as the daemon wants.
What is queued is bounded in bytes (past the bound, a store waits for the
queue to drain and runs at once), and drained when the process exits, for
at most $KJIT_UPLOAD_EXIT_WAIT seconds (default 30): a process that exits
right after its last compile has still stored every kernel. A child process
after fork starts with an empty queue (what was queued is its parent's).
"""

import atexit
import logging
import os
import queue
import threading
from typing import Callable, Optional

_log = logging.getLogger("kjit")

# Bytes queued at most: the files of a few big kernels.
MAX_QUEUED_BYTES = 256 << 20


def _exit_wait() -> float:
    try:
        return float(os.environ.get("KJIT_UPLOAD_EXIT_WAIT", "30"))
    except ValueError:
        return 30.0


class Uploads:
    """One process's queue of stores."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pid = None
        self._queue: "queue.Queue[Optional[tuple]]" = queue.Queue()
        self._thread: Optional[threading.Thread] = None
        self._queued_bytes = 0
        self._exit_registered = False

    def submit(self, call: Callable[[], None], size: int) -> None:
        """Runs call on the upload thread, after every call submitted before."""
        with self._lock:
            self._after_fork()
            over = self._queued_bytes + size > MAX_QUEUED_BYTES
            if not over:
                self._queued_bytes += size
                self._start()
                self._queue.put((call, size))
                return
        self.drain(None)
        _run(call)

    def drain(self, timeout: Optional[float]) -> bool:
        """Waits until every call submitted has run (timeout: seconds, None:
        as long as it takes); False when some had not."""
        with self._lock:
            self._after_fork()
            if self._thread is None:
                return True
            done = threading.Event()
            self._queue.put((done.set, 0))
        return done.wait(timeout)

    def _start(self) -> None:  # under _lock
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="kjit-uploads", daemon=True)
        self._thread.start()
        if not self._exit_registered:
            self._exit_registered = True
            # Registered after kjit._claims' own exit handler, so it runs
            # first (atexit runs in reverse): a group is stored before the
            # claims still held are given up.
            import kjit._claims  # noqa: F401, PLC0415
            atexit.register(self._at_exit)

    def _run(self) -> None:
        while True:
            call, size = self._queue.get()
            _run(call)
            with self._lock:
                self._queued_bytes -= size

    def _after_fork(self) -> None:  # under _lock
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._queue = queue.Queue()
            self._thread = None
            self._queued_bytes = 0

    def _at_exit(self) -> None:
        wait = _exit_wait()
        if not self.drain(wait):
            _log.warning("kjit: %.0f s after exit began, stores to kjitd were still queued; the rest are dropped",
                         wait)


def _run(call: Callable[[], None]) -> None:
    try:
        call()
    except Exception as error:  # noqa: BLE001  (a store is for others: it never fails the process)
        _log.warning("kjit: a store to kjitd failed: %s: %s", type(error).__name__, error)


uploads = Uploads()
