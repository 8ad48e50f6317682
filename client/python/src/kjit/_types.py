"""Typed results: plain dataclasses read from the kjit.v1 messages.

Each result class names the message it is read from (`_proto`), and each of
its fields reads the message's field of the same name (or the one named in
the field's metadata). A field the message lacks (an older proto) keeps its
default, so results read alike from older and newer daemons.
"""

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Iterator, List, Optional


def convert(cls, message):
    """An instance of the dataclass cls read from the proto message."""
    if message is None:
        return cls()
    by_name = message.DESCRIPTOR.fields_by_name
    values = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        proto_name = f.metadata.get("proto", f.name)
        descriptor = by_name.get(proto_name)
        if descriptor is None:
            continue
        raw = getattr(message, proto_name)
        if "enum" in f.metadata:
            values[f.name] = _enum_name(descriptor, raw, *f.metadata["enum"])
        elif "conv" in f.metadata:
            values[f.name] = f.metadata["conv"](raw)
        else:
            values[f.name] = raw
    return cls(**values)


def _json_object(text: str) -> Dict[str, Any]:
    return json.loads(text) if text else {}


def _enum_name(descriptor, number, prefix, unspecified):
    value = descriptor.enum_type.values_by_number.get(number)
    if value is None:
        return str(number)
    name = value.name[len(prefix):] if value.name.startswith(prefix) else value.name
    if name == "UNSPECIFIED":
        return unspecified
    return name.lower().replace("_", "-")


def _message(cls):
    return field(default_factory=cls, metadata={"conv": lambda m: convert(cls, m)})


def _messages(cls):
    return field(default_factory=list, metadata={"conv": lambda seq: [convert(cls, m) for m in seq]})


def _strings():
    return field(default_factory=list, metadata={"conv": list})


def _map():
    return field(default_factory=dict, metadata={"conv": dict})


def _enum(prefix, unspecified):
    return field(default=unspecified, metadata={"enum": (prefix, unspecified)})


@dataclass(frozen=True)
class Dim3:
    x: int = 0
    y: int = 0
    z: int = 0
    _proto: ClassVar[str] = "kjit.v1.Dim3"

    def __iter__(self) -> Iterator[int]:
        return iter((self.x, self.y, self.z))


@dataclass
class KernelInfo:
    """What a kernel needs at launch, read from the compiled binary. Zero: not constrained."""

    name: str = ""            # source-level name: "vector_add", "scale<float>"
    lowered_name: str = ""    # the symbol in the binary
    registers: int = 0
    static_shared_bytes: int = 0
    shared_section_bytes: int = 0
    local_bytes: int = 0
    max_threads_per_block: int = 0
    required_threads: Dim3 = _message(Dim3)
    cluster_dims: Dim3 = _message(Dim3)
    max_registers: int = 0
    param_bytes: int = 0
    max_cluster_rank: int = 0
    scalar_registers: int = 0  # AMD code objects: SGPRs (registers holds the VGPRs)
    wavefront_size: int = 0    # AMD code objects: 32 or 64
    _proto: ClassVar[str] = "kjit.v1.KernelInfo"


@dataclass
class PassTiming:
    name: str = field(default="", metadata={"proto": "pass"})
    ms: float = 0.0
    _proto: ClassVar[str] = "kjit.v1.PassTiming"


@dataclass
class StageTiming:
    stage: str = ""
    ms: float = 0.0
    passes: List[PassTiming] = _messages(PassTiming)
    _proto: ClassVar[str] = "kjit.v1.StageTiming"


@dataclass
class KeyComponent:
    name: str = ""
    value: str = ""
    _proto: ClassVar[str] = "kjit.v1.KeyComponent"


@dataclass
class FatbinEntry:
    """One part of a fatbin: a cubin for one target, or PTX."""

    target: str = ""
    kind: str = _enum("ARTIFACT_KIND_", "cubin")  # "cubin" or "ptx"
    size: int = 0
    cache: str = ""
    key: str = ""
    toolkit: str = ""
    kernels: List[KernelInfo] = _messages(KernelInfo)
    notes: List[str] = _strings()
    _proto: ClassVar[str] = "kjit.v1.FatbinEntry"


