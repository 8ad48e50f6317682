#!/usr/bin/env python3
"""No package registry's or archive's host is written into the project.

    tests/deploy/check_registry_hosts.py [ROOT]

Scripts take the Debian archive and PyPI's index from the machine's own apt
and pip configuration, and container images are named without a registry,
so the project builds wherever apt and pip are set up, mirror or proxy
included. Two rules, each naming the offending lines:

1. No tracked file names a host that this machine's apt sources or pip
   configuration use (read here, at run time, never listed in this file).
2. The files that install, build or deploy (scripts/, .ci/, the Dockerfile,
   the Makefile, deploy/, the shell scripts of tests/, client/ and bench/)
   hold no URL to a host other than the loopback, and no image reference
   qualified by a registry (`host.name/...` in FROM, image:, podman or
   docker tag/pull/push).
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

URL = re.compile(r"\b(?:https?|ftp)://([^/\s\"'`)<>]+)")
LOOPBACK = re.compile(r"^(localhost|127(?:\.\d+){3}|\[::1\]|0\.0\.0\.0)(:\d+)?$")
# An image reference whose first component names a registry: it has a dot or
# a port, and is not the local store's `localhost`.
IMAGE_WORDS = re.compile(r"^\s*(?:FROM\s+(?:--\S+\s+)*|image:\s*|.*\b(?:podman|docker)\s+(?:tag|pull|push)\b.*?\s)"
                         r"\"?([a-z0-9.-]+(?:\.[a-z0-9-]+|:\d+))/[^\s\"]+", re.IGNORECASE)


def tracked_files(root: Path) -> list[Path]:
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]
    return [root / n for n in names if (root / n).is_file()]


def read_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None  # binary
    return data.decode("utf-8", errors="replace")


def configured_hosts() -> set[str]:
    """The hosts of apt's sources and of pip's indexes on this machine."""
    urls: list[str] = []
    for name in ["/etc/apt/sources.list", *glob.glob("/etc/apt/sources.list.d/*.list"),
                 *glob.glob("/etc/apt/sources.list.d/*.sources")]:
        text = read_text(Path(name)) or ""
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("#"):
                continue
            if line.startswith("URIs:"):
                urls += line.split()[1:]
            elif line.startswith("deb"):
                urls += [w for w in line.split() if "://" in w]
    try:
        pip = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        pip = ""
    for line in pip.splitlines():
        if "index-url" in line or "find-links" in line:
            urls += re.findall(r"[a-z+]+://[^\s'\"]+", line)
    # Without an index configured, pip's own default index and file host.
    try:
        from pip._internal.models.index import PyPI
        urls += [PyPI.url, "https://" + PyPI.file_storage_domain]
    except Exception:  # pip's internals moved: the configured ones remain
        pass
    for var in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        urls += os.environ.get(var, "").split()
    hosts = set()
    for url in urls:
        host = urlsplit(url).hostname
        if host and not LOOPBACK.match(host):
            hosts.add(host.lower())
    return hosts


def is_build_file(rel: str) -> bool:
    return (rel.startswith(("scripts/", ".ci/", "deploy/")) or rel in ("Dockerfile", "Makefile")
            or (rel.startswith(("tests/", "client/", "bench/")) and rel.endswith(".sh")))


def check(root: Path, hosts: set[str]) -> list[str]:
    problems = []
    for path in tracked_files(root):
        text = read_text(path)
        if text is None:
            continue
        rel = str(path.relative_to(root))
        lower = text.lower()
        for host in sorted(h for h in hosts if h in lower):
            for number, line in enumerate(text.splitlines(), 1):
                if host in line.lower():
                    problems.append(f"{rel}:{number}: names {host}, a host of this machine's apt or pip "
                                    f"configuration: take it from that configuration instead")
        if not is_build_file(rel):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for match in URL.finditer(line):
                host = match.group(1)
                if not LOOPBACK.match(host) and not re.search(r"[${}]", host):
                    problems.append(f"{rel}:{number}: a URL to {host}: an install or build step takes its "
                                    f"archive or index from apt's or pip's configuration")
            image = IMAGE_WORDS.match(line)
            if image and image.group(1).lower() != "localhost":
                problems.append(f"{rel}:{number}: an image named with the registry {image.group(1)}: "
                                f"name images without a registry (they are built or imported locally)")
    return problems


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]).resolve()
    problems = check(root, configured_hosts())
    for p in problems:
        print(f"registry-hosts: {p}", file=sys.stderr)
    if problems:
        return 1
    print("registry-hosts: no registry or archive host named in the project")
    return 0


if __name__ == "__main__":
    sys.exit(main())
