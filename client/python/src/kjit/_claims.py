"""Claims held while the compile that took them runs (kjit.triton, kjit.cuda_core).

A compiler's cache that misses takes the group's claim (Client.claim_blob_group),
and the compile that follows puts the group, which ends the claim. Neither
Triton nor cuda.core tells its cache when a compile fails, so the claim is
kept only while that compile still runs, and given up (its call cancelled:
the next waiter compiles at once) as soon as it does not:

- The compile runs while the frame that called it is still on its thread's
  stack, at the same instruction: a frame waiting on a call stays on that
  call's instruction until the call returns or raises. A watcher thread looks
  every quarter second, so a compile that raised hands its claim on within
  that (and within one round trip when the process exits or dies: a process
  that is killed closes its connection, which ends the call in the daemon).
- A compile does not nest in another on one thread: a claim its thread still
  holds when it takes another belongs to a compile that has ended.
- A compile that has ended and whose group is being stored behind it
  (kjit._uploads) keeps its claim until the group is stored.
- At exit, every claim still held is given up.
"""

import atexit
import os
import sys
import threading
import time
from types import FrameType
from typing import Dict, Hashable, Optional

# How often the watcher looks at the compiles that hold claims.
WATCH_INTERVAL = 0.25


class _Held:
    __slots__ = ("claim", "thread", "frame", "instruction")

    def __init__(self, claim, thread: int, frame: FrameType):
        self.claim = claim
        self.thread = thread
        self.frame = frame
        self.instruction = frame.f_lasti


class ClaimHolder:
    """The claims one process holds, by a name of the holder's choice."""

    def __init__(self):
        self._lock = threading.Lock()
        self._held: Dict[Hashable, _Held] = {}
        self._pid = os.getpid()
        self._watcher: Optional[threading.Thread] = None

    def hold(self, name: Hashable, claim, caller: FrameType) -> None:
        """Keeps claim while caller (the frame that called the compile) waits
        on that call; on the calling thread."""
        thread = threading.get_ident()
        with self._lock:
            self._after_fork()
            # Those kept for a group being stored are not the thread's compile.
            for other in [n for n, held in self._held.items() if held.thread == thread and held.frame is not None]:
                self._held.pop(other).claim.cancel()
            previous = self._held.pop(name, None)
            if previous is not None:
                previous.claim.cancel()
            self._held[name] = _Held(claim, thread, caller)
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="kjit-claims", daemon=True)
                self._watcher.start()

    def keep(self, name: Hashable) -> None:
        """The compile has ended and its group is on its way to kjitd (stored
        behind it, kjit._uploads): the claim is kept until finish(), not
        only while the compile runs."""
        with self._lock:
            held = self._held.get(name)
            if held is not None:
                held.frame = None

    def finish(self, name: Hashable) -> None:
        """The group was put (or could not be): the claim has served."""
        with self._lock:
            held = self._held.pop(name, None)
        if held is not None:
            held.claim.cancel()

    def held(self) -> int:
        with self._lock:
            return len(self._held)

    def end_all(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for h in held:
            h.claim.cancel()

    def _after_fork(self) -> None:
        # A child does not hold its parent's claims (their calls are the
        # parent's), nor run its watcher.
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._held = {}
            self._watcher = None

    def _watch(self) -> None:
        while True:
            time.sleep(WATCH_INTERVAL)
            with self._lock:
                if self._pid != os.getpid():
                    return
                stacks = sys._current_frames()
                ended = [n for n, held in self._held.items() if not _running(held, stacks)]
                done = [self._held.pop(n) for n in ended]
            for held in done:
                held.claim.cancel()


def _running(held: _Held, stacks) -> bool:
    if held.frame is None:  # kept until finish()
        return True
    frame = stacks.get(held.thread)
    while frame is not None:
        if frame is held.frame:
            return frame.f_lasti == held.instruction
        frame = frame.f_back
    return False


holder = ClaimHolder()
atexit.register(holder.end_all)