CACHE_HITS = ("memory", "disk", "redis")


@dataclass
class CompileResult:
    artifact: bytes = field(default=b"", metadata={"conv": bytes})
    artifact_kind: str = _enum("ARTIFACT_KIND_", "cubin")  # "cubin", "ptx", "fatbin", "hsaco", "hip-bundle"
    target: str = ""            # canonical form of the request's target
    kernels: List[KernelInfo] = _messages(KernelInfo)
    lowered_names: Dict[str, str] = _map()  # name expression -> lowered name
    key: str = ""               # cache key, hex SHA-256
    key_components: List[KeyComponent] = _messages(KeyComponent)
    # Who answered: "memory", "disk", "redis" (a cache tier), "compiled" or
    # "joined" (waited for an identical request's compile).
    cache: str = ""
    log: str = ""
    notes: List[str] = _strings()
    pipeline: str = ""
    server_ms: float = 0.0
    timings: List[StageTiming] = _messages(StageTiming)
    toolkit: str = ""
    entries: List[FatbinEntry] = _messages(FatbinEntry)  # a fatbin's parts, in order
    request_id: str = ""        # the daemon's id for this request, as in its log lines
    # Triton IR: the kernel's metadata as Triton writes it, and the build.
    triton_metadata: Dict[str, Any] = field(default_factory=dict, metadata={"conv": _json_object})
    triton_build: str = ""
    # Triton's intermediate files by extension ("ttgir", "llir", "ptx", ...).
    triton_files: Dict[str, str] = field(
        default_factory=dict, metadata={"conv": lambda files: {k: bytes(v).decode("utf-8", "replace") for k, v in files.items()}})
    _proto: ClassVar[str] = "kjit.v1.CompileResponse"

    @property
    def cache_hit(self) -> bool:
        return self.cache in CACHE_HITS

    def kernel(self, name: str) -> KernelInfo:
        """The kernel with this source-level or lowered name; KeyError when none."""
        for k in self.kernels:
            if name in (k.name, k.lowered_name):
                return k
        raise KeyError(name)

    def __repr__(self) -> str:
        return "CompileResult(target=%r, artifact_kind=%r, artifact=<%d bytes>, kernels=%r, cache=%r, key=%r)" % (
            self.target, self.artifact_kind, len(self.artifact), [k.name for k in self.kernels], self.cache, self.key)


@dataclass
class PipelineDescription:
    name: str = ""
    toml: str = ""
    known_pipelines: List[str] = _strings()
    active_plugins: List[str] = _strings()
    _proto: ClassVar[str] = "kjit.v1.DescribePipelineResponse"


@dataclass
class TritonPluginLibrary:
    path: str = ""
    sha256: str = ""
    _proto: ClassVar[str] = "kjit.v1.TritonPluginLibrary"


@dataclass
class TritonPlugin:
    """A plugin package installed in a build's environment (uTLX), or a
    library the daemon's configuration gives the build (no distribution)."""
    distribution: str = ""  # "triton-utlx"
    version: str = ""
    libraries: List[TritonPluginLibrary] = _messages(TritonPluginLibrary)
    stages_hook_sha256: str = ""
    environment: Dict[str, str] = _map()  # the variables the configuration gives it
    _proto: ClassVar[str] = "kjit.v1.TritonPlugin"


@dataclass
class TritonBorrowedPtxas:
    """Another build's newer ptxas-blackwell, which a build's compiles for
    cuda_archs run (its own does not know them)."""
    path: str = ""
    version: str = ""
    sha256: str = ""
    from_build: str = ""
    cuda_archs: List[int] = _strings()
    _proto: ClassVar[str] = "kjit.v1.TritonBorrowedPtxas"


