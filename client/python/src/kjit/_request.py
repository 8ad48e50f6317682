"""What the sync and asyncio clients share: addresses, credentials, and
building requests from Python values."""

import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import grpc

from kjit._address import default_address, default_socket_path  # noqa: F401  (re-exported)
from kjit._types import CompileResult
from kjit.v1 import cache_pb2, compiler_pb2, launch_pb2

PathLike = Union[str, "os.PathLike[str]"]
Source = Union[str, bytes, bytearray, memoryview, "os.PathLike[str]"]

# Compiler logs travel in trailing metadata, and cubins can be large.
CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
    ("grpc.max_metadata_size", 64 << 20),
    ("grpc.absolute_max_metadata_size", 64 << 20),
    # A claim's waiter may wait long on a quiet stream: ping the daemon every
    # 20 s while calls are open, so one whose host vanished is noticed within
    # 30 s rather than at the wait's end (kjitd admits pings every 10 s).
    ("grpc.keepalive_time_ms", 20000),
    ("grpc.keepalive_timeout_ms", 10000),
    ("grpc.http2.max_pings_without_data", 0),
    # Older gRPCs space pings 5 min apart without the first; newer ones wait
    # 60 s for a ping's answer without the second.
    ("grpc.http2.min_time_between_pings_ms", 20000),
    ("grpc.http2.ping_timeout_ms", 10000),
]

DEFAULT_TIMEOUT = 600.0


def channel_target(address: PathLike) -> str:
    """The gRPC target for a socket path, a unix: URI, or HOST:PORT."""
    address = os.fspath(address)
    if address.startswith(("unix:", "unix-abstract:", "dns:", "ipv4:", "ipv6:")):
        return address
    if "/" in address or ":" not in address:
        return "unix:" + os.path.abspath(os.path.expanduser(address))
    return address


def channel_credentials(tls_ca) -> Optional[grpc.ChannelCredentials]:
    """None (plaintext) for tls_ca None; else TLS trusting tls_ca: a PEM file's path,
    PEM bytes or text, or True for the system's roots."""
    if tls_ca is None or tls_ca is False:
        return None
    if tls_ca is True:
        return grpc.ssl_channel_credentials()
    if isinstance(tls_ca, (bytes, bytearray)):
        pem = bytes(tls_ca)
    elif isinstance(tls_ca, str) and tls_ca.lstrip().startswith("-----BEGIN"):
        pem = tls_ca.encode()
    else:
        with open(os.fspath(tls_ca), "rb") as f:
            pem = f.read()
    return grpc.ssl_channel_credentials(root_certificates=pem)


def call_metadata(token: Optional[str]) -> Tuple[Tuple[str, str], ...]:
    return (("authorization", "Bearer " + token),) if token else ()


# Input kinds ---------------------------------------------------------------

# Names, aliases and file extensions come from the InputKind descriptor of
# compiler.proto, the same the kjit CLI reads: a kind's canonical name is its
# value name without INPUT_KIND_, lower-case, "-" for "_" ("cuda-source").


def _canonical_kind_name(enum_name: str) -> str:
    return enum_name[len("INPUT_KIND_"):].lower().replace("_", "-")


def _kind_option(value, extension):
    return list(value.GetOptions().Extensions[extension])


def _kind_tables():
    names, extensions = {}, {}
    for value in compiler_pb2.InputKind.DESCRIPTOR.values:
        if value.number == compiler_pb2.INPUT_KIND_UNSPECIFIED:
            continue
        names[_canonical_kind_name(value.name)] = value.number
        for alias in _kind_option(value, compiler_pb2.aliases):
            names[alias.lower().replace("_", "-")] = value.number
        for extension in _kind_option(value, compiler_pb2.file_extensions):
            extensions[extension.lower()] = value.number
    return names, extensions


_KIND_NAMES, _EXTENSIONS = _kind_tables()


