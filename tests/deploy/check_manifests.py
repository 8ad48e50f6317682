#!/usr/bin/env python3
"""Checks kjit's deployment files (deploy/) for the fields that matter.

    tests/deploy/check_manifests.py [--deploy DIR] [--kjitd build/bin/kjitd]

Kubernetes manifests (deploy/kubernetes), the compose file, the systemd unit,
the configuration files and the Dockerfile: images, probes (kjit health),
TLS on the compile Deployment's port from a Secret mounted read-only, the
socket's hostPath, ports that agree between container, Service and --listen,
resource requests and limits, the systemd hardening options, and
that every TOML configuration (the ConfigMap's included) is accepted by
`kjitd --check-config` with the flags each deployment starts kjitd with.
Prints one line per problem and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
KJIT_UID = 10001
SOCKET_DIR = "/run/kjit"
CONFIG_PATH = "/etc/kjit/kjitd.toml"
# The oldest Kubernetes the manifests are for: grpc probes are GA from 1.27.
SCHEMA_VERSION = "1.27"
TLS_FILE_FLAGS = ("--tls-cert", "--tls-key", "--tls-client-ca")
NAMESPACED = {"ConfigMap", "DaemonSet", "Deployment", "Service", "PodDisruptionBudget"}


class Problems(list):
    def add(self, where: str, what: str) -> None:
        self.append(f"{where}: {what}")


# --- helpers


def quantity(text) -> float:
    """A Kubernetes quantity ("500m", "4", "1Gi", "8G") as a number."""
    units = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    match = re.fullmatch(r"([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?", str(text))
    if not match:
        raise ValueError(f"not a quantity: {text!r}")
    return float(match.group(1)) * units.get(match.group(2) or "", 1)


def image_pinned(image: str) -> bool:
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag not in ("", "latest")


def flag_value(args: list[str], flag: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def without_flag(args: list[str], flag: str) -> list[str]:
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == flag:
            skip = True
        elif not arg.startswith(flag + "="):
            out.append(arg)
    return out


def stand_in_tls_pair(directory: Path) -> dict[str, Path]:
    """A throwaway self-signed certificate and its key, with the openssl command."""
    cert, key = directory / "stand-in.crt", directory / "stand-in.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "1", "-subj", "/CN=kjit deploy check stand-in", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return {"cert": cert, "key": key}


def check_config(kjitd: str | None, text: str, args: list[str], where: str, problems: Problems) -> None:
    """`kjitd --check-config` on `text` with the flags a deployment adds."""
    if kjitd is None:
        return
    with tempfile.TemporaryDirectory(prefix="kjit-deploy-") as tmp:
        path = Path(tmp) / "kjitd.toml"
        path.write_text(text)
        # The TLS files are the cluster's (a Secret): stand-ins here, so that
        # the check is of the flags, not of this machine's files. kjitd checks
        # that the certificate parses and the key is its own, so the stand-ins
        # are a self-signed pair made here (the certificate is the client
        # CA's stand-in too).
        args = list(args)
        if any(arg in TLS_FILE_FLAGS for arg in args[:-1]):
            pair = stand_in_tls_pair(Path(tmp))
            for i, arg in enumerate(args[:-1]):
                if arg in TLS_FILE_FLAGS:
                    args[i + 1] = str(pair["key"] if arg == "--tls-key" else pair["cert"])
        command = [kjitd, "--check-config", "--config", str(path), *without_flag(args, "--config")]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if result.returncode != 0 and "cannot confine compile workers" in result.stderr:
            # This machine's kernel lacks Landlock: the configuration is still
            # checked, without the start-up check that is the host's.
            result = subprocess.run(command + ["--compile-workers", "0"], capture_output=True, text=True, timeout=60)
        if result.returncode != 0 or "configuration OK" not in result.stdout:
            message = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
            problems.add(where, f"kjitd --check-config refused it (exit {result.returncode}): {message}")


def load_toml(text: str, where: str, problems: Problems) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        problems.add(where, f"TOML does not parse: {e}")
        return {}


# --- Kubernetes


def load_kubernetes(directory: Path, problems: Problems) -> list[tuple[str, dict]]:
    docs = []
    kustomization = directory / "kustomization.yaml"
    listed: list[str] = []
    if kustomization.exists():
        listed = (yaml.safe_load(kustomization.read_text()) or {}).get("resources", [])
    else:
        problems.add("kubernetes", "no kustomization.yaml")
    for path in sorted(directory.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        if path.name not in listed:
            problems.add(path.name, "not listed in kustomization.yaml's resources")
        try:
            for doc in yaml.safe_load_all(path.read_text()):
                if doc is not None:
                    docs.append((path.name, doc))
        except yaml.YAMLError as e:
            problems.add(path.name, f"YAML does not parse: {e}")
    for name in listed:
        if not (directory / name).exists():
            problems.add("kustomization.yaml", f"lists {name}, which does not exist")
    return docs


def check_schemas(docs: list[tuple[str, dict]], version: str, problems: Problems) -> bool:
    """Each manifest against Kubernetes' own schemas (strict: no unknown
    fields), where the kubernetes-validate package is installed."""
    try:
        import kubernetes_validate
    except ImportError:
        return False
    for file, doc in docs:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except Exception as e:  # the package's ValidationError and its kin
            message = getattr(e, "message", None) or str(e)
            problems.add(file, f"{doc.get('kind')} {(doc.get('metadata') or {}).get('name')}: "
                               f"Kubernetes {version} schema: {message.splitlines()[0]}")
    return True


def containers_of(doc: dict) -> list[tuple[str, dict]]:
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    return [("init", c) for c in spec.get("initContainers", []) or []] + \
           [("main", c) for c in spec.get("containers", []) or []]


def pod_spec(doc: dict) -> dict:
    return doc.get("spec", {}).get("template", {}).get("spec", {}) or {}


def volume_for(doc: dict, container: dict, mount_path: str) -> dict | None:
    for mount in container.get("volumeMounts", []) or []:
        if mount.get("mountPath") == mount_path:
            for volume in pod_spec(doc).get("volumes", []) or []:
                if volume.get("name") == mount.get("name"):
                    return volume
    return None


def mount_for(container: dict, path: str) -> dict | None:
    """The volume mount a file lies under (the deepest one)."""
    best = None
    for mount in container.get("volumeMounts", []) or []:
        root = str(mount.get("mountPath", "")).rstrip("/")
        if path.startswith(root + "/") and (best is None or len(root) > len(best["mountPath"].rstrip("/"))):
            best = mount
    return best


def volume_named(doc: dict, name: str | None) -> dict | None:
    for volume in pod_spec(doc).get("volumes", []) or []:
        if volume.get("name") == name:
            return volume
    return None


def is_kjitd(container: dict) -> bool:
    return container.get("name") == "kjitd"


def check_resources(where: str, container: dict, problems: Problems) -> None:
    resources = container.get("resources") or {}
    for kind in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            if resource not in (resources.get(kind) or {}):
                problems.add(where, f"no resources.{kind}.{resource}")
    try:
        for resource in ("cpu", "memory"):
            request = (resources.get("requests") or {}).get(resource)
            limit = (resources.get("limits") or {}).get(resource)
            if request is not None and limit is not None and quantity(request) > quantity(limit):
                problems.add(where, f"requests.{resource} {request} is above limits.{resource} {limit}")
    except ValueError as e:
        problems.add(where, str(e))


def check_kjitd_container(where: str, doc: dict, container: dict, problems: Problems) -> None:
    args = [str(a) for a in container.get("args", []) or []]
    if flag_value(args, "--config") != CONFIG_PATH:
        problems.add(where, f"kjitd is not started with --config {CONFIG_PATH}")
    config_volume = volume_for(doc, container, "/etc/kjit")
    if not config_volume or "configMap" not in config_volume:
        problems.add(where, "no ConfigMap mounted at /etc/kjit")
    for probe in ("readinessProbe", "livenessProbe"):
        if probe not in container:
            problems.add(where, f"no {probe}")
    security = container.get("securityContext") or {}
    pod_security = pod_spec(doc).get("securityContext") or {}
    if security.get("allowPrivilegeEscalation") is not False:
        problems.add(where, "securityContext.allowPrivilegeEscalation is not false")
    if "ALL" not in ((security.get("capabilities") or {}).get("drop") or []):
        problems.add(where, "securityContext.capabilities does not drop ALL")
    user = security.get("runAsUser", pod_security.get("runAsUser"))
    non_root = security.get("runAsNonRoot", pod_security.get("runAsNonRoot"))
    if user != KJIT_UID or non_root is not True:
        problems.add(where, f"kjitd does not run as uid {KJIT_UID} with runAsNonRoot")
    if security.get("readOnlyRootFilesystem") is True:
        # Workers make their private directories in /tmp, the disk cache
        # writes its directory, kjitd its socket.
        for path in ("/tmp", "/var/cache/kjit", SOCKET_DIR):
            if volume_for(doc, container, path) is None:
                problems.add(where, f"read-only root file system but no volume at {path}")


def check_kubernetes(directory: Path, kjitd: str | None, problems: Problems, facts: dict) -> str | None:
    """Returns the kjit image the manifests use."""
    docs = load_kubernetes(directory, problems)
    facts["schemas"] = check_schemas(docs, SCHEMA_VERSION, problems)
    by_kind: dict[str, list[tuple[str, dict]]] = {}
    for file, doc in docs:
        for key in ("apiVersion", "kind"):
            if key not in doc:
                problems.add(file, f"a document without {key}")
        name = (doc.get("metadata") or {}).get("name")
        if not name:
            problems.add(file, f"a {doc.get('kind')} without metadata.name")
        if doc.get("kind") in NAMESPACED and (doc.get("metadata") or {}).get("namespace") != "kjit":
            problems.add(file, f"{doc.get('kind')} {name} is not in the namespace kjit")
        by_kind.setdefault(doc.get("kind"), []).append((file, doc))

    def one(kind: str, component: str | None = None, name: str | None = None) -> tuple[str, dict] | None:
        for file, doc in by_kind.get(kind, []):
            labels = (doc.get("metadata") or {}).get("labels") or {}
            if component and labels.get("app.kubernetes.io/component") != component:
                continue
            if name and (doc.get("metadata") or {}).get("name") != name:
                continue
            return file, doc
        problems.add("kubernetes", f"no {kind}" + (f" for {component}" if component else "") +
                     (f" named {name}" if name else ""))
        return None

    # Images, resources, kjitd's containers.
    kjit_images = set()
    for kind in ("DaemonSet", "Deployment"):
        for file, doc in by_kind.get(kind, []):
            name = doc["metadata"].get("name")
            template_labels = (doc.get("spec", {}).get("template", {}).get("metadata") or {}).get("labels") or {}
            selector = (doc.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
            if not selector or any(template_labels.get(k) != v for k, v in selector.items()):
                problems.add(file, f"{kind} {name}: selector does not match its pod template's labels")
            for role, container in containers_of(doc):
                where = f"{file}: {kind} {name} container {container.get('name')}"
                image = container.get("image", "")
                if not image_pinned(image):
                    problems.add(where, f"image {image!r} has no tag, or :latest")
                if image.split(":")[0].rsplit("/", 1)[-1] == "kjit":
                    kjit_images.add(image)
                check_resources(where, container, problems)
                if is_kjitd(container):
                    check_kjitd_container(where, doc, container, problems)
    if len(kjit_images) > 1:
        problems.add("kubernetes", f"kjit containers use different images: {sorted(kjit_images)}")

    # The ConfigMap, checked by kjitd itself with each deployment's flags.
    config_text, config, config_file = "", {}, "configmap"
    found = one("ConfigMap", name="kjitd-config")
    if found:
        file, configmap = found
        config_file = file
        config_text = (configmap.get("data") or {}).get("kjitd.toml", "")
        if not config_text:
            problems.add(file, "ConfigMap kjitd-config has no kjitd.toml")
        config = load_toml(config_text, file, problems)
        if config.get("socket") != f"{SOCKET_DIR}/kjitd.sock":
            problems.add(file, f"socket is {config.get('socket')!r}, not {SOCKET_DIR}/kjitd.sock")
    for kind in ("DaemonSet", "Deployment"):
        for file, doc in by_kind.get(kind, []):
            for _, container in containers_of(doc):
                if is_kjitd(container) and config_text:
                    check_config(kjitd, config_text, [str(a) for a in container.get("args", []) or []],
                                 f"{config_file}: kjitd.toml with {kind} {doc['metadata']['name']}'s flags", problems)

    # The node DaemonSet: the socket on the host, health through kjit health.
    found = one("DaemonSet", component="node")
    if found:
        file, daemonset = found
        for _, container in containers_of(daemonset):
            if not is_kjitd(container):
                continue
            where = f"{file}: DaemonSet container kjitd"
            volume = volume_for(daemonset, container, SOCKET_DIR)
            if not volume or (volume.get("hostPath") or {}).get("path") != SOCKET_DIR:
                problems.add(where, f"{SOCKET_DIR} is not the host's {SOCKET_DIR} (hostPath)")
            elif (volume["hostPath"].get("type") or "") not in ("Directory", "DirectoryOrCreate"):
                problems.add(where, "the socket's hostPath is not of type Directory or DirectoryOrCreate")
            for probe in ("readinessProbe", "livenessProbe"):
                command = ((container.get(probe) or {}).get("exec") or {}).get("command") or []
                if not command or not command[0].endswith("kjit") or "health" not in command:
                    problems.add(where, f"{probe} is not exec kjit health")
            if container.get("ports") or flag_value([str(a) for a in container.get("args", [])], "--listen"):
                problems.add(where, "the node daemon listens on TCP; it should serve on its socket only")
        init_owns = any("chown" in " ".join(c.get("command", []) or []) and str(KJIT_UID) in
                        " ".join(c.get("command", []) or []) for role, c in containers_of(daemonset) if role == "init")
        if not init_owns:
            problems.add(file, f"no init container hands the hostPath directories to uid {KJIT_UID}")

    # The compile Deployment: a TCP port with TLS from a Secret mounted
    # read-only, probes over the pod's socket (Kubernetes' grpc probes cannot
    # speak TLS), a Service to the port.
    found = one("Deployment", component="compiler")
    if found:
        file, deployment = found
        for _, container in containers_of(deployment):
            if not is_kjitd(container):
                continue
            where = f"{file}: Deployment container kjitd"
            listen = flag_value([str(a) for a in container.get("args", [])], "--listen")
            port = int(listen.rsplit(":", 1)[1]) if listen and ":" in listen else None
            if port is None:
                problems.add(where, "no --listen HOST:PORT")
            ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", []) or []}
            if port is not None and port not in ports.values():
                problems.add(where, f"--listen port {port} is not a containerPort ({sorted(ports.values())})")
            args = [str(a) for a in container.get("args", [])]
            if "--insecure-listen" in args or any(a.startswith("--insecure-listen=") for a in args):
                problems.add(where, "the TCP port is plaintext (--insecure-listen); give it --tls-cert and --tls-key")
            tls_files = [flag_value(args, flag) for flag in TLS_FILE_FLAGS if flag_value(args, flag)]
            if not flag_value(args, "--tls-cert") or not flag_value(args, "--tls-key"):
                problems.add(where, "no --tls-cert and --tls-key for the TCP port")
            for tls_file in tls_files:
                mount = mount_for(container, tls_file)
                volume = volume_named(deployment, mount.get("name")) if mount else None
                if not volume or "secret" not in volume:
                    problems.add(where, f"{tls_file} is not in a mounted Secret")
                elif not mount.get("readOnly"):
                    problems.add(where, f"the Secret holding {tls_file} is not mounted readOnly")
            for probe in ("readinessProbe", "livenessProbe"):
                spec = container.get(probe) or {}
                command = (spec.get("exec") or {}).get("command") or []
                if spec.get("grpc"):
                    problems.add(where, f"{probe} is a grpc probe, which cannot speak TLS to port {port}; "
                                        "use exec kjit health over the socket")
                elif not command or not command[0].endswith("kjit") or "health" not in command:
                    problems.add(where, f"{probe} is not exec kjit health")
            template_labels = (deployment["spec"]["template"].get("metadata") or {}).get("labels") or {}
            service = one("Service", component="compiler")
            if service:
                sfile, svc = service
                selector = svc.get("spec", {}).get("selector") or {}
                if not selector or any(template_labels.get(k) != v for k, v in selector.items()):
                    problems.add(sfile, "Service kjit-compiler's selector does not select the compile pods")
                for sport in svc.get("spec", {}).get("ports", []) or []:
                    target = sport.get("targetPort", sport.get("port"))
                    if target not in ports and target not in ports.values():
                        problems.add(sfile, f"targetPort {target!r} is no port of the kjitd container")

    # Redis: a Deployment, a Service, and the ConfigMap pointing at it.
    redis_deploy = one("Deployment", name="kjit-redis")
    redis_service = one("Service", name="kjit-redis")
    if redis_deploy and redis_service:
        file, doc = redis_deploy
        container = (pod_spec(doc).get("containers") or [{}])[0]
        for probe in ("readinessProbe", "livenessProbe"):
            if probe not in container:
                problems.add(f"{file}: kjit-redis", f"no {probe}")
        container_ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", []) or []}
        service_ports = redis_service[1].get("spec", {}).get("ports", []) or []
        for sport in service_ports:
            target = sport.get("targetPort", sport.get("port"))
            if target not in container_ports and target not in container_ports.values():
                problems.add(redis_service[0], f"kjit-redis targetPort {target!r} is no port of the Redis container")
        template_labels = (doc["spec"]["template"].get("metadata") or {}).get("labels") or {}
        selector = redis_service[1].get("spec", {}).get("selector") or {}
        if not selector or any(template_labels.get(k) != v for k, v in selector.items()):
            problems.add(redis_service[0], "Service kjit-redis's selector does not select the Redis pod")
        redis = (config.get("cache") or {}).get("redis", "")
        host, _, port = redis.rpartition(":")
        service_names = {"kjit-redis", "kjit-redis.kjit", "kjit-redis.kjit.svc", "kjit-redis.kjit.svc.cluster.local"}
        if host not in service_names or port not in {str(p.get("port")) for p in service_ports}:
            problems.add("configmap", f"cache.redis {redis!r} is not the kjit-redis Service's address and port")

    # The Deployment's disk cache fits its volume.
    found = one("Deployment", component="compiler")
    if found and config:
        file, deployment = found
        for _, container in containers_of(deployment):
            if is_kjitd(container):
                volume = volume_for(deployment, container, (config.get("cache") or {}).get("directory", ""))
                disk = (config.get("cache") or {}).get("disk_bytes")
                limit = ((volume or {}).get("emptyDir") or {}).get("sizeLimit")
                if volume is None:
                    problems.add(file, "no volume at the ConfigMap's cache.directory")
                elif disk and limit and quantity(limit) < disk:
                    problems.add(file, f"the cache volume's sizeLimit {limit} is below cache.disk_bytes {disk}")
    return next(iter(kjit_images), None)


# --- compose


def check_compose(path: Path, image: str | None, kjitd: str | None, container_config: str, problems: Problems) -> None:
    where = path.name
    try:
        compose = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        problems.add(where, f"YAML does not parse: {e}")
        return
    services = compose.get("services") or {}
    kjitd_service, redis_service = services.get("kjitd"), services.get("redis")
    if not kjitd_service or not redis_service:
        problems.add(where, "needs the services kjitd and redis")
        return
    if image and kjitd_service.get("image") != image:
        problems.add(where, f"kjitd's image {kjitd_service.get('image')!r} is not the manifests' {image!r}")
    for name, service in services.items():
        if not image_pinned(service.get("image", "")):
            problems.add(where, f"service {name}: image {service.get('image')!r} has no tag, or :latest")
        if not ((service.get("deploy") or {}).get("resources") or {}).get("limits"):
            problems.add(where, f"service {name}: no deploy.resources.limits")
    build = kjitd_service.get("build") or {}
    context = (path.parent / build.get("context", ".")).resolve()
    if not (context / build.get("dockerfile", "Dockerfile")).exists() or build.get("target") != "runtime":
        problems.add(where, "kjitd's build is not the repository's Dockerfile, target runtime")
    volumes = [str(v) for v in kjitd_service.get("volumes", []) or []]
    if not any(v.split(":")[1:2] == [SOCKET_DIR] and v.startswith("/") for v in volumes):
        problems.add(where, f"kjitd: no host directory bind-mounted at {SOCKET_DIR}")
    command = [str(a) for a in kjitd_service.get("command", []) or []]
    redis = flag_value(command, "--redis") or ""
    if redis.rpartition(":")[0] != "redis":
        problems.add(where, f"kjitd's --redis {redis!r} is not the redis service")
    if "redis" not in (kjitd_service.get("depends_on") or {}):
        problems.add(where, "kjitd does not depend on redis")
    if not redis_service.get("healthcheck"):
        problems.add(where, "redis has no healthcheck")
    for port in kjitd_service.get("ports", []) or []:
        if not str(port).startswith("127.0.0.1:"):
            problems.add(where, f"kjitd publishes {port} beyond the loopback (plaintext gRPC)")
    if flag_value(command, "--config") != CONFIG_PATH:
        problems.add(where, f"kjitd is not started with --config {CONFIG_PATH}")
    check_config(kjitd, container_config, command, f"{where}: the image's configuration with its flags", problems)


# --- systemd


def unit_settings(text: str) -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        settings.setdefault(f"{section}.{key.strip()}", []).append(value.strip())
    return settings


def check_systemd(path: Path, config_text: str, kjitd: str | None, problems: Problems) -> None:
    where = path.name
    s = unit_settings(path.read_text())

    def last(key: str) -> str | None:
        values = s.get(f"Service.{key}")
        return values[-1] if values else None

    yes = {"yes", "true", "1", "on"}
    required = {
        "ProtectSystem": {"strict"}, "ProtectHome": yes | {"read-only", "tmpfs"}, "PrivateTmp": yes,
        "NoNewPrivileges": yes, "SystemCallArchitectures": {"native"}, "ProtectKernelTunables": yes,
        "ProtectKernelModules": yes, "ProtectControlGroups": yes, "RestrictSUIDSGID": yes,
        "LockPersonality": yes, "RestrictNamespaces": yes, "RestrictRealtime": yes,
    }
    for key, allowed in required.items():
        if last(key) not in allowed:
            problems.add(where, f"{key}= is {last(key)!r}, not one of {sorted(allowed)}")
    if last("CapabilityBoundingSet") != "":
        problems.add(where, "CapabilityBoundingSet= is not empty (kjitd needs no capability)")
    if last("User") in (None, "", "root", "0"):
        problems.add(where, "no unprivileged User=")
    families = set(" ".join(s.get("Service.RestrictAddressFamilies", [])).split())
    if not families or "AF_UNIX" not in families or families - {"AF_UNIX", "AF_INET", "AF_INET6"}:
        problems.add(where, f"RestrictAddressFamilies= is {sorted(families)}, not AF_UNIX (+ AF_INET, AF_INET6)")
    # Workers are kjitd again (fork + execve) and confine themselves.
    filters = " ".join(s.get("Service.SystemCallFilter", []))
    allowed_calls = " ".join(v for v in s.get("Service.SystemCallFilter", []) if not v.startswith("~"))
    denied = " ".join(v[1:] for v in s.get("Service.SystemCallFilter", []) if v.startswith("~"))
    if filters:
        for call in ("seccomp", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"):
            if allowed_calls and call not in allowed_calls.split() and "@known" not in allowed_calls:
                problems.add(where, f"SystemCallFilter= does not allow {call}, which compile workers need")
        for group in ("@process", "execve", "@resources", "setrlimit"):
            if group in denied.split():
                problems.add(where, f"SystemCallFilter= denies {group}, which kjitd's workers need")
    runtime_dir = last("RuntimeDirectory")
    cache_dir = last("CacheDirectory")
    if not runtime_dir:
        problems.add(where, "no RuntimeDirectory= for the socket")
    if not cache_dir:
        problems.add(where, "no CacheDirectory= for the disk cache")
    exec_start = (last("ExecStart") or "").split()
    if not exec_start or not exec_start[0].endswith("/kjitd"):
        problems.add(where, "ExecStart= does not run kjitd")
    else:
        socket = flag_value(exec_start, "--socket") or load_toml(config_text, where, problems).get("socket", "")
        if runtime_dir and not socket.startswith(f"/run/{runtime_dir}/"):
            problems.add(where, f"the socket {socket!r} is not in RuntimeDirectory /run/{runtime_dir}")
        cache = flag_value(exec_start, "--cache-dir") or \
            (load_toml(config_text, where, problems).get("cache") or {}).get("directory", "")
        if cache_dir and cache != f"/var/cache/{cache_dir}":
            problems.add(where, f"the disk cache {cache!r} is not CacheDirectory /var/cache/{cache_dir}")
        config = flag_value(exec_start, "--config")
        if config != CONFIG_PATH:
            problems.add(where, f"ExecStart= does not read {CONFIG_PATH}")
        check_config(kjitd, config_text, [a for a in exec_start[1:] if a != "--check-config"],
                     f"{where}: deploy/kjitd.toml with ExecStart's flags", problems)
    if "Install.WantedBy" not in s:
        problems.add(where, "no [Install] WantedBy=")


def systemd_analyze(path: Path, problems: Problems, max_exposure: float) -> str | None:
    """systemd-analyze verify and security, where installed; the score."""
    tool = shutil.which("systemd-analyze")
    if not tool:
        return None
    with tempfile.TemporaryDirectory(prefix="kjit-unit-") as tmp:
        # verify wants the commands to exist: the same unit running /bin/true.
        copy = Path(tmp) / path.name
        copy.write_text(re.sub(r"/usr/local/bin/kjitd\b", "/bin/true", path.read_text()))
        verify = subprocess.run([tool, "verify", str(copy)], capture_output=True, text=True, timeout=60)
        if verify.returncode != 0:
            problems.add(path.name, f"systemd-analyze verify: {verify.stderr.strip()}")
    security = subprocess.run([tool, "security", "--offline=yes", "--no-pager", str(path)],
                              capture_output=True, text=True, timeout=60)
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", security.stdout + security.stderr)
    if not match:
        return None  # an older systemd without --offline
    score = float(match.group(1))
    if score > max_exposure:
        problems.add(path.name, f"systemd-analyze security: exposure {score} is above {max_exposure}")
    return match.group(1)


# --- Dockerfile


def check_dockerfile(path: Path, problems: Problems) -> None:
    where = path.name
    text = path.read_text()
    stages = re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", text, re.M | re.I)
    for stage in ("runtime", "runtime-prebuilt", "build"):
        if stage not in stages:
            problems.add(where, f"no stage {stage}")
    if stages and stages[-1] != "runtime":
        problems.add(where, "the last stage (the default target) is not runtime")
    if not re.search(r"^HEALTHCHECK\b.*kjit\S*\W+health", text, re.M):
        problems.add(where, "no HEALTHCHECK running kjit health")
    if not re.search(rf"^VOLUME\s+\[?\"?{SOCKET_DIR}\b", text, re.M):
        problems.add(where, f"no VOLUME {SOCKET_DIR}")
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    if not users or users[-1] in ("root", "0"):
        problems.add(where, "runs as root (no USER)")
    if "deploy/container/kjitd.toml" not in text:
        problems.add(where, "does not install deploy/container/kjitd.toml")
    if not re.search(r"/run/kjit/kjitd\.sock", text):
        problems.add(where, "does not name the socket /run/kjit/kjitd.sock")


# --- all


def check_all(deploy: Path, dockerfile: Path | None, kjitd: str | None, max_exposure: float = 2.0) -> tuple[Problems, dict]:
    problems = Problems()
    facts: dict = {}
    container_config = (deploy / "container" / "kjitd.toml").read_text()
    check_config(kjitd, container_config, [], "container/kjitd.toml", problems)
    host_config = (deploy / "kjitd.toml").read_text()
    image = check_kubernetes(deploy / "kubernetes", kjitd, problems, facts)
    check_compose(deploy / "compose.yaml", image, kjitd, container_config, problems)
    check_systemd(deploy / "kjitd.service", host_config, kjitd, problems)
    facts["systemd exposure"] = systemd_analyze(deploy / "kjitd.service", problems, max_exposure)
    if dockerfile is not None:
        check_dockerfile(dockerfile, problems)
    return problems, facts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deploy", type=Path, default=REPO / "deploy")
    parser.add_argument("--dockerfile", type=Path, default=REPO / "Dockerfile")
    parser.add_argument("--kjitd", default=os.environ.get("KJITD", str(REPO / "build/bin/kjitd")),
                        help="kjitd for --check-config (default: build/bin/kjitd)")
    parser.add_argument("--no-kjitd", action="store_true", help="skip the kjitd --check-config checks")
    parser.add_argument("--max-exposure", type=float, default=2.0,
                        help="highest acceptable systemd-analyze security exposure")
    options = parser.parse_args()
    kjitd = None if options.no_kjitd else options.kjitd
    if kjitd is not None and not os.access(kjitd, os.X_OK):
        print(f"check_manifests: {kjitd} is not there (make build, or --no-kjitd)", file=sys.stderr)
        return 2
    problems, facts = check_all(options.deploy, options.dockerfile, kjitd, options.max_exposure)
    for problem in problems:
        print(f"check_manifests: {problem}")
    if facts.get("systemd exposure"):
        print(f"check_manifests: systemd-analyze security exposure of kjitd.service: {facts['systemd exposure']}")
    if problems:
        print(f"check_manifests: {len(problems)} problem(s)")
        return 1
    if not facts.get("schemas"):
        print("check_manifests: kubernetes-validate is not installed: the manifests were not checked against "
              f"Kubernetes {SCHEMA_VERSION}'s schemas (pip install kubernetes-validate)")
    print("check_manifests: deploy/ OK" + ("" if kjitd else " (without kjitd --check-config)") +
          (f" (and Kubernetes {SCHEMA_VERSION}'s schemas)" if facts.get("schemas") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
