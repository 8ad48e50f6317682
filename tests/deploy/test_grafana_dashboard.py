#!/usr/bin/env python3
"""deploy/grafana/kjit-dashboard.json must load in Grafana and plot only what kjitd exports.

    tests/deploy/test_grafana_dashboard.py [-v]

The metrics kjitd exports are read from its source (server/observe/metrics*.cpp):
every "kjit_..." name there, and for each histogram its _bucket, _sum and
_count series. A dashboard whose query names anything else would plot
nothing, silently; each broken copy below must be caught.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy/grafana/kjit-dashboard.json"
DATASOURCE = "${DS_PROMETHEUS}"

# What an operator must be able to see; each needs a panel.
REQUIRED = [
    "kjit_requests_total",
    "kjit_request_duration_seconds_bucket",
    "kjit_compile_duration_seconds_bucket",
    "kjit_cache_hits_total",
    "kjit_cache_lookups_total",
    "kjit_compile_queue_pending",
    "kjit_compile_queue_pending_by_tenant",
    "kjit_compile_refused_total",
    "kjit_worker_starts_total",
    "kjit_worker_crashes_total",
    "kjit_worker_kills_total",
    "kjit_cache_stored_bytes",
    "kjit_cache_evictions_total",
    "kjit_cache_corrupt_entries_total",
    "kjit_cache_errors_total",
]


def exported_metrics(source_dir: Path = REPO / "server" / "observe") -> set[str]:
    names: set[str] = set()
    for path in sorted(source_dir.glob("metrics*.cpp")):
        text = path.read_text()
        names.update(re.findall(r'"(kjit_[a-z0-9_]+)"', text))
        for histogram in re.findall(r'BuildHistogram\(\)\s*\.Name\("(kjit_[a-z0-9_]+)"\)', text):
            names.update(histogram + suffix for suffix in ("_bucket", "_sum", "_count"))
    return names


def panels_of(dashboard: dict) -> list[dict]:
    out = []
    for panel in dashboard.get("panels", []):
        out.append(panel)
        out.extend(panel.get("panels", []))  # collapsed rows hold theirs
    return out


def problems(dashboard: dict, exported: set[str]) -> list[str]:
    """What is wrong with a dashboard, one line each; empty when nothing is."""
    found: list[str] = []
    if not isinstance(dashboard.get("schemaVersion"), int) or dashboard["schemaVersion"] < 36:
        found.append(f"schemaVersion {dashboard.get('schemaVersion')!r} is older than Grafana 9")
    inputs = [i for i in dashboard.get("__inputs", []) if i.get("name") == "DS_PROMETHEUS"]
    if not inputs or inputs[0].get("pluginId") != "prometheus":
        found.append("no DS_PROMETHEUS datasource input")
    used: set[str] = set()
    ids: set[int] = set()
    for panel in panels_of(dashboard):
        title = panel.get("title", "?")
        if panel.get("id") in ids:
            found.append(f"panel {title!r}: id {panel.get('id')} is used twice")
        ids.add(panel.get("id"))
        if panel.get("type") == "row":
            continue
        if panel.get("datasource", {}).get("uid") != DATASOURCE:
            found.append(f"panel {title!r}: its datasource is not {DATASOURCE}")
        targets = panel.get("targets") or []
        if not targets:
            found.append(f"panel {title!r}: no query")
        for target in targets:
            expr = target.get("expr", "")
            names = set(re.findall(r"\bkjit_[a-z0-9_]+", expr))
            if not names:
                found.append(f"panel {title!r}: query {expr!r} names no kjit metric")
            for name in sorted(names - exported):
                found.append(f"panel {title!r}: {name} is not a metric kjitd exports")
            used.update(names)
            if expr.count("(") != expr.count(")") or expr.count("{") != expr.count("}"):
                found.append(f"panel {title!r}: unbalanced query {expr!r}")
    for name in REQUIRED:
        if name not in used:
            found.append(f"no panel shows {name}")
    for variable in dashboard.get("templating", {}).get("list", []):
        for name in set(re.findall(r"\bkjit_[a-z0-9_]+", json.dumps(variable.get("query")))) - exported:
            found.append(f"variable {variable.get('name')!r}: {name} is not a metric kjitd exports")
    return found


class DashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.exported = exported_metrics()
        cls.dashboard = json.loads(DASHBOARD.read_text())

    def test_the_source_exports_what_the_checks_expect(self):
        # Were the source's spelling to change, every check below would pass on nothing.
        for name in REQUIRED:
            self.assertIn(name, self.exported)
        self.assertNotIn("kjit_requests_total_bucket", self.exported)

    def test_the_dashboard_as_it_is_has_no_problem(self):
        self.assertEqual(problems(self.dashboard, self.exported), [])

    def broken(self, edit) -> list[str]:
        dashboard = copy.deepcopy(self.dashboard)
        edit(dashboard)
        return problems(dashboard, self.exported)

    def first_query(self, dashboard: dict) -> dict:
        return next(p for p in panels_of(dashboard) if p.get("targets"))["targets"][0]

    def test_a_metric_kjitd_does_not_export_is_named(self):
        def edit(d):
            target = self.first_query(d)
            target["expr"] = target["expr"].replace("kjit_requests_total", "kjit_request_total")
        self.assertTrue(any("kjit_request_total is not a metric" in p for p in self.broken(edit)))

    def test_a_histogram_series_of_a_counter_is_named(self):
        def edit(d):
            self.first_query(d)["expr"] = "rate(kjit_compiles_total_bucket[5m])"
        self.assertTrue(any("kjit_compiles_total_bucket" in p for p in self.broken(edit)))

    def test_a_missing_required_panel_is_named(self):
        def edit(d):
            d["panels"] = [p for p in d["panels"]
                           if "kjit_worker_kills_total" not in json.dumps(p.get("targets", []))]
        self.assertIn("no panel shows kjit_worker_kills_total", self.broken(edit))

    def test_a_fixed_datasource_is_named(self):
        def edit(d):
            next(p for p in panels_of(d) if p.get("targets"))["datasource"] = {"type": "prometheus", "uid": "abc"}
        self.assertTrue(any("datasource" in p for p in self.broken(edit)))

    def test_an_old_schema_and_no_input_are_named(self):
        def edit(d):
            d["schemaVersion"] = 16
            d["__inputs"] = []
        found = self.broken(edit)
        self.assertTrue(any("schemaVersion" in p for p in found), found)
        self.assertIn("no DS_PROMETHEUS datasource input", found)


if __name__ == "__main__":
    unittest.main(argv=sys.argv)
