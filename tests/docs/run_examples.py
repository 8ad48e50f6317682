#!/usr/bin/env python3
"""Runs every example the README and the manual mark `<!-- runs -->` against
a real kjitd, as a reader would: shell blocks with bash (-e: a failing
command fails the example), Python blocks with the Python client's
environment, each in a scratch directory where `build/`, `examples/`,
`include/` and `tests/` are the repository's.

    tests/docs/run_examples.py [--kjitd PATH] [--python PATH] [--lang sh|python] [ROOT]

kjitd serves on a socket of its own (KJIT_SOCKET) with an empty cache.
Python examples need the Python client's environment (build/python-venv,
which client/python/run-tests.sh makes): without it they are reported as
skipped, and `make test-python` runs them (--lang python) once it exists.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MARKER = "<!-- runs -->"


def examples(root: Path) -> list[tuple[str, int, str, str]]:
    """(file, line, language, code) of each marked block, README first."""
    found = []
    for page in [root / "README.md"] + sorted((root / "docs").glob("*.md")):
        lines = page.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.strip() != MARKER:
                continue
            fence = next(i for i in range(number + 1, len(lines)) if lines[i].strip())
            lang = lines[fence].strip()[3:].strip()
            end = next(i for i in range(fence + 1, len(lines)) if lines[i].strip().startswith("```"))
            found.append((str(page.relative_to(root)), fence + 1, lang, "\n".join(lines[fence + 1:end]) + "\n"))
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[2]))
    parser.add_argument("--kjitd")
    parser.add_argument("--python")
    parser.add_argument("--lang", choices=("sh", "python"), help="only the examples in this language")
    args = parser.parse_args()
    root = Path(args.root)
    kjitd = args.kjitd or str(root / "build/bin/kjitd")
    python = args.python or str(root / "build/python-venv/bin/python")
    blocks = [b for b in examples(root) if not args.lang or (b[2] == "python") == (args.lang == "python")]
    if not blocks:
        print("no example is marked <!-- runs -->", file=sys.stderr)
        return 1
    if not Path(python).exists():
        for page, line, lang, _ in blocks:
            if lang == "python":
                print(f"{page}:{line}: python example skipped: {python} is missing")
        blocks = [b for b in blocks if b[2] != "python"]
        if not blocks:
            return 77
    with tempfile.TemporaryDirectory(prefix="kjit-examples-") as scratch:
        work = Path(scratch) / "work"
        work.mkdir()
        for name in ("build", "examples", "include", "tests"):
            (work / name).symlink_to(root / name)
        socket = Path(scratch) / "kjitd.sock"
        env = dict(os.environ, KJIT_SOCKET=str(socket), KJIT_DIRECT_READS="0")
        env.pop("KJIT_ADDRESS", None)
        log = open(Path(scratch) / "kjitd.log", "w")
        daemon = subprocess.Popen([kjitd, "--socket", str(socket), "--cache-dir", str(Path(scratch) / "cache"),
                                   "--compile-workers", "1"], stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            for _ in range(300):
                if subprocess.run([str(root / "build/bin/kjit"), "health"], env=env, capture_output=True).returncode == 0:
                    break
                time.sleep(0.1)
            failed = 0
            for page, line, lang, code in blocks:
                command = [python, "-c", code] if lang == "python" else ["bash", "-e", "-o", "pipefail", "-c", code]
                started = time.monotonic()
                result = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=300)
                took = time.monotonic() - started
                status = "ok" if result.returncode == 0 else f"FAILED (exit {result.returncode})"
                print(f"{page}:{line}: {lang} example {status}, {took:.1f} s")
                if result.returncode != 0:
                    failed += 1
                    print(re.sub(r"^", "    ", result.stdout + result.stderr, flags=re.M))
            return 1 if failed else 0
        finally:
            daemon.terminate()
            daemon.wait(timeout=60)
            log.close()


if __name__ == "__main__":
    sys.exit(main())
