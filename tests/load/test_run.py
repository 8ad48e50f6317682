#!/usr/bin/env python3
"""run.py's own checks, without a daemon: that a sanitizer report in a log
or a non-zero exit on SIGTERM fails a scenario, and the environment an ASan
build's processes get.

    tests/load/test_run.py [-v]
"""

import os
import select
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

# Lines as kjitd writes them: a worker's stderr comes prefixed with its pid.
WORKER_ASAN = """\
[2026-12-02 04:37:02.700] [kjitd] [info] kjitd listening on unix:/tmp/k/kjitd.sock
[2026-12-02 04:37:02.703] [kjitd] [warning] compile worker 11775: ==11775==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000002058
[2026-12-02 04:37:02.703] [kjitd] [warning] compile worker 11775: WRITE of size 16 at 0x602000002058 thread T0
[2026-12-02 04:37:02.930] [kjitd] [warning] compile worker 11775:     #0 0x7f254cc48060 in __interceptor_memcpy
[2026-12-02 04:37:02.931] [kjitd] [warning] compile worker 11775: SUMMARY: AddressSanitizer: heap-buffer-overflow in memcpy
[2026-12-02 04:37:02.931] [kjitd] [warning] compile worker 11775: Shadow bytes around the buggy address:
[2026-12-02 04:37:02.931] [kjitd] [warning] compile worker 11775:   0x0c047fff8000: fa fa 00 00
"""

DAEMON_LEAK = """\
[2026-12-02 04:36:33.204] [kjitd] [info] kjitd stopped
=================================================================
==11374==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 4242 byte(s) in 1 object(s) allocated from:
    #0 0x7f68a7ab89cf in __interceptor_malloc
SUMMARY: AddressSanitizer: 4242 byte(s) leaked in 1 allocation(s).
"""

UBSAN = "/work/main/cache/store.cpp:120:17: runtime error: signed integer overflow: 2147483647 + 1\n"

# What a clean run logs: compile errors of bad inputs are not reports.
CLEAN = """\
[2026-12-02 04:32:05.100] [kjitd] [info] [req 1] compile broken.cu for cuda:90 failed (invalid_argument): broken.cu(1): error: expected an expression
[2026-12-02 04:32:05.200] [kjitd] [warning] compile worker 22061 killed by signal 9 (Killed) while compiling slow.cu
[2026-12-02 04:32:05.300] [kjitd] [info] [req 2] the compiler reported a runtime error: none
"""


class SanitizerReportTest(unittest.TestCase):
    def test_a_workers_report_logged_by_the_daemon_is_found_up_to_its_shadow_dump(self):
        report = run.sanitizer_report(WORKER_ASAN)
        self.assertIsNotNone(report)
        self.assertTrue(report.splitlines()[0].endswith("ERROR: AddressSanitizer: heap-buffer-overflow on address "
                                                        "0x602000002058"), report)
        self.assertIn("SUMMARY: AddressSanitizer", report)
        self.assertNotIn("Shadow bytes", report)
        self.assertNotIn("listening", report)

    def test_a_leak_at_exit_is_found(self):
        self.assertIn("4242 byte(s)", run.sanitizer_report(DAEMON_LEAK))

    def test_undefined_behaviour_and_a_failed_leak_check_are_found(self):
        self.assertEqual(run.sanitizer_report(UBSAN), UBSAN.strip())
        self.assertIsNotNone(run.sanitizer_report("==5==LeakSanitizer has encountered a fatal error.\n"))
        self.assertIsNotNone(run.sanitizer_report("AddressSanitizer:DEADLYSIGNAL\n==7==ERROR: AddressSanitizer: SEGV"))

    def test_a_clean_log_has_none(self):
        self.assertIsNone(run.sanitizer_report(CLEAN))
        self.assertIsNone(run.sanitizer_report(""))

    def test_a_client_report_is_a_failure(self):
        with self.assertRaises(run.Failure) as caught:
            run.client_report("kjit_load_driver", DAEMON_LEAK)
        self.assertIn("kjit_load_driver: a sanitizer report", str(caught.exception))
        run.client_report("kjit_load_driver", "kjit_load_driver: connection refused\n")


