#!/usr/bin/env python3
"""kjitd --check-config: the configuration a start would use, checked without serving.

    tests/deploy/test_check_config.py [-v]      (KJITD=path/to/kjitd, default build/bin/kjitd)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KJITD = os.environ.get("KJITD", str(REPO / "build/bin/kjitd"))


@unittest.skipUnless(os.access(KJITD, os.X_OK), f"no kjitd at {KJITD}")
class CheckConfigTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="kjit-check-config-")
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def check(self, toml: str | None, *flags: str) -> subprocess.CompletedProcess:
        command = [KJITD, "--check-config", *flags]
        if toml is not None:
            path = self.dir / "kjitd.toml"
            path.write_text(toml)
            command += ["--config", str(path)]
        # The sandbox check is the host's: workers 0 keeps these tests about
        # the configuration on kernels without Landlock too.
        return subprocess.run(command + ["--compile-workers", "0"], capture_output=True, text=True, timeout=60)

    def test_valid_configuration_is_ok_and_nothing_is_made(self):
        socket = self.dir / "run" / "kjitd.sock"
        cache = self.dir / "cache"
        result = self.check(f'socket = "{socket}"\nlog_level = "warn"\n[cache]\ndirectory = "{cache}"\n'
                            '[limits]\ncompile_timeout_s = 60\n')
        self.assertEqual(result.returncode, 0, result.stderr)
        # Every key as the daemon would serve with it, from the file, the
        # flags and the defaults, then the verdict.
        lines = result.stdout.splitlines()
        self.assertEqual(lines[-1], "configuration OK")
        self.assertIn(f"socket = {socket}", lines)
        self.assertIn(f"cache.directory = {cache}", lines)
        self.assertIn("limits.compile_timeout_s = 60", lines)
        self.assertIn("compile_workers = 0", lines)  # the flag over the default
        self.assertIn("log_level = warn", lines)
        self.assertFalse((self.dir / "run").exists(), "--check-config made the socket's directory")
        self.assertFalse(cache.exists(), "--check-config made the cache directory")

    def test_no_file_checks_the_defaults(self):
        result = self.check(None)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("configuration OK", result.stdout)

    def test_unknown_key_is_exit_2_with_its_name(self):
        result = self.check('sockit = "/run/kjit/kjitd.sock"\n')
        self.assertEqual(result.returncode, 2)
        self.assertIn("unknown key sockit", result.stderr)
        self.assertNotIn("configuration OK", result.stdout)

    def test_toml_syntax_error_names_the_line(self):
        result = self.check('log_level = "info"\n[limits\n')
        self.assertEqual(result.returncode, 2)
        self.assertIn("line 2", result.stderr)

    def test_missing_file_is_exit_2(self):
        result = subprocess.run([KJITD, "--check-config", "--config", str(self.dir / "none.toml")],
                                capture_output=True, text=True, timeout=60)
        self.assertNotEqual(result.returncode, 0)
        self.assertNotIn("configuration OK", result.stdout)

    def test_flags_override_the_file_as_at_a_start(self):
        # A key is checked alike in the file and as a flag, each naming itself.
        bad_level = 'log_level = "loud"\n'
        self.assertEqual(self.check(bad_level).returncode, 2)
        self.assertIn('log_level must be', self.check(bad_level).stderr)
        self.assertIn('not "loud"', self.check(bad_level).stderr)
        result = self.check('log_level = "debug"\n', "--log-level", "loud")
        self.assertEqual(result.returncode, 2)
        self.assertIn('--log-level must be', result.stderr)
        result = self.check('log_level = "debug"\n', "--log-level", "info")
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_unknown_default_target_is_exit_2(self):
        result = self.check('default_target = "cuda:1"\n')
        self.assertEqual(result.returncode, 2)
        self.assertIn("unknown target 'cuda:1'", result.stderr)

    def test_bad_flag_is_a_usage_error(self):
        result = self.check(None, "--sandbox", "chroot")
        self.assertNotEqual(result.returncode, 0)
        self.assertNotIn("configuration OK", result.stdout)

    def test_toolkit_range_without_a_toolkit_fails_as_a_start_would(self):
        result = self.check(f'[[toolkits]]\nfrom = "cuda:100"\nto = "cuda:121"\ncuda_home = "{self.dir}/none"\n')
        self.assertEqual(result.returncode, 2)
        self.assertIn("toolkit for", result.stderr)


@unittest.skipUnless(os.access(KJITD, os.X_OK), f"no kjitd at {KJITD}")
@unittest.skipUnless(shutil.which("openssl"), "no openssl command")
class CheckConfigTlsTest(unittest.TestCase):
    """The TCP listener's certificate and key, checked as a start checks them."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="kjit-check-config-tls-")
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def self_signed(self, name: str) -> tuple[Path, Path]:
        cert, key = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "1", "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True, timeout=60)
        return cert, key

    def check(self, cert: Path, key: Path) -> subprocess.CompletedProcess:
        return subprocess.run([KJITD, "--check-config", "--compile-workers", "0", "--listen", "127.0.0.1:0",
                               "--tls-cert", str(cert), "--tls-key", str(key)],
                              capture_output=True, text=True, timeout=60)

    def test_a_certificate_and_its_own_key_pass(self):
        cert, key = self.self_signed("server")
        result = self.check(cert, key)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines()[-1], "configuration OK")

    def test_a_key_of_another_certificate_is_exit_2_naming_both_files(self):
        cert, _ = self.self_signed("server")
        _, other_key = self.self_signed("other")
        result = self.check(cert, other_key)
        self.assertEqual(result.returncode, 2, result.stdout)
        self.assertNotIn("configuration OK", result.stdout)
        self.assertIn(f"the TLS key {other_key} does not match the certificate {cert}", result.stderr)

    def test_a_certificate_that_does_not_parse_is_exit_2(self):
        _, key = self.self_signed("server")
        # Readable and not empty, as a stand-in file is: no longer enough.
        cert = self.dir / "not-a-certificate.crt"
        cert.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
        result = self.check(cert, key)
        self.assertEqual(result.returncode, 2, result.stdout)
        self.assertIn(f"the TLS certificate {cert} holds no PEM certificate", result.stderr)
        # A key where the certificate should be is no certificate either.
        result = self.check(key, key)
        self.assertEqual(result.returncode, 2, result.stdout)
        self.assertIn(f"the TLS certificate {key} holds no PEM certificate", result.stderr)


if __name__ == "__main__":
    unittest.main()
