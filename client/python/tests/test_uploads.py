"""Stores behind a compile (kjit._uploads): in order on one thread, drained
on demand and at exit, bounded in bytes; and a claim kept past its compile
until its group is stored (kjit._claims)."""

import subprocess
import sys
import threading
import time

import kjit._uploads as uploads_module
from kjit import _claims
from kjit._uploads import Uploads


def test_stores_run_in_order_behind_the_caller_and_drain_waits_for_them():
    uploads = Uploads()
    ran = []
    gate = threading.Event()
    uploads.submit(lambda: (gate.wait(5), ran.append("member")), 10)
    uploads.submit(lambda: ran.append("group"), 0)
    assert ran == []  # the caller did not wait
    gate.set()
    assert uploads.drain(5)
    assert ran == ["member", "group"]


def test_a_store_that_raises_never_reaches_the_caller_nor_stops_the_next():
    uploads = Uploads()
    ran = []
    uploads.submit(lambda: 1 / 0, 1)
    uploads.submit(lambda: ran.append("next"), 1)
    assert uploads.drain(5)
    assert ran == ["next"]


def test_past_the_bound_a_store_runs_at_once_after_those_queued(monkeypatch):
    monkeypatch.setattr(uploads_module, "MAX_QUEUED_BYTES", 100)
    uploads = Uploads()
    ran = []
    gate = threading.Event()
    uploads.submit(lambda: (gate.wait(5), ran.append("queued")), 60)
    threading.Timer(0.2, gate.set).start()
    uploads.submit(lambda: ran.append("big"), 60)  # 120 > 100: waits for the queue, then runs here
    assert ran == ["queued", "big"]


def test_a_process_that_exits_at_once_has_run_every_store(tmp_path):
    out = tmp_path / "stored"
    code = ("import time\n"
            "from kjit._uploads import uploads\n"
            "uploads.submit(lambda: (time.sleep(0.5), open(%r, 'w').write('done')), 4)\n" % str(out))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert out.read_text() == "done"


class _Claim:
    def __init__(self):
        self.cancelled = False

    def cancel(self):
        self.cancelled = True


def test_a_kept_claim_outlives_its_compile_and_the_threads_next_claim_until_finished():
    holder = _claims.ClaimHolder()
    first, second = _Claim(), _Claim()

    def compile_and_keep():
        holder.hold("first", first, sys._getframe())
        holder.keep("first")  # its group is on its way

    def next_compile():  # the thread's next compile, still running while the watcher looks
        holder.hold("second", second, sys._getframe(1))
        time.sleep(_claims.WATCH_INTERVAL * 3)
        assert not first.cancelled and not second.cancelled and holder.held() == 2
        holder.finish("first")
        assert first.cancelled and holder.held() == 1
        holder.finish("second")

    compile_and_keep()
    next_compile()
    assert second.cancelled and holder.held() == 0