@dataclass
class TritonBuild:
    """A Triton build the daemon found (kjit.Client.triton_builds)."""
    name: str = ""          # "triton-3.9.0": distribution and version
    version: str = ""
    distribution: str = ""  # "triton", "fbtriton"
    python: str = ""
    backends: List[str] = _strings()
    cuda_archs: List[int] = _strings()
    hip_archs: List[str] = _strings()
    plugins: List[str] = _strings()
    ptxas: List[str] = _strings()
    libtriton_sha256: str = ""
    tlx: bool = False
    is_default: bool = False
    options: List[str] = _strings()  # "cuda.num_warps: int", the options a request may set
    error: str = ""
    # "cuda", "hip" -> the SHA-256 of what the daemon changes in Triton's stages
    # (its edits and plugins); absent when nothing.
    stages_digest: Dict[str, str] = _map()
    installed_plugins: List[TritonPlugin] = _messages(TritonPlugin)
    tlx_provider: str = ""  # who brings its TLX: its own distribution, or a plugin package's
    plugin_loader: str = ""  # "extend_with", "TRITON_PLUGIN_PATHS", or "" (loads none)
    configured_plugins: List[TritonPlugin] = _messages(TritonPlugin)
    borrowed_ptxas: TritonBorrowedPtxas = _message(TritonBorrowedPtxas)
    _proto: ClassVar[str] = "kjit.v1.TritonBuild"


@dataclass
class FunctionAttribute:
    name: str = ""  # cuda.h spelling
    id: int = 0
    value: int = 0
    _proto: ClassVar[str] = "kjit.v1.FunctionAttribute"


@dataclass
class LaunchAttribute:
    name: str = ""
    id: int = 0
    values: List[int] = field(default_factory=list, metadata={"conv": list})
    _proto: ClassVar[str] = "kjit.v1.LaunchAttribute"


@dataclass
class LaunchPlan:
    kernel: str = ""  # lowered name
    target: str = ""
    grid: Dim3 = _message(Dim3)
    block: Dim3 = _message(Dim3)
    dynamic_shared_bytes: int = 0
    static_shared_bytes: int = 0
    function_attributes: List[FunctionAttribute] = _messages(FunctionAttribute)
    launch_attributes: List[LaunchAttribute] = _messages(LaunchAttribute)
    oversized_shared_memory: bool = False
    rests_on_ptx: bool = False
    notes: List[str] = _strings()
    description: str = ""  # the plan as a person reads it
    limits_from_device: bool = False
    _proto: ClassVar[str] = "kjit.v1.LaunchPlan"


@dataclass
class PlanResult:
    plan: LaunchPlan = _message(LaunchPlan)
    kernel: KernelInfo = _message(KernelInfo)
    key: str = ""
    _proto: ClassVar[str] = "kjit.v1.PlanLaunchResponse"


@dataclass
class TierStats:
    tier: str = ""  # "memory", "disk", "redis"
    hits: int = 0
    misses: int = 0
    puts: int = 0
    bytes: int = 0
    entries: int = 0
    evictions: int = 0
    corruptions: int = 0
    errors: int = 0
    skipped: int = 0
    answered: int = 0
    _proto: ClassVar[str] = "kjit.v1.TierStats"


@dataclass
class BlobStats:
    """Client blobs (put_blob, get_blob, ...), counted apart from compiles."""
    puts: int = 0
    put_bytes: int = 0
    gets: int = 0  # blobs asked for, one per name; a group counts its members
    hits: int = 0
    misses: int = 0
    groups_put: int = 0
    group_gets: int = 0
    group_hits: int = 0  # every member found
    put_conflicts: int = 0  # puts that found other bytes stored under their identity: the first stays
    claims: int = 0            # claims on groups granted: the caller compiles
    claim_hits: int = 0        # claim calls answered with the group
    claim_waits: int = 0       # claim calls that waited while another caller held the claim
    claim_wait_ms: int = 0     # the time those waits took, together
    claim_timeouts: int = 0    # claim calls that waited their whole bound
    claims_abandoned: int = 0  # claims that ended without their group: failed, released, holder gone
    claims_refused: int = 0    # claim calls over a bound on waiters or claims
    _proto: ClassVar[str] = "kjit.v1.BlobStats"