def parse_kind(kind) -> int:
    """An InputKind number from "cuda", "ptx", "llvm-ir", "llvm-bitcode", "hip"
    (and their aliases), a file extension (".cu"), an InputKind enum name, or
    an InputKind number."""
    if isinstance(kind, int):
        return kind
    text = str(kind).strip()
    if text.upper().startswith("INPUT_KIND_"):
        return compiler_pb2.InputKind.Value(text.upper())
    number = _KIND_NAMES.get(text.lower().replace("_", "-"), _EXTENSIONS.get(text.lower()))
    if number is None:
        raise ValueError("unknown input kind %r; one of: %s" % (kind, ", ".join(sorted(_KIND_NAMES))))
    return number


_COMMENTS = re.compile(rb"\A(?:\s+|//[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.S)
_LLVM_IR = re.compile(rb"^\s*(?:target\s+(?:triple|datalayout)\s*=|define\s|declare\s|;\s*ModuleID\s*=|source_filename\s*=)",
                      re.M)


# An MLIR module holding Triton functions (TTIR, TTGIR).
_TRITON_IR = re.compile(rb"^\s*tt\.func\b", re.MULTILINE)


def infer_kind(data: bytes) -> int:
    """PTX when the first thing after comments is a .version directive, LLVM
    bitcode by its magic, LLVM IR by its module-level statements, else CUDA C++."""
    if data.startswith(b"BC\xc0\xde") or data.startswith(b"\xde\xc0\x17\x0b"):
        return compiler_pb2.INPUT_KIND_LLVM_BITCODE
    if _TRITON_IR.search(data) and "INPUT_KIND_TRITON" in compiler_pb2.InputKind.keys():
        return compiler_pb2.InputKind.Value("INPUT_KIND_TRITON")
    rest = data[_COMMENTS.match(data).end():]
    if rest.startswith(b".version"):
        return compiler_pb2.INPUT_KIND_PTX
    if _LLVM_IR.search(data) and b"__global__" not in data and b"#include" not in data:
        return compiler_pb2.INPUT_KIND_LLVM_IR
    return compiler_pb2.INPUT_KIND_CUDA_SOURCE


_ARTIFACTS = {
    "cubin": compiler_pb2.ARTIFACT_KIND_CUBIN,
    "ptx": compiler_pb2.ARTIFACT_KIND_PTX,
}
for _name, _spelling in (("FATBIN", "fatbin"), ("HSACO", "hsaco"), ("HIP_BUNDLE", "hip-bundle")):
    if "ARTIFACT_KIND_" + _name in compiler_pb2.ArtifactKind.keys():
        _ARTIFACTS[_spelling] = compiler_pb2.ArtifactKind.Value("ARTIFACT_KIND_" + _name)


def parse_artifact(artifact) -> int:
    if artifact is None:
        return compiler_pb2.ARTIFACT_KIND_UNSPECIFIED
    if isinstance(artifact, int):
        return artifact
    text = str(artifact).strip()
    if text.upper().startswith("ARTIFACT_KIND_"):
        return compiler_pb2.ArtifactKind.Value(text.upper())
    number = _ARTIFACTS.get(text.lower())
    if number is None:
        raise ValueError("unknown artifact kind %r; one of: %s" % (artifact, ", ".join(_ARTIFACTS)))
    return number


def _bytes(value, what: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, os.PathLike):
        with open(os.fspath(value), "rb") as f:
            return f.read()
    raise TypeError("%s must be str, bytes or a path, not %s" % (what, type(value).__name__))


def _strings(value, what: str) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    out = list(value)
    for item in out:
        if not isinstance(item, str):
            raise TypeError("%s must be strings, not %s" % (what, type(item).__name__))
    return out


def _triton_value(option, value) -> str:
    """A Triton option's value as the wire spells it: an integer, true/false,
    none, or text; the daemon checks it against the build's options class."""
    if not isinstance(option, str):
        raise TypeError("Triton option names are str, not %s" % type(option).__name__)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise TypeError("Triton option %r takes an int, a bool or a str, not %s" % (option, type(value).__name__))


@dataclass
class Request:
    """A compile request's arguments, as Client.compile takes them; for
    explain() and plan(), which can compile (or key) a request on their own.

    source: CUDA C++/PTX/LLVM IR text (str or bytes), or a pathlib.Path to
    read (its name labels diagnostics and its extension gives the kind).
    A plain str is always the source text itself, never a path.
    """

    source: Source
    target: Union[str, Sequence[str], None] = None
    kind: Any = None
    headers: Optional[Mapping[str, Any]] = None
    options: Union[str, Sequence[str], None] = None
    name_expressions: Union[str, Sequence[str], None] = None
    pipeline: Optional[str] = None
    artifact: Any = None
    pass_args: Optional[Mapping[str, str]] = None
    name: Optional[str] = None
    allow_ptx_fallback: bool = False
    # Triton IR only: Triton's options by their names, the build to use, and
    # edits to its stages ({"op": "insert-after", "anchor": "ttgir/cse",
    # "pass": "..."}) applied after the daemon's own.
    triton_options: Optional[Mapping[str, Any]] = None
    triton_build: Optional[str] = None
    triton_edits: Optional[Sequence[Mapping[str, Any]]] = None
    # Triton IR only: the build's plugins switched off for this kernel, as
    # `kjit toolkits` names them ("triton-utlx"; "*" for all).
    triton_plugins_off: Union[str, Sequence[str], None] = None

    def to_proto(self) -> compiler_pb2.CompileRequest:
        source, name, kind = self.source, self.name, self.kind
        if isinstance(source, os.PathLike):
            path = os.fspath(source)
            with open(path, "rb") as f:
                data = f.read()
            if name is None:
                name = os.path.basename(path)
            if kind is None:
                kind = _EXTENSIONS.get(os.path.splitext(path)[1].lower())
        else:
            data = _bytes(source, "source")
        request = compiler_pb2.CompileRequest()
        request.input.kind = parse_kind(kind) if kind is not None else infer_kind(data)
        request.input.data = data
        if name:
            request.input.name = name
        if isinstance(self.target, str) or self.target is None:
            if self.target:
                request.target = self.target
        else:
            targets = _strings(self.target, "targets")
            if "targets" in compiler_pb2.CompileRequest.DESCRIPTOR.fields_by_name:
                request.targets.extend(targets)
            elif len(targets) == 1:
                request.target = targets[0]
            else:
                raise ValueError("several targets need CompileRequest.targets, which these stubs predate")
        request.options.extend(_strings(self.options, "options"))
        for header, content in (self.headers or {}).items():
            request.headers[header] = _bytes(content, "header %r" % header)
        request.name_expressions.extend(_strings(self.name_expressions, "name_expressions"))
        request.artifact = parse_artifact(self.artifact)
        if self.pipeline:
            request.pipeline = self.pipeline
        for key, value in (self.pass_args or {}).items():
            request.pass_args[key] = str(value)
        request.allow_ptx_fallback = bool(self.allow_ptx_fallback)
        for option, value in (self.triton_options or {}).items():
            request.triton_options[option] = _triton_value(option, value)
        if self.triton_build:
            request.triton_build = self.triton_build
        for edit in triton_edits(self.triton_edits):
            request.triton_edits.add(**edit)
        request.triton_plugins_off.extend(_strings(self.triton_plugins_off, "triton_plugins_off"))
        return request


_EDIT_FIELDS = ("op", "anchor", "pass", "stage", "passes")


def triton_edits(edits) -> List[Dict[str, Any]]:
    """Edits to Triton's stages as the wire takes them: each a mapping with an
    op ("insert-before", "insert-after", "disable", "replace",
    "override-stage") and the fields it takes, strings (passes: a list of
    them). The daemon checks what they say; this checks their shape."""
    if edits is None:
        return []
    if isinstance(edits, (str, bytes)) or not isinstance(edits, Sequence):
        raise TypeError("triton_edits must be a list of edits (mappings), not %s" % type(edits).__name__)
    checked = []
    for i, edit in enumerate(edits):
        if not isinstance(edit, Mapping):
            raise TypeError("triton_edits[%d] must be a mapping with an op, not %s" % (i, type(edit).__name__))
        unknown = sorted(set(edit) - set(_EDIT_FIELDS))
        if unknown:
            raise ValueError("triton_edits[%d]: unknown field %s; an edit has %s" % (i, unknown[0], ", ".join(_EDIT_FIELDS)))
        out = {}
        for field, value in edit.items():
            if field == "passes":
                out[field] = _strings(value, "triton_edits[%d].passes" % i)
            elif isinstance(value, str):
                out[field] = value
            else:
                raise TypeError("triton_edits[%d].%s must be a string, not %s" % (i, field, type(value).__name__))
        if not out.get("op"):
            raise ValueError("triton_edits[%d] has no op" % i)
        checked.append(out)
    return checked


_KEY = re.compile(r"[0-9a-f]{64}")


def is_key(value) -> bool:
    return isinstance(value, str) and _KEY.fullmatch(value) is not None


def explain_side(side, common: Dict[str, Any]) -> cache_pb2.ExplainSide:
    """A cache key (64 hex digits or a CompileResult), a Request, a dict of
    compile arguments, or a source compiled with the common arguments."""
    out = cache_pb2.ExplainSide()
    if isinstance(side, CompileResult):
        out.key = side.key
    elif is_key(side):
        out.key = side
    elif isinstance(side, Request):
        out.request.CopyFrom(side.to_proto())
    elif isinstance(side, Mapping):
        out.request.CopyFrom(Request(**{**common, **side}).to_proto())
    else:
        out.request.CopyFrom(Request(side, **common).to_proto())
    return out


def explain_request(left, right, common: Dict[str, Any]) -> cache_pb2.ExplainRequest:
    request = cache_pb2.ExplainRequest()
    request.left.CopyFrom(explain_side(left, common))
    request.right.CopyFrom(explain_side(right, common))
    return request


def _dim3(value, what: str, missing: int) -> Tuple[int, int, int]:
    if value is None:
        return (0, 0, 0)
    if isinstance(value, int):
        return (value, missing, missing)
    values = tuple(value)
    if not 1 <= len(values) <= 3:
        raise ValueError("%s takes 1 to 3 dimensions, not %d" % (what, len(values)))
    return values + (missing,) * (3 - len(values))


def launch_config(grid=1, block=1, cluster=None, dynamic_shared_bytes=0, cooperative=False,
                  programmatic_dependent_launch=False, stream_priority=0) -> launch_pb2.LaunchConfig:
    config = launch_pb2.LaunchConfig()
    config.grid.x, config.grid.y, config.grid.z = _dim3(grid, "grid", 1)
    config.block.x, config.block.y, config.block.z = _dim3(block, "block", 1)
    config.cluster.x, config.cluster.y, config.cluster.z = _dim3(cluster, "cluster", 1)
    config.dynamic_shared_bytes = dynamic_shared_bytes
    config.cooperative = cooperative
    config.programmatic_dependent_launch = programmatic_dependent_launch
    config.stream_priority = stream_priority
    return config


def kernel_source(source, kernel: str, common: Dict[str, Any]) -> launch_pb2.KernelSource:
    """The kernel to plan: in a cache key (64 hex digits or a CompileResult), a
    Request, a dict of compile arguments, or a source compiled with the common ones."""
    out = launch_pb2.KernelSource()
    side = explain_side(source, common)
    if side.HasField("key"):
        out.key = side.key
    else:
        out.compile.CopyFrom(side.request)
    out.kernel = kernel
    return out


def plan_request(source, kernel: str, config: Dict[str, Any], common: Dict[str, Any],
                 device_target: Optional[str] = None) -> launch_pb2.PlanLaunchRequest:
    request = launch_pb2.PlanLaunchRequest()
    request.source.CopyFrom(kernel_source(source, kernel, common))
    request.config.CopyFrom(launch_config(**config))
    if device_target:
        if "device_target" not in launch_pb2.PlanLaunchRequest.DESCRIPTOR.fields_by_name:
            raise ValueError("device_target needs PlanLaunchRequest.device_target, which these stubs predate")
        request.device_target = device_target
    return request