class SanitizerEnvironmentTest(unittest.TestCase):
    def test_defaults_make_every_report_fatal_and_suppress_the_toolkits_leaks(self):
        env = run.sanitizer_environment({"PATH": "/bin"})
        self.assertEqual(env["PATH"], "/bin")
        self.assertEqual(env["ASAN_OPTIONS"], "detect_leaks=1:halt_on_error=1")
        self.assertEqual(env["UBSAN_OPTIONS"], "print_stacktrace=1:halt_on_error=1")
        suppressions = env["LSAN_OPTIONS"].split("suppressions=", 1)[1]
        self.assertTrue(os.path.isfile(suppressions), suppressions)

    def test_what_the_environment_says_comes_last_and_so_wins(self):
        env = run.sanitizer_environment({"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
                                         "LSAN_OPTIONS": "suppressions=/elsewhere.supp"})
        self.assertEqual(env["ASAN_OPTIONS"], "detect_leaks=1:halt_on_error=1:detect_leaks=1:abort_on_error=0")
        self.assertEqual(env["LSAN_OPTIONS"], "suppressions=/elsewhere.supp")

    def test_the_quarantine_is_read_from_the_options(self):
        self.assertEqual(run.quarantine_bytes({}), 256 * run.MiB)
        self.assertEqual(run.quarantine_bytes({"ASAN_OPTIONS": "quarantine_size_mb=64:detect_leaks=1"}), 64 * run.MiB)
        # What a full one holds: chunk overhead (x1.5) and shadow (x9/8).
        self.assertEqual(run.quarantine_allowance({"ASAN_OPTIONS": "quarantine_size_mb=64"}), 108 * run.MiB)

    def test_an_asan_build_is_told_by_its_runtime_symbol(self):
        with tempfile.NamedTemporaryFile() as f:
            f.write(b"\x7fELF....__asan_init\0....")
            f.flush()
            self.assertTrue(run.built_with_asan(f.name))
        self.assertFalse(run.built_with_asan(sys.executable))


class StopTest(unittest.TestCase):
    """Daemon.stop() on processes that stand in for kjitd."""

    def daemon(self, on_term):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        d = run.Daemon.__new__(run.Daemon)
        d.ctx = type("Ctx", (), {"asan": False, "notes": []})()
        d.name = "stand-in"
        d.log_path = os.path.join(tmp.name, "kjitd.log")
        with open(d.log_path, "w") as f:
            f.write(CLEAN)
        # Says "ready" once its trap is set, so SIGTERM finds it.
        d.proc = subprocess.Popen(["sh", "-c", f"trap '{on_term}' TERM; echo ready; while :; do sleep 0.05; done"],
                                  stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: d.proc.poll() is None and d.proc.kill())
        ready, _, _ = select.select([d.proc.stdout], [], [], 30)
        self.assertTrue(ready and d.proc.stdout.readline() == "ready\n", "the stand-in did not start")
        return d

    def test_exit_0_on_sigterm_passes(self):
        d = self.daemon("exit 0")
        d.stop()
        self.assertEqual(d.proc.returncode, 0)

    def test_a_non_zero_exit_on_sigterm_fails_naming_it(self):
        d = self.daemon("exit 23")  # LeakSanitizer's exit code
        with self.assertRaises(run.Failure) as caught:
            d.stop()
        self.assertIn("exited 23 on SIGTERM", str(caught.exception))

    def test_a_report_in_the_log_fails_even_with_exit_0(self):
        d = self.daemon("exit 0")
        with open(d.log_path, "a") as f:
            f.write(DAEMON_LEAK)
        with self.assertRaises(run.Failure) as caught:
            d.stop()
        self.assertIn("ERROR: LeakSanitizer", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
