"""Claims on blob groups through a real kjitd (kjit.Client.claim_blob_group,
release_blob_claim, and kjit._claims, which holds a claim only while the
compile that took it runs): one holder, waiters that get what it puts, a
holder that is killed or whose compile raises handing the claim on at once,
bad input refused at the daemon's edge."""

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import kjit
import kjit.aio
from kjit import _claims
from conftest import unique

NS = "claims-test"


def waits(client) -> int:
    return client.stats().blobs.claim_waits


def wait_until(condition, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within %.0f s" % seconds
        time.sleep(0.01)


def put_group(client, key):
    client.put_blob(NS, key, "k.cubin", b"cubin of " + key.encode())
    client.put_blob_group(NS, key, "k.json", ["k.cubin"])


def claim_in_thread(daemon, key, wait=30.0):
    """A waiter on its own connection: (thread, box) where box gets [claim, seconds]."""
    box = []

    def run():
        with kjit.Client(daemon.socket) as other:
            start = time.monotonic()
            claim = other.claim_blob_group(NS, key, "k.json", wait)
            box.extend([claim, time.monotonic() - start])

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


def test_one_holder_and_the_waiters_get_what_it_puts(daemon, client):
    key = unique("K")
    with client.claim_blob_group(NS, key, "k.json", 0) as holder:
        assert holder.outcome == "claimed" and holder.held
        assert len(holder.claim_id) == 32 and holder.lease_ms > 0
        before = waits(client)
        thread, box = claim_in_thread(daemon, key)
        wait_until(lambda: waits(client) == before + 1)
        put_group(client, key)
        thread.join()
        claim, _ = box
        assert claim.outcome == "hit"
        assert claim.group.complete and claim.group.members == {"k.cubin": b"cubin of " + key.encode()}
    assert client.claim_blob_group(NS, key, "k.json", 0).outcome == "hit"


def test_a_cancelled_or_released_claim_goes_to_a_waiter_at_once(daemon, client):
    for how in ("cancel", "release", "drop"):
        key = unique("K")
        holder = client.claim_blob_group(NS, key, "k.json", 0)
        assert holder.outcome == "claimed"
        before = waits(client)
        thread, box = claim_in_thread(daemon, key)
        wait_until(lambda: waits(client) == before + 1)
        start = time.monotonic()
        if how == "cancel":
            holder.cancel()
        elif how == "release":
            assert client.release_blob_claim(holder.claim_id, failed=True)
            assert not client.release_blob_claim(holder.claim_id), "ended already"
        else:
            del holder  # as a caller that forgot it: gRPC cancels the call
        thread.join()
        claim, _ = box
        assert claim.outcome == "claimed", how
        assert time.monotonic() - start < 5, how
        claim.cancel()


def test_a_waiter_never_waits_past_its_bound(daemon, client):
    key = unique("K")
    holder = client.claim_blob_group(NS, key, "k.json", 0)
    start = time.monotonic()
    assert client.claim_blob_group(NS, key, "k.json", 0.3).outcome == "timed-out"
    assert 0.3 <= time.monotonic() - start < 10
    holder.cancel()


def test_a_killed_holder_hands_its_claim_on_within_a_second(daemon, client, tmp_path):
    key = unique("K")
    child = subprocess.Popen([sys.executable, "-c", """
import sys, time, kjit
claim = kjit.Client(sys.argv[1]).claim_blob_group(sys.argv[2], sys.argv[3], "k.json", 0)
print(claim.outcome, flush=True)
time.sleep(600)
""", daemon.socket, NS, key], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "claimed"
        before = waits(client)
        thread, box = claim_in_thread(daemon, key)
        wait_until(lambda: waits(client) == before + 1)
        killed = time.monotonic()
        os.kill(child.pid, signal.SIGKILL)
        thread.join()
        claim, _ = box
        assert claim.outcome == "claimed"
        took = time.monotonic() - killed
        assert took < 3, took
        claim.cancel()
    finally:
        child.kill()
        child.wait()


def test_a_holder_that_stops_answering_loses_its_claim_to_keepalive(daemon, client):
    """A holder whose host vanishes never closes its connection: stopped
    (SIGSTOP), its kernel still acknowledges TCP but nothing answers kjitd's
    HTTP/2 pings, so kjitd drops the connection, and the claim, within its
    keepalive bound (10 s between pings, 5 s for the answer)."""
    key = unique("K")
    child = subprocess.Popen([sys.executable, "-c", """
import sys, time, kjit
claim = kjit.Client(sys.argv[1]).claim_blob_group(sys.argv[2], sys.argv[3], "k.json", 0)
print(claim.outcome, flush=True)
time.sleep(600)
""", daemon.tcp, NS, key], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "claimed"
        stopped = time.monotonic()
        os.kill(child.pid, signal.SIGSTOP)
        thread, box = claim_in_thread(daemon, key, wait=120.0)
        thread.join()
        claim, _ = box
        took = time.monotonic() - stopped
        assert claim.outcome == "claimed", "the stopped holder kept its claim for %.1f s" % took
        assert took < 40, took
        claim.cancel()
    finally:
        child.kill()
        child.wait()


def test_a_waiter_notices_a_daemon_that_stops_answering(tmp_path):
    """The other way round: a waiter's daemon whose host vanishes. The client
    pings every 20 s while a call is open and gives up on a ping unanswered
    for 10 s (gRPC's own default: 60 s), so the waiter hears of it within
    30 s, long before its 120 s wait is over."""
    from conftest import Daemon
    stopped_daemon = Daemon(tmp_path)
    stopped_daemon.start()
    try:
        key = unique("K")
        with kjit.Client(stopped_daemon.socket) as holder_client:
            holder = holder_client.claim_blob_group(NS, key, "k.json", 0)
            assert holder.outcome == "claimed"
            before = waits(holder_client)
            box = []

            def run():
                with kjit.Client(stopped_daemon.socket) as other:
                    try:
                        box.append(other.claim_blob_group(NS, key, "k.json", 120.0))
                    except kjit.KjitError as error:
                        box.append(error)

            thread = threading.Thread(target=run)
            thread.start()
            wait_until(lambda: waits(holder_client) == before + 1)
            stopped = time.monotonic()
            os.kill(stopped_daemon.process.pid, signal.SIGSTOP)
            thread.join(timeout=90)
            took = time.monotonic() - stopped
            assert not thread.is_alive(), "the waiter still waits on a daemon silent for %.0f s" % took
            assert isinstance(box[0], kjit.KjitError), box[0]
            assert took < 45, took
            os.kill(stopped_daemon.process.pid, signal.SIGCONT)
            holder.cancel()
    finally:
        os.kill(stopped_daemon.process.pid, signal.SIGCONT)
        stopped_daemon.stop()


def _compile_holding(client, key, fail: bool, meanwhile=lambda: None):
    """A stand-in for a compiler's compile: it misses, takes the claim (held by
    kjit._claims while this frame's caller waits on it), runs meanwhile(),
    then fails or puts."""
    claim = client.claim_blob_group(NS, key, "k.json", 30)
    assert claim.outcome == "claimed"
    _claims.holder.hold((NS, key), claim, sys._getframe(1))
    meanwhile()
    if fail:
        raise RuntimeError("the compile failed")
    put_group(client, key)
    _claims.holder.finish((NS, key))


def test_a_compile_that_raises_hands_its_claim_on_within_a_second(daemon, client):
    key = unique("K")
    before = waits(client)
    box = []

    def waiter():
        wait_until(lambda: _claims.holder.held() == 1)
        with kjit.Client(daemon.socket) as other:
            box.append(other.claim_blob_group(NS, key, "k.json", 30))
            box.append(time.monotonic())

    thread = threading.Thread(target=waiter)
    thread.start()
    with pytest.raises(RuntimeError):
        _compile_holding(client, key, fail=True, meanwhile=lambda: wait_until(lambda: waits(client) == before + 1))
    raised = time.monotonic()
    thread.join()
    claim, got = box
    assert claim.outcome == "claimed"
    assert got - raised < 1.5
    assert _claims.holder.held() == 0
    claim.cancel()


def test_a_compile_that_puts_ends_its_claim(daemon, client):
    key = unique("K")
    _compile_holding(client, key, fail=False)
    assert _claims.holder.held() == 0
    assert client.claim_blob_group(NS, key, "k.json", 0).outcome == "hit"


def test_bad_input_is_invalid_argument(client):
    for args in (("", "K", "g"), (NS, "K" * 300, "g"), (NS, "K", "../g")):
        with pytest.raises(kjit.InvalidArgument):
            client.claim_blob_group(*args, 0)
    with pytest.raises(kjit.InvalidArgument):
        client.claim_blob_group(NS, "K", "g", 10 * 24 * 3600.0)  # past [limits] max_claim_wait_ms
    with pytest.raises(kjit.InvalidArgument):
        client.release_blob_claim("not an id")


def test_the_async_client_claims_too(daemon):
    key = unique("K")

    async def main():
        async with kjit.aio.Client(daemon.socket) as client:
            holder = await client.claim_blob_group(NS, key, "k.json", 0)
            assert holder.outcome == "claimed" and holder.held
            assert (await client.claim_blob_group(NS, key, "k.json", 0)).outcome == "timed-out"
            assert await client.release_blob_claim(holder.claim_id)
            other = await client.claim_blob_group(NS, key, "k.json", 5)
            assert other.outcome == "claimed"
            other.cancel()

    asyncio.run(main())
