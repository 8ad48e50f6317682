#!/usr/bin/env python3
"""check_registry_hosts.py passes the project and names each planted host.

    tests/deploy/test_check_registry_hosts.py [-v]

Each test writes a small tree into a temporary directory (no git: every file
counts), plants one thing the check must refuse, and expects it named.
"""

from __future__ import annotations

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_registry_hosts as check  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CLEAN_SCRIPT = """#!/usr/bin/env bash
mirror=$(debian_archive)
debootstrap --variant=minbase bookworm rootfs "$mirror"
curl -fsS "http://127.0.0.1:$port/metrics"
podman tag localhost/debian:12 localhost/debian:bookworm
"""


class RegistryHosts(unittest.TestCase):
    def tree(self, files: dict[str, str]) -> Path:
        root = Path(self.enterContext(tempfile.TemporaryDirectory()))
        for name, text in {"scripts/base.sh": CLEAN_SCRIPT, **files}.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        return root

    def problems(self, files: dict[str, str], hosts: set[str] = frozenset()) -> list[str]:
        return check.check(self.tree(files), set(hosts))

    def test_the_project_names_no_host(self):
        self.assertEqual(check.check(REPO, check.configured_hosts()), [])

    def test_a_clean_tree_passes(self):
        self.assertEqual(self.problems({"Dockerfile": "FROM debian:12 AS base\n"}), [])

    def test_an_archive_url_in_a_script_is_named(self):
        found = self.problems({"scripts/base.sh": CLEAN_SCRIPT + 'debootstrap bookworm r "${m:-http://archive.example/debian}"\n'})
        self.assertEqual(len(found), 1, found)
        self.assertIn("scripts/base.sh:6", found[0])
        self.assertIn("archive.example", found[0])

    def test_a_registry_qualified_image_is_named(self):
        for files in ({"scripts/base.sh": CLEAN_SCRIPT + "podman tag localhost/debian:12 registry.example/library/debian:12\n"},
                      {"Dockerfile": "FROM registry.example:5000/debian:12\n"},
                      {"deploy/app.yaml": "spec:\n  image: registry.example/kjit:0.1.0\n"}):
            with self.subTest(files=list(files)):
                found = self.problems(files)
                self.assertEqual(len(found), 1, found)
                self.assertIn("registry.example", found[0])

    def test_a_host_of_this_machines_configuration_is_named_in_any_file(self):
        hosts = check.configured_hosts()
        if not hosts:
            self.skipTest("no apt source or pip index configured on this machine")
        host = sorted(hosts)[0]
        found = self.problems({"README.md": f"Packages come from {host}.\n"}, hosts)
        self.assertEqual(len(found), 1, found)
        self.assertIn(f"README.md:1: names {host}", found[0])

    def test_prose_may_link_outside_the_build_files(self):
        self.assertEqual(self.problems({"docs/notes.md": "See https://docs.example/page.\n"}), [])


if __name__ == "__main__":
    unittest.main()
