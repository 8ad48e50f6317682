"""How many of the repository's files adding a plugin-carrying Triton build
(Triton 3.8 + uTLX) touched: `git log --stat` (as --numstat) of the commit
that added it and its follow-ups, each file counted once, by kind. The
figure says what the next such build may cost to add.

    python3 bench/utlx_change_count.py [COMMIT ...]   (default: the uTLX commits)
"""

import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMITS = ["cf349de", "7ca12b9", "f7703ef", "9a09f37", "a4894b2"]
KINDS = ("C++", "Python", "tests", "data", "docs", "other")


def kind_of(path: str) -> str:
    """C++: sources and headers; Python: non-test modules (client, worker);
    tests: anything under a tests directory but its data; data: test data
    (TTIR, corpus.json); docs: Markdown; other: protos and shell scripts."""
    parts = path.split("/")
    if "tests" in parts and "data" in parts[parts.index("tests"):]:
        return "data"
    if path.endswith(".md"):
        return "docs"
    if "tests" in parts:
        return "tests"
    if path.endswith((".cpp", ".h", ".hpp", ".cc")):
        return "C++"
    if path.endswith(".py"):
        return "Python"
    return "other"


def main():
    commits = sys.argv[1:] or COMMITS
    files = {}
    for commit in commits:
        out = subprocess.run(["git", "-C", str(REPO), "show", "--numstat", "--format=", commit], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.strip():
                added, removed, path = line.split("\t")
                a, r = files.get(path, (0, 0))
                files[path] = (a + int(added), r + int(removed))
    counts = Counter(kind_of(p) for p in files)
    lines = Counter()
    for path, (added, removed) in files.items():
        lines[kind_of(path)] += added + removed
    print("commits: %s" % " ".join(commits))
    print("%-7s %5s %13s  files" % ("kind", "files", "lines +/-"))
    for kind in KINDS:
        names = sorted(p for p in files if kind_of(p) == kind)
        print("%-7s %5d %13d  %s" % (kind, counts[kind], lines[kind], ", ".join(names)))
    print("total   %5d %13d" % (len(files), sum(lines.values())))
    print("one line: %d files: %s" % (len(files), ", ".join("%d %s" % (counts[k], k) for k in KINDS if counts[k])))


if __name__ == "__main__":
    main()
