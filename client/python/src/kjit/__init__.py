"""Python client for kjitd, the kjit JIT kernel compilation daemon.

    import kjit
    with kjit.Client() as client:             # $KJIT_SOCKET or the default socket
        result = client.compile(source, target="cuda:90")
        result.artifact                       # the cubin
        result.kernels[0].registers

kjit.aio.Client offers the same methods as coroutines.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names as type checkers and editors see them; at run time, __getattr__ below
    from kjit import aio  # noqa: F401
    from kjit._address import default_address, default_socket_path  # noqa: F401
    from kjit._client import Client  # noqa: F401
    from kjit._direct import DirectReader  # noqa: F401
    from kjit._errors import (Cancelled, DeadlineExceeded, FailedPrecondition, Internal,  # noqa: F401
                              InvalidArgument, KjitError, NotFound, PermissionDenied, ResourceExhausted,
                              Unauthenticated, Unavailable, Unimplemented)
    from kjit._request import Request, infer_kind  # noqa: F401
    from kjit._types import (ReloadResult,  # noqa: F401
                             BlobClaim, BlobGroup, BlobStats, CacheListing, CacheStats, CompileBoundsStatus,  # noqa: F401
                             CompileResult, CompileWorkersStatus, ConfigSetting, ConfinementStatus, DaemonStatus, Dim3,
                             ExplainResult, FatbinEntry, FunctionAttribute, GcResult, KernelInfo, KeyComponent,
                             KeyDifference, LaunchAttribute, LaunchPlan, PassTiming, PipelineDescription,
                             PlanResult, StageTiming, StoredBlob, StoredGroup, DirectReadGrant, TierStats,
                             VerifyResult, RecipeSummary, Recipe, Seal, ExportResult, ImportResult, BundleSkip,
                             TritonBuild)

# What each public name is imported from, on first use: `import kjit.triton`
# (Triton's cache manager) then loads gRPC only when it needs the daemon, and
# not at all when the disk tier serves it directly.
_ERRORS = ("KjitError", "InvalidArgument", "FailedPrecondition", "NotFound", "ResourceExhausted", "Unavailable",
           "DeadlineExceeded", "Unimplemented", "Internal", "Unauthenticated", "PermissionDenied", "Cancelled")
_TYPES = ("ReloadResult", "BlobClaim", "BlobGroup", "BlobStats", "CacheListing", "CacheStats", "CompileBoundsStatus", "CompileResult",
          "CompileWorkersStatus", "ConfigSetting", "ConfinementStatus", "DaemonStatus", "Dim3", "ExplainResult", "FatbinEntry",
          "FunctionAttribute", "GcResult", "KernelInfo", "KeyComponent", "KeyDifference", "LaunchAttribute",
          "LaunchPlan", "PassTiming", "PipelineDescription", "PlanResult", "StageTiming", "TierStats", "VerifyResult",
          "StoredBlob", "StoredGroup", "DirectReadGrant", "RecipeSummary", "Recipe", "Seal", "ExportResult",
          "ImportResult", "BundleSkip", "TritonBuild")
_SOURCES = {"Client": "kjit._client", "Request": "kjit._request", "infer_kind": "kjit._request",
            "default_address": "kjit._address", "default_socket_path": "kjit._address",
            "DirectReader": "kjit._direct"}
_SOURCES.update({name: "kjit._errors" for name in _ERRORS})
_SOURCES.update({name: "kjit._types" for name in _TYPES})


def __getattr__(name):
    if name == "aio":
        return importlib.import_module("kjit.aio")
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError("module 'kjit' has no attribute %r" % name)
    value = getattr(importlib.import_module(source), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_SOURCES) | {"aio"})


__version__ = "0.1.0"

__all__ = [
    "Client", "Request", "default_address", "default_socket_path", "infer_kind",
    "KjitError", "InvalidArgument", "FailedPrecondition", "NotFound", "ResourceExhausted", "Unavailable",
    "DeadlineExceeded", "Unimplemented", "Internal", "Unauthenticated", "PermissionDenied", "Cancelled",
    "CompileResult", "KernelInfo", "Dim3", "StageTiming", "PassTiming", "KeyComponent", "FatbinEntry",
    "PipelineDescription", "TritonBuild", "PlanResult", "LaunchPlan", "FunctionAttribute", "LaunchAttribute",
    "CacheStats", "TierStats", "BlobStats", "BlobGroup", "BlobClaim", "CacheListing", "GcResult", "VerifyResult", "ExplainResult", "KeyDifference",
    "ReloadResult", "DaemonStatus", "ConfinementStatus", "CompileBoundsStatus", "CompileWorkersStatus", "ConfigSetting", "DirectReader",
    "StoredBlob", "StoredGroup", "DirectReadGrant",
    "RecipeSummary", "Recipe", "Seal", "ExportResult", "ImportResult", "BundleSkip",
    "aio",
]