@dataclass
class NamespaceStats:
    """One cache namespace's compile lookups, what it holds in the memory and
    disk tiers, and its share of each (max_bytes, 0: none)."""
    namespace: str = ""  # "": the default namespace (the operator's)
    lookups: int = 0
    misses: int = 0
    compiles: int = 0
    joined: int = 0
    compile_ms_saved: float = 0.0
    memory_hits: int = 0
    disk_hits: int = 0
    redis_hits: int = 0
    reapi_hits: int = 0
    memory_bytes: int = 0
    memory_entries: int = 0
    memory_evictions: int = 0
    disk_bytes: int = 0
    disk_entries: int = 0
    disk_evictions: int = 0
    max_bytes: int = 0
    _proto: ClassVar[str] = "kjit.v1.NamespaceStats"


@dataclass
class PchStats:
    """The compile workers' precompiled headers (the operator's answer only)."""
    hits: int = 0       # compiles that used a PCH
    creations: int = 0  # PCH files written
    fallbacks: int = 0  # compiles that did without a PCH they wanted
    evictions: int = 0  # PCH files removed to keep within pch_bytes
    firsts: int = 0     # compiles of a header set new to their worker (which write its PCH)
    bytes: int = 0      # the PCH files the live workers keep now
    _proto: ClassVar[str] = "kjit.v1.PchStats"


@dataclass
class CacheStats:
    tiers: List[TierStats] = _messages(TierStats)
    lookups: int = 0
    misses: int = 0
    compiles: int = 0
    joined: int = 0
    fleet_waits: int = 0
    lease_timeouts: int = 0
    compile_ms_saved: float = 0.0
    blobs: BlobStats = _message(BlobStats)
    # The operator: every namespace; anyone else its own alone, and the
    # figures above are then that namespace's (namespace_only).
    namespaces: List[NamespaceStats] = _messages(NamespaceStats)
    namespace_only: bool = False
    pch: PchStats = _message(PchStats)
    _proto: ClassVar[str] = "kjit.v1.StatsResponse"

    def tier(self, name: str) -> Optional[TierStats]:
        """The named tier's counters, None when the daemon runs without it."""
        for t in self.tiers:
            if t.tier == name:
                return t
        return None


@dataclass
class BlobGroup:
    """A group of blobs (get_blob_group): found says whether the group itself
    exists; members maps each member found to its bytes; missing names the
    members the cache no longer holds. The client has already fetched any
    member the daemon deferred (an answer over its size limit)."""
    found: bool = False
    members: Dict[str, bytes] = field(default_factory=dict, metadata={
        "conv": lambda seq: {m.name: bytes(m.data) for m in seq}})
    missing: List[str] = _strings()
    deferred: List[str] = _strings()
    _proto: ClassVar[str] = "kjit.v1.GetBlobGroupResponse"

    @property
    def complete(self) -> bool:
        """The group exists and every member was found."""
        return self.found and not self.missing and not self.deferred


@dataclass
class BlobClaim:
    """claim_blob_group's answer. outcome is "hit" (group: another caller
    compiled it), "claimed" (compile, then put the members and the group,
    which ends the claim), or "timed-out" (another caller held the claim for
    the whole wait: compile without one).

    A claim is held while the call that took it stays open: cancel() (or
    leaving a `with` block, or dropping this object) gives it up at once, so
    the next waiter compiles; release_blob_claim(claim_id, failed=True) does
    the same by id. A daemon that dies holding it keeps others out for at
    most lease_ms. fleet: held across the daemons sharing a Redis tier."""
    outcome: str = "timed-out"
    group: Optional[BlobGroup] = None
    claim_id: str = ""
    lease_ms: int = 0
    fleet: bool = False
    _call: object = field(default=None, repr=False, compare=False)
    _proto: ClassVar[str] = "kjit.v1.BlobClaim"  # the fields of the answer `claimed`

    @property
    def held(self) -> bool:
        """Claimed and not given up here (a put of the group ends the claim
        in the daemon, whatever this says)."""
        return self.outcome == "claimed" and self._call is not None

    def cancel(self) -> None:
        """Ends the call that holds the claim (nothing for a hit or a timeout):
        the claim goes to the next waiter. No round trip; safe from any thread."""
        call, self._call = self._call, None
        if call is not None:
            call.cancel()

    def __enter__(self) -> "BlobClaim":
        return self

    def __exit__(self, *exc) -> None:
        self.cancel()


