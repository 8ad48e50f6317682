#!/usr/bin/env python3
"""The README and the manual name only keys, flags and metrics that exist,
and every shell or Python example is either run or says why it is not.

    tests/docs/check_docs.py [ROOT]

What exists is read from the generated references in docs/ (which
docs_references keeps equal to what the code generates):

- a configuration key written `[section] key`, `section.key` (for the
  configuration's sections), or as a key of a ```toml example, must be a
  row of docs/configuration-reference.md;
- a flag in a command line (`kjitd --x`, `kjit cache ls --y`) must be one
  that program (or that kjit command) takes, per docs/cli-reference.md; a
  flag written alone must be kjitd's or kjit's, or one of the other tools'
  spelled out in OTHER_TOOLS_FLAGS;
- a metric (`kjit_..._total` and the like) must be in
  docs/metrics-reference.md, with the labels it is written with;
- a ```sh, ```bash or ```python block must follow a marker on the line
  before it: `<!-- runs -->` (tests/docs/run_examples.sh runs it against a
  real kjitd) or `<!-- not-run: why -->`;
- every link to a page of the repository, and a docs/ page's #anchor, must
  exist.

Exit 1 with one line per problem: FILE:LINE: what is wrong.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

GENERATED = {"configuration-reference.md", "metrics-reference.md", "cli-reference.md"}
# Sections of kjitd's configuration file that hold keys.
SECTIONS = {"cache", "limits", "tls", "admission", "triton", "fleet"}
# Flags of other programs that the manual quotes: NVRTC options kjitd
# refuses, podman's, a benchmark script's, CUDA's and clang's.
OTHER_TOOLS_FLAGS = {"--include-path", "--pre-include", "--time", "--format", "--quick", "--out", "--no-undefined"}
# Flags --help leaves out: kjitd starts its own workers with this one.
HIDDEN_FLAGS = {"--worker-fd"}
# Pages written with the feature they describe, which the manual links to
# ahead of them; their links are checked once they exist.
WRITTEN_WITH_THEIR_FEATURE: set[str] = set()
RUNNABLE_LANGS = {"sh", "bash", "shell", "console", "python", "py"}
METRIC = re.compile(r"\bkjit_[a-z0-9_]+?(?:_totals?|_seconds|_bytes|_bucket|_sum|_count|_length|_running|_pending|"
                    r"_waiting|_entries|_live|_by_class|_by_tenant|_draining)\b(\{[^}]*\})?")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
SECTION_KEY = re.compile(r"^\[([a-z_.]+)\] ([a-z_]+)$")
DOTTED_KEY = re.compile(r"^([a-z_]+)\.([a-z_.]+)$")
MARKER = re.compile(r"^<!-- (runs|not-run: .+) -->$")


def slug(heading: str) -> str:
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


class Known:
    def __init__(self, root: Path):
        docs = root / "docs"
        config = (docs / "configuration-reference.md").read_text()
        self.keys: set[str] = set()
        for cell in re.findall(r"^\| `([^`]+)` \|", config, re.M):
            self.keys.add(cell)
            m = SECTION_KEY.match(cell)
            if m:
                self.keys.add(f"{m[1]}.{m[2]}")
            # Arrays of tables name their fields: "[[toolkits]] from, to,
            # cuda_home", "[[triton.plugin]] builds, library, ...".
            table = re.match(r"^\[\[([a-z_.]+)\]\] (.+)$", cell)
            if table:
                self.keys.update(f"{table[1]}.{field.strip()}" for field in table[2].split(","))
        self.tables = set(re.findall(r"`\[\[([a-z_.]+)\]\]", config))
        metrics = (docs / "metrics-reference.md").read_text()
        self.metrics: dict[str, tuple[str, set[str]]] = {}
        for name, kind, labels in re.findall(r"^\| `(kjit_[a-z0-9_]+)` \| (\w+) \| ([^|]*) \|", metrics, re.M):
            self.metrics[name] = (kind, set(re.findall(r"`(\w+)`", labels)))
        cli = (docs / "cli-reference.md").read_text()
        self.commands: dict[str, set[str]] = {}
        for title, body in re.findall(r"^#+ (kjitd|kjit[a-z ]*)\n\n```text\n(.*?)```", cli, re.M | re.S):
            self.commands[title.strip()] = set(FLAG.findall(body)) | set(re.findall(r"(?<![\w-])(-[A-Za-z])\b", body))
        self.all_flags = set().union(*self.commands.values()) if self.commands else set()

    def metric_problem(self, name: str, labels: str | None) -> str | None:
        base = name
        if base not in self.metrics:
            for suffix in ("_bucket", "_sum", "_count"):
                if name.endswith(suffix) and name[: -len(suffix)] in self.metrics:
                    base = name[: -len(suffix)]
        if base not in self.metrics:
            return f"names the metric {name}, which kjitd does not export (docs/metrics-reference.md)"
        if labels:
            written = {part.split("=")[0].strip() for part in labels.strip("{}").split(",") if part.strip()}
            written.discard("le")
            unknown = written - self.metrics[base][1] - {"..."}
            if unknown:
                return f"writes {name} with the label(s) {', '.join(sorted(unknown))}, which it does not have"
        return None

    def command_flags(self, words: list[str]) -> tuple[str, set[str]] | None:
        """The longest documented command the words start with, and its flags."""
        if not words or words[0] not in ("kjit", "kjitd"):
            return None
        if words[0] == "kjitd":
            return "kjitd", self.commands.get("kjitd", set()) | HIDDEN_FLAGS
        best = "kjit"
        for i in range(2, len(words) + 1):
            candidate = " ".join(words[:i])
            if candidate in self.commands:
                best = candidate
        flags = set(self.commands.get(best, set()))
        flags |= self.commands.get("kjit", set())  # connection options go anywhere
        return best, flags


def code_lines(text: str):
    """(line number, language or None, line, preceding marker) for fenced lines; prose lines with lang None."""
    lines = text.splitlines()
    fence = None
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else (stripped[3:].strip() or "text")
            continue
        yield number, fence, line


def check_file(path: Path, root: Path, known: Known) -> list[str]:
    problems = []
    text = path.read_text()
    rel = path.relative_to(root)
    where = lambda n: f"{rel}:{n}"
    lines = text.splitlines()

    # Examples: a marker before every runnable block.
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped.startswith("```"):
            continue
        lang = stripped[3:].strip()
        opening = sum(1 for l in lines[: number - 1] if l.strip().startswith("```")) % 2 == 0
        if not opening or lang not in RUNNABLE_LANGS:
            continue
        before = [l.strip() for l in lines[: number - 1] if l.strip()]
        if not before or not MARKER.match(before[-1]):
            problems.append(f"{where(number)}: a {lang} example without <!-- runs --> or <!-- not-run: why --> "
                            "on the line before it")

    toml_section = None
    for number, fence, line in code_lines(text):
        # Metrics, anywhere.
        for match in METRIC.finditer(line):
            problem = known.metric_problem(match[0].split("{")[0], match[1])
            if problem:
                problems.append(f"{where(number)}: {problem}")
        if fence == "toml":
            header = re.match(r"^\s*\[\[?([A-Za-z_.\-]+)\]\]?", line)
            if header:
                toml_section = header[1]
                continue
            assignment = re.match(r"^\s*([a-z_]+)\s*=", line)
            if assignment and (toml_section is None or toml_section.split(".")[0] in SECTIONS):
                key = assignment[1] if toml_section is None else f"{toml_section}.{assignment[1]}"
                if key not in known.keys:
                    problems.append(f"{where(number)}: the configuration has no key {key}")
            continue
        toml_section = None
        if fence in ("sh", "bash", "shell", "console", "text", ""):
            check_command_line(line, number, known, problems, where)
            continue
        if fence is not None:
            continue
        for span in INLINE_CODE.findall(line):
            name = span.split(" =")[0]
            m = SECTION_KEY.match(name)
            # Dotted, `triton.x` is as often Triton's Python (triton.compile).
            if not m and (dotted := DOTTED_KEY.match(name)) and dotted[1] != "triton":
                m = dotted
            if m and m[1].split(".")[0] in SECTIONS:
                key = f"{m[1]}.{m[2]}"
                if key not in known.keys and m[1] not in known.tables:
                    problems.append(f"{where(number)}: the configuration has no key {span.split(' =')[0]}")
            check_command_line(span, number, known, problems, where)

    # Links to files of the repository and to anchors of docs pages.
    for number, line in enumerate(lines, 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists() and linked.name not in WRITTEN_WITH_THEIR_FEATURE:
                problems.append(f"{where(number)}: links to {target}, which does not exist")
            elif anchor and linked.suffix == ".md":
                anchors = {slug(h) for h in re.findall(r"^#+ (.+)$", linked.read_text(), re.M)}
                if anchor not in anchors:
                    problems.append(f"{where(number)}: links to {target}, a section that does not exist")
    return problems


def check_command_line(line: str, number: int, known: Known, problems: list[str], where) -> None:
    # Each command of the line: split on pipes, ;, && and comments.
    code = line.split(" #")[0]
    for part in re.split(r"\|\||&&|[|;&]|\$\(", code):
        words = part.split()
        while words and ("=" in words[0] or words[0] in ("sudo", "exec", "time", "echo")):
            words = words[1:]
        if words and words[0].endswith(("/kjitd", "/kjit")):
            words[0] = words[0].rsplit("/", 1)[1]
        flags = [w.split("=")[0] for w in words if FLAG.fullmatch(w.split("=")[0])]
        context = known.command_flags(words)
        if context and words[0] == "kjit" and len(words) > 1 and re.fullmatch(r"[a-z]+", words[1]):
            if f"kjit {words[1]}" not in known.commands:
                problems.append(f"{where(number)}: kjit has no command {words[1]}")
        if context:
            command, allowed = context
            for flag in flags:
                if flag not in allowed:
                    problems.append(f"{where(number)}: `{command}` has no flag {flag}")
        elif len(words) == 1 or (words and words[0].startswith("--")):
            for flag in flags:
                if flag not in known.all_flags | HIDDEN_FLAGS | OTHER_TOOLS_FLAGS:
                    problems.append(f"{where(number)}: neither kjitd nor kjit has the flag {flag}")


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    known = Known(root)
    pages = [root / "README.md"] + sorted(p for p in (root / "docs").glob("*.md") if p.name not in GENERATED)
    problems = []
    for page in pages:
        problems += check_file(page, root, known)
    # The pages --help names (each group's heading, each command's last line).
    cli = root / "docs" / "cli-reference.md"
    for number, line in enumerate(cli.read_text().splitlines(), 1):
        for target in re.findall(r"\b(docs/[\w.-]+\.md(?:#[\w-]+)?)", line):
            file_part, _, anchor = target.partition("#")
            linked = root / file_part
            if not linked.exists():
                problems.append(f"docs/cli-reference.md:{number}: --help names {target}, which does not exist")
            elif anchor and anchor not in {slug(h) for h in re.findall(r"^#+ (.+)$", linked.read_text(), re.M)}:
                problems.append(f"docs/cli-reference.md:{number}: --help names {target}, a section that does not exist")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) in the README and the manual", file=sys.stderr)
        return 1
    print(f"checked {len(pages)} pages: keys, flags, metrics, examples and links are all real")
    return 0


if __name__ == "__main__":
    sys.exit(main())
