"""Triton's build hash remembered per install (kjit._triton_key): the logic
against files of the test's own, then the real triton package in child
processes (KJIT_TRITON=compile, no daemon needed: nothing is compiled)."""

import hashlib
import json
import os
import subprocess
import sys

import pytest

from kjit import _triton_key


class Install:
    """A package directory with a source file and a library, and a hash
    over them that counts how often it is worked out and opens its files as
    Triton's does (builtins.open)."""

    def __init__(self, root):
        self.root = root
        (root / "language").mkdir(parents=True)
        (root / "_C").mkdir()
        self.source = root / "language" / "core.py"
        self.library = root / "_C" / "libtriton.so"
        self.source.write_text("x = 1  # %s\n" % root.name)
        self.library.write_bytes(b"\x7fELF" + bytes(4096))
        self.memo = str(root.parent / "memo" / "triton-keys.json")
        self.computed = 0

    def compute(self):
        self.computed += 1
        digest = hashlib.sha256()
        for path in (self.source, self.library):
            with open(path, "rb") as f:
                digest.update(f.read())
        return "3.9.0-" + digest.hexdigest()

    def key(self):
        return _triton_key.remembered(self.compute, self.root.name, str(self.root), self.memo)


def later(path):
    """Dates a file after anything before it, as an edit made later is."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def test_the_hash_is_worked_out_once_and_remembered_with_what_it_read(tmp_path):
    install = Install(tmp_path / "triton")
    first = install.key()
    assert first == install.compute() and install.computed == 2
    assert install.key() == first
    assert install.computed == 2, "a second process worked the hash out again"
    stamps = json.loads(open(install.memo).read())["triton"]["stamps"]
    for path in (install.source, install.library, install.source.parent, install.root):
        assert str(path) in stamps


@pytest.mark.parametrize("change", ["replaced", "edited in place", "file added", "file removed"])
def test_any_change_to_what_it_read_works_the_hash_out_again(tmp_path, change):
    install = Install(tmp_path / "triton")
    (install.source.parent / "old.py").write_text("z = 1\n")
    first = install.key()
    if change == "replaced":  # as an installer writes: a new file over the old
        new = install.library.with_suffix(".new")
        new.write_bytes(b"\x7fELF" + bytes(4095) + b"!")
        os.replace(new, install.library)
    elif change == "edited in place":  # the same size, a later time
        install.source.write_text("x = 2  # triton\n")
        later(install.source)
    elif change == "file added":  # a new module beside one it read
        (install.source.parent / "extra.py").write_text("y = 1\n")
        later(install.source.parent)
    else:  # a module gone from beside one it read
        os.remove(install.source.parent / "old.py")
        later(install.source.parent)
    computed = install.computed
    second = install.key()
    assert install.computed == computed + 1
    assert second == install.compute()
    if change in ("replaced", "edited in place"):
        assert second != first


def test_a_hash_worked_out_while_an_install_changes_the_package_is_not_kept(tmp_path):
    install = Install(tmp_path / "triton")
    plain = install.compute

    def during_an_upgrade():
        key = plain()
        (install.root / "language" / "new.py").write_text("n = 1\n")
        later(install.root / "language")
        return key

    install.compute = during_an_upgrade
    install.key()
    assert not os.path.exists(install.memo)
    install.compute = plain
    install.key()
    assert install.key() == plain()
    assert install.computed == 3  # once during the upgrade, once after it (then kept), once to compare


def test_threads_working_the_hash_out_together_leave_open_as_it_was(tmp_path):
    import builtins
    import threading
    real_open = builtins.open
    installs = [Install(tmp_path / ("triton%d" % i)) for i in range(4)]
    threads = [threading.Thread(target=install.key) for install in installs for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builtins.open is real_open
    keys = [install.key() for install in installs]
    assert keys == [install.compute() for install in installs]
    assert len(set(keys)) == len(installs)


def test_no_memo_directory_or_a_damaged_memo_only_costs_the_hash(tmp_path):
    install = Install(tmp_path / "triton")
    assert _triton_key.remembered(install.compute, "id", str(install.root), None) == install.compute()
    os.makedirs(os.path.dirname(install.memo))
    with open(install.memo, "w") as f:
        f.write("{not json")
    assert install.key() == install.compute()
    assert install.key() == install.compute()
    # Worked out without a memo, and past the damaged one; the last key came
    # from the memo written then (the other 3 are the comparisons').
    assert install.computed == 5
    with open(install.memo) as f:
        assert "triton" in json.load(f)


triton = pytest.importorskip("triton", reason="the triton package is not installed (client/python/run-tests.sh "
                                               "installs it; pip install triton)")

CHILD = """
import json, sys
import triton
import triton.runtime.autotuner as autotuner
import triton.runtime.cache as cache
print(json.dumps({"key": cache.triton_key(), "ours": getattr(cache.triton_key, "kjit_remembered", False),
                  "autotuner": autotuner.triton_key is cache.triton_key}))
"""


def child(env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("KJIT_", "TRITON_"))}
    run = subprocess.run([sys.executable, "-c", CHILD], env=dict(clean, **env), capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_triton_process_takes_tritons_own_hash_from_the_memo(tmp_path):
    xdg = str(tmp_path / "xdg")
    own = child({})
    assert not own["ours"]
    remote = {"KJIT_TRITON": "compile", "XDG_CACHE_HOME": xdg}
    first = child(remote)
    assert first["ours"] and first["autotuner"]
    assert first["key"] == own["key"]
    memo = os.path.join(xdg, "kjit", "triton-keys.json")
    with open(memo) as f:
        known = json.load(f)
    (identity, entry), = known.items()
    assert any(path.endswith("libtriton.so") for path in entry["stamps"])
    # The next process takes the remembered value (here made recognisable)
    # without reading libtriton.so again.
    entry["key"] = "remembered-" + entry["key"]
    with open(memo, "w") as f:
        json.dump(known, f)
    assert child(remote)["key"] == "remembered-" + own["key"]
    off = child(dict(remote, KJIT_TRITON_KEY_MEMO="0"))
    assert not off["ours"] and off["key"] == own["key"]