class StoredBlob(str):
    """put_blob's answer: the cache key the blob lives under, as cache_list
    shows it (a str). Without replace, the first writer of an identity wins:
    already_stored says this put found the identity stored and changed
    nothing, conflict that the stored bytes differ from this put's, which
    were dropped. With replace, replaced says this put's bytes took the place
    of other stored ones."""
    already_stored: bool
    conflict: bool
    replaced: bool

    def __new__(cls, cache_key: str = "", already_stored: bool = False, conflict: bool = False,
                replaced: bool = False):
        stored = super().__new__(cls, cache_key)
        stored.already_stored = already_stored
        stored.conflict = conflict
        stored.replaced = replaced
        return stored

    def __repr__(self):
        return "StoredBlob(%s, already_stored=%r, conflict=%r, replaced=%r)" % (
            str.__repr__(self), self.already_stored, self.conflict, self.replaced)


@dataclass
class StoredGroup:
    """put_blob_group's answer: as StoredBlob's, for the group's names."""
    already_stored: bool = False
    conflict: bool = False
    _proto: ClassVar[str] = "kjit.v1.PutBlobGroupResponse"


@dataclass
class DirectReadGrant:
    """What this caller needs to read its own blobs from the daemon's disk
    tier without an RPC (kjit.DirectReader keeps it for later processes):
    granted, the namespace its blobs are in, and the key naming their files
    (empty for the operator, whose files are named plainly), for the names
    secret names_key_id; reason says why not when granted is False."""
    granted: bool = False
    namespace: str = field(default="", metadata={"proto": "namespace"})
    names_key: bytes = field(default=b"", repr=False)
    names_key_id: str = ""
    reason: str = ""
    _proto: ClassVar[str] = "kjit.v1.DirectReadGrantResponse"


@dataclass
class CacheListing:
    key: str = ""
    bytes: int = 0
    last_access_unix: int = 0
    # Listed with blob_namespace: what the entry is.
    blob_kind: str = ""  # "client-blob" or "client-blob-group"
    blob_namespace: str = ""
    blob_key: str = ""
    blob_name: str = ""
    _proto: ClassVar[str] = "kjit.v1.CacheListing"


@dataclass
class GcResult:
    removed_entries: int = 0
    removed_bytes: int = 0
    entries_after: int = 0
    bytes_after: int = 0
    _proto: ClassVar[str] = "kjit.v1.GcResponse"


@dataclass
class VerifyResult:
    checked: int = 0
    removed: int = 0
    temp_files_removed: int = 0  # temp files of writers that died mid-write
    _proto: ClassVar[str] = "kjit.v1.VerifyResponse"


@dataclass
class KeyDifference:
    name: str = ""
    left: str = ""
    right: str = ""
    present_left: bool = False
    present_right: bool = False
    _proto: ClassVar[str] = "kjit.v1.KeyDifference"


@dataclass
class ExplainResult:
    left_key: str = ""
    right_key: str = ""
    left_components: List[KeyComponent] = _messages(KeyComponent)
    right_components: List[KeyComponent] = _messages(KeyComponent)
    differences: List[KeyDifference] = _messages(KeyDifference)
    _proto: ClassVar[str] = "kjit.v1.ExplainResponse"

    @property
    def same(self) -> bool:
        return self.left_key == self.right_key

    @property
    def differing(self) -> List[str]:
        """Names of the key components that differ."""
        return [d.name for d in self.differences]


