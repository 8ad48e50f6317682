#!/usr/bin/env python3
"""check_manifests.py must pass deploy/ as it is and fail each broken copy.

    tests/deploy/test_check_manifests.py [-v]      (KJITD=path/to/kjitd, default build/bin/kjitd)

Each test copies deploy/ and the Dockerfile to a temporary directory, breaks
one thing that matters, and expects the checker to name it.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_manifests  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
KJITD = os.environ.get("KJITD", str(REPO / "build/bin/kjitd"))
HAVE_KJITD = os.access(KJITD, os.X_OK)
try:
    import kubernetes_validate  # noqa: F401
    HAVE_SCHEMAS = True
except ImportError:
    HAVE_SCHEMAS = False


class Copy:
    """A scratch copy of deploy/ and the Dockerfile."""

    def __init__(self, root: Path):
        self.deploy = root / "deploy"
        shutil.copytree(REPO / "deploy", self.deploy)
        self.dockerfile = root / "Dockerfile"
        shutil.copy(REPO / "Dockerfile", self.dockerfile)

    def edit_text(self, relative: str, old: str, new: str, count: int = 1) -> None:
        path = self.deploy / relative if relative != "Dockerfile" else self.dockerfile
        text = path.read_text()
        assert old in text, f"{old!r} is not in {relative}"
        path.write_text(text.replace(old, new, count))

    def edit_yaml(self, relative: str, edit) -> None:
        """Calls edit(doc) on every document of a manifest and writes them back."""
        path = self.deploy / relative
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        for doc in docs:
            edit(doc)
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def kjitd_container(doc: dict) -> dict | None:
    for container in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []) or []:
        if container.get("name") == "kjitd":
            return container
    return None


class CheckManifestsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="kjit-deploy-test-")
        self.copy = Copy(Path(self.tmp.name))

    def tearDown(self):
        self.tmp.cleanup()

    def problems(self, kjitd: bool = False) -> list[str]:
        problems, _ = check_manifests.check_all(self.copy.deploy, self.copy.dockerfile,
                                                KJITD if kjitd else None)
        return list(problems)

    def assert_problem(self, pattern: str, kjitd: bool = False) -> None:
        problems = self.problems(kjitd)
        self.assertTrue(any(re.search(pattern, p) for p in problems),
                        f"no problem matching {pattern!r}; got: {problems}")

    # The unbroken copy passes: every other test's failure is its mutation's.
    def test_deploy_as_it_is_passes(self):
        self.assertEqual(self.problems(kjitd=HAVE_KJITD), [])

    def test_socket_not_on_the_host(self):
        def edit(doc):
            if doc.get("kind") == "DaemonSet":
                for volume in doc["spec"]["template"]["spec"]["volumes"]:
                    if volume["name"] == "socket-dir":
                        volume.pop("hostPath")
                        volume["emptyDir"] = {}
        self.copy.edit_yaml("kubernetes/daemonset.yaml", edit)
        self.assert_problem(r"/run/kjit is not the host's /run/kjit \(hostPath\)")

    def test_daemonset_probe_not_kjit_health(self):
        def edit(doc):
            if doc.get("kind") == "DaemonSet":
                kjitd_container(doc)["livenessProbe"] = {"tcpSocket": {"port": 7878}}
        self.copy.edit_yaml("kubernetes/daemonset.yaml", edit)
        self.assert_problem(r"livenessProbe is not exec kjit health")

    def test_missing_probe(self):
        def edit(doc):
            if doc.get("kind") == "Deployment" and kjitd_container(doc):
                del kjitd_container(doc)["readinessProbe"]
        self.copy.edit_yaml("kubernetes/compile-deployment.yaml", edit)
        self.assert_problem(r"no readinessProbe")

    def test_grpc_probe_on_the_tls_port(self):
        def edit(doc):
            if doc.get("kind") == "Deployment":
                kjitd_container(doc)["livenessProbe"] = {"grpc": {"port": 7878}}
        self.copy.edit_yaml("kubernetes/compile-deployment.yaml", edit)
        self.assert_problem(r"livenessProbe is a grpc probe, which cannot speak TLS to port 7878")

    def test_compile_port_in_plaintext(self):
        def edit(doc):
            if doc.get("kind") == "Deployment":
                container = kjitd_container(doc)
                container["args"] = container["args"][:4] + ["--insecure-listen"]
        self.copy.edit_yaml("kubernetes/compile-deployment.yaml", edit)
        self.assert_problem(r"the TCP port is plaintext \(--insecure-listen\)")
        self.assert_problem(r"no --tls-cert and --tls-key for the TCP port")

    def test_tls_secret_mounted_writable(self):
        def edit(doc):
            if doc.get("kind") == "Deployment":
                for mount in kjitd_container(doc)["volumeMounts"]:
                    if mount["name"] == "tls":
                        del mount["readOnly"]
        self.copy.edit_yaml("kubernetes/compile-deployment.yaml", edit)
        self.assert_problem(r"the Secret holding /etc/kjit-tls/tls.crt is not mounted readOnly")

    def test_tls_files_not_from_a_secret(self):
        def edit(doc):
            if doc.get("kind") == "Deployment":
                for volume in doc["spec"]["template"]["spec"]["volumes"]:
                    if volume["name"] == "tls":
                        volume.pop("secret")
                        volume["emptyDir"] = {}
        self.copy.edit_yaml("kubernetes/compile-deployment.yaml", edit)
        self.assert_problem(r"/etc/kjit-tls/tls.key is not in a mounted Secret")

    @unittest.skipUnless(HAVE_KJITD, f"no kjitd at {KJITD}")
    def test_compose_listen_without_tls_or_insecure_listen_refused_by_kjitd(self):
        self.copy.edit_text("compose.yaml", ', "--insecure-listen"', "")
        self.assert_problem(r"compose.yaml: .*kjitd --check-config refused it \(exit 2\): .*--insecure-listen",
                            kjitd=True)

    def test_service_target_port_unknown(self):
        def edit(doc):
            if doc.get("kind") == "Service":
                doc["spec"]["ports"][0]["targetPort"] = "http"
        self.copy.edit_yaml("kubernetes/compile-deployment.yaml", edit)
        self.assert_problem(r"targetPort 'http' is no port of the kjitd container")

    def test_service_selects_nothing(self):
        def edit(doc):
            if doc.get("kind") == "Service":
                doc["spec"]["selector"]["app.kubernetes.io/component"] = "node-typo"
        self.copy.edit_yaml("kubernetes/compile-deployment.yaml", edit)
        self.assert_problem(r"selector does not select the compile pods")

    def test_no_memory_limit(self):
        def edit(doc):
            if doc.get("kind") == "Deployment":
                del doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"]
        self.copy.edit_yaml("kubernetes/redis.yaml", edit)
        self.assert_problem(r"kjit-redis container redis: no resources.limits.memory")

    def test_request_above_limit(self):
        def edit(doc):
            if doc.get("kind") == "DaemonSet":
                kjitd_container(doc)["resources"]["requests"]["cpu"] = "8"
        self.copy.edit_yaml("kubernetes/daemonset.yaml", edit)
        self.assert_problem(r"requests.cpu 8 is above limits.cpu 4")

    def test_latest_image(self):
        self.copy.edit_text("kubernetes/compile-deployment.yaml", "image: kjit:0.1.0", "image: kjit:latest")
        self.assert_problem(r"image 'kjit:latest' has no tag, or :latest")

    def test_root_container(self):
        def edit(doc):
            if doc.get("kind") == "Deployment":
                doc["spec"]["template"]["spec"]["securityContext"]["runAsUser"] = 0
        self.copy.edit_yaml("kubernetes/compile-deployment.yaml", edit)
        self.assert_problem(r"kjitd does not run as uid 10001")

    def test_redis_address_not_the_service(self):
        self.copy.edit_text("kubernetes/configmap.yaml", "kjit-redis.kjit.svc.cluster.local:6379",
                            "redis.example:6379")
        self.assert_problem(r"cache.redis 'redis.example:6379' is not the kjit-redis Service")

    def test_manifest_not_in_kustomization(self):
        (self.copy.deploy / "kubernetes" / "extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n"
                                                                    "metadata: {name: x, namespace: kjit}\n")
        self.assert_problem(r"extra.yaml: not listed in kustomization.yaml")

    def test_yaml_that_does_not_parse(self):
        self.copy.edit_text("kubernetes/redis.yaml", "  replicas: 1", "  replicas: [1")
        self.assert_problem(r"redis.yaml: YAML does not parse")

    @unittest.skipUnless(HAVE_KJITD, f"no kjitd at {KJITD}")
    def test_configmap_unknown_key_refused_by_kjitd(self):
        self.copy.edit_text("kubernetes/configmap.yaml", '    log_level = "info"', '    log_levle = "info"')
        self.assert_problem(r"configmap.yaml: kjitd.toml with .*kjitd --check-config refused it "
                            r"\(exit 2\): .*unknown key log_levle", kjitd=True)

    @unittest.skipUnless(HAVE_KJITD, f"no kjitd at {KJITD}")
    def test_deployment_flag_refused_by_kjitd(self):
        def edit(doc):
            if doc.get("kind") == "Deployment":
                kjitd_container(doc)["args"] += ["--sandbox", "chroot"]
        self.copy.edit_yaml("kubernetes/compile-deployment.yaml", edit)
        self.assert_problem(r"Deployment kjitd-compiler's flags: kjitd --check-config refused it", kjitd=True)

    def test_compose_without_socket_volume(self):
        self.copy.edit_text("compose.yaml", "      - /run/kjit:/run/kjit\n", "")
        self.assert_problem(r"compose.yaml: kjitd: no host directory bind-mounted at /run/kjit")

    def test_compose_port_beyond_loopback(self):
        self.copy.edit_text("compose.yaml", '"127.0.0.1:7878:7878"', '"7878:7878"')
        self.assert_problem(r"compose.yaml: kjitd publishes 7878:7878 beyond the loopback")

    def test_unit_without_protect_system(self):
        self.copy.edit_text("kjitd.service", "ProtectSystem=strict\n", "")
        self.assert_problem(r"kjitd.service: ProtectSystem= is None")

    def test_unit_with_capabilities(self):
        self.copy.edit_text("kjitd.service", "CapabilityBoundingSet=\n", "CapabilityBoundingSet=CAP_SYS_ADMIN\n")
        self.assert_problem(r"kjitd.service: CapabilityBoundingSet= is not empty")

    def test_unit_denying_what_workers_need(self):
        self.copy.edit_text("kjitd.service", " landlock_restrict_self\n", "\n")
        self.assert_problem(r"SystemCallFilter= does not allow landlock_restrict_self")

    def test_unit_socket_outside_runtime_directory(self):
        self.copy.edit_text("kjitd.service", "--socket /run/kjit/kjitd.sock", "--socket /tmp/kjitd.sock")
        self.assert_problem(r"the socket '/tmp/kjitd.sock' is not in RuntimeDirectory /run/kjit")

    def test_unit_with_netlink(self):
        self.copy.edit_text("kjitd.service", "RestrictAddressFamilies=AF_UNIX", "RestrictAddressFamilies=AF_NETLINK AF_UNIX")
        self.assert_problem(r"RestrictAddressFamilies= is .*AF_NETLINK")

    @unittest.skipUnless(HAVE_SCHEMAS, "kubernetes-validate is not installed")
    def test_field_kubernetes_does_not_know(self):
        def edit(doc):
            if doc.get("kind") == "DaemonSet":
                kjitd_container(doc)["readinessProbe"]["grpcc"] = {"port": 1}
        self.copy.edit_yaml("kubernetes/daemonset.yaml", edit)
        self.assert_problem(r"daemonset.yaml: DaemonSet kjitd-node: Kubernetes 1.27 schema: .*grpcc")

    def test_dockerfile_without_healthcheck(self):
        self.copy.edit_text("Dockerfile", "\nHEALTHCHECK", "\n# HEALTHCHECK")
        self.assert_problem(r"Dockerfile: no HEALTHCHECK running kjit health")

    def test_dockerfile_as_root(self):
        self.copy.edit_text("Dockerfile", "USER kjit", "USER root")
        self.assert_problem(r"Dockerfile: runs as root")


if __name__ == "__main__":
    unittest.main()