@dataclass
class RecipeSummary:
    """A recipe: a request the daemon compiled, kept without its target,
    named by the SHA-256 of its spelling (digest)."""
    digest: str = ""
    input_kind: str = _enum("INPUT_KIND_", "")  # "cuda-source", "ptx", "llvm-ir", ...
    input_name: str = ""
    artifact: str = _enum("ARTIFACT_KIND_", "cubin")  # "cubin": the target's own binary
    bytes: int = 0             # the stored recipe's size
    created_unix: int = 0      # first recorded
    last_asked_unix: int = 0   # last compiled, or hit, for any target
    last_target: str = ""      # the target it was last asked for
    _proto: ClassVar[str] = "kjit.v1.RecipeSummary"


@dataclass
class Recipe:
    """recipe()'s answer: the summary and the request as the daemon
    validated it, without its target. compile_args is what compile() takes:
    client.compile(**recipe.compile_args, target="cuda:100")."""
    summary: RecipeSummary = field(default_factory=RecipeSummary)
    source: bytes = field(default=b"", repr=False)
    kind: str = ""             # as RecipeSummary.input_kind
    name: str = ""             # the input's name in diagnostics
    headers: Dict[str, bytes] = field(default_factory=dict, repr=False)
    options: List[str] = field(default_factory=list)
    name_expressions: List[str] = field(default_factory=list)
    pipeline: str = ""
    artifact: str = ""         # "": the target's own binary
    pass_args: Dict[str, str] = field(default_factory=dict)
    allow_ptx_fallback: bool = False

    @property
    def compile_args(self) -> Dict[str, Any]:
        """The keyword arguments of compile() (and kjit.Request) for this
        request; add target=."""
        return dict(source=self.source, kind=self.kind, headers=dict(self.headers), options=list(self.options),
                    name_expressions=list(self.name_expressions), pipeline=self.pipeline or None,
                    artifact=self.artifact or None, pass_args=dict(self.pass_args), name=self.name or None,
                    allow_ptx_fallback=self.allow_ptx_fallback)


@dataclass
class Seal:
    """A seal on compiles after warm-up, in force: of every namespace
    (all_namespaces) or of one ("" is the default one). after_warmup: what a
    miss does under it: "count", "warn" or "refuse" (FailedPrecondition
    naming the seal)."""
    all_namespaces: bool = False
    namespace: str = ""
    after_warmup: str = _enum("AFTER_WARMUP_", "")
    sealed_unix: int = 0
    _proto: ClassVar[str] = "kjit.v1.Seal"


@dataclass
class ExportResult:
    """export_bundle's answer: what the bundle holds, its size, and, when no
    file was given, its bytes (data)."""
    entries: int = 0  # compile entries
    blobs: int = 0    # client blobs and groups
    recipes: int = 0
    bytes: int = 0    # the whole bundle
    data: Optional[bytes] = field(default=None, repr=False)
    _proto: ClassVar[str] = "kjit.v1.BundleExportSummary"


@dataclass
class BundleSkip:
    """Why some of a bundle's records were not imported, how many, and the
    key (or recipe digest) of the first one."""
    reason: str = ""  # "already there (kept)", "recipe already there (kept)", ...
    count: int = 0
    example: str = ""
    _proto: ClassVar[str] = "kjit.v1.BundleSkip"


@dataclass
class ImportResult:
    """import_bundle's answer: what was imported, and what was skipped and why."""
    entries_imported: int = 0  # compile entries
    blobs_imported: int = 0    # client blobs and groups
    recipes_imported: int = 0
    skipped: int = 0           # all reasons together
    skips: List[BundleSkip] = _messages(BundleSkip)
    entry_format: int = 0      # the bundle's entry format (the daemon's)
    toolchains: List[str] = _strings()  # what its entries were built with ("toolchain.nvrtc 13.0")
    bundle_bytes: int = 0
    namespace: str = ""        # where the records went ("": the default namespace)
    _proto: ClassVar[str] = "kjit.v1.ImportBundleResponse"

    def skipped_for(self, reason: str) -> int:
        """How many records were skipped for reason."""
        return sum(s.count for s in self.skips if s.reason == reason)


@dataclass
class ConfinementStatus:
    mode: str = ""
    description: str = ""
    worker_confinement: str = ""
    _proto: ClassVar[str] = "kjit.v1.ConfinementStatus"


@dataclass
class CompileBoundsStatus:
    memory_bytes: int = 0
    cpu_seconds: int = 0
    open_files: int = 0
    output_bytes: int = 0
    timeout_seconds: int = 0
    _proto: ClassVar[str] = "kjit.v1.CompileBoundsStatus"


@dataclass
class CompileWorkersStatus:
    max_workers: int = 0
    live_workers: int = 0
    started: int = 0
    last_start_ms: float = 0.0
    ready_workers: int = 0  # started and waiting for a compile
    busy_workers: int = 0   # running a compile, or starting for one
    # The live workers by class ("general", "tileir", "general background",
    # "tileir background"): classes with workers only.
    live_by_class: Dict[str, int] = _map()
    _proto: ClassVar[str] = "kjit.v1.CompileWorkersStatus"


@dataclass
class FleetStatus:
    """The background builds for the fleet's other targets ([fleet] targets;
    empty: none)."""
    targets: List[str] = _strings()
    queued: int = 0
    running: int = 0
    compiled: int = 0
    cached: int = 0       # builds a tier already answered
    failed: int = 0
    dropped: int = 0      # not queued: the queue was full
    yielded: int = 0      # builds that waited for clients' compiles first
    last_failure: str = ""  # "<target>: <reason>", the operator's only
    _proto: ClassVar[str] = "kjit.v1.FleetStatus"


@dataclass
class CacheStatus:
    """The cache's tiers, top first ("memory", "disk", "redis", "reapi"), and
    what daemons share beyond its entries (one compile per key and claims
    through Redis's leases, or per daemon)."""
    tiers: List[str] = _strings()
    sharing: str = ""
    _proto: ClassVar[str] = "kjit.v1.CacheStatus"


@dataclass
class ConfigSetting:
    key: str = ""    # the TOML path: "cache.disk_bytes"
    value: str = ""  # decimal integer, true/false, or the text
    flag: str = ""   # the command-line flag that sets it; empty: the file alone
    _proto: ClassVar[str] = "kjit.v1.ConfigSetting"


@dataclass
class ReloadResult:
    """What Client.reload put in force: what was read again ("tenants",
    "tls", "log_file", and changed keys that apply at once), and the changed
    keys whose new value waits for a restart. A refused reload raises."""
    reloaded: List[str] = _strings()
    needs_restart: List[str] = _strings()
    _proto: ClassVar[str] = "kjit.v1.ReloadResponse"


@dataclass
class DaemonStatus:
    version: str = ""
    confinement: ConfinementStatus = _message(ConfinementStatus)
    bounds: CompileBoundsStatus = _message(CompileBoundsStatus)
    workers: CompileWorkersStatus = _message(CompileWorkersStatus)
    # The daemon's configuration, for the local operator only.
    settings: List[ConfigSetting] = _messages(ConfigSetting)
    fleet: FleetStatus = _message(FleetStatus)
    cache: CacheStatus = _message(CacheStatus)  # empty tiers: the cache is off
    _proto: ClassVar[str] = "kjit.v1.GetStatusResponse"


RESULT_TYPES = (
    Dim3, KernelInfo, PassTiming, StageTiming, KeyComponent, FatbinEntry, CompileResult, PipelineDescription,
    FunctionAttribute, LaunchAttribute, LaunchPlan, PlanResult, TierStats, BlobStats, PchStats, CacheStats, BlobGroup, BlobClaim,
    CacheListing, GcResult,
    VerifyResult, KeyDifference, ExplainResult, ConfinementStatus, CompileBoundsStatus, CompileWorkersStatus,
    ConfigSetting, FleetStatus, DaemonStatus, RecipeSummary, Seal, ExportResult, BundleSkip, ImportResult,
    TritonPluginLibrary, TritonPlugin, TritonBorrowedPtxas, TritonBuild,
)
