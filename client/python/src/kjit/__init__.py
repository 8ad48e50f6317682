"""Python client for kjitd, the kjit JIT kernel compilation daemon.

    import kjit
    with kjit.Client() as client:             # $KJIT_SOCKET or the default socket
        result = client.compile(source, target="cuda:90")
        result.artifact                       # the cubin
        result.kernels[0].registers

kjit.aio.Client offers the same methods as coroutines.
"""

from kjit._client import Client
from kjit._errors import (Cancelled, DeadlineExceeded, FailedPrecondition, Internal, InvalidArgument, KjitError, NotFound,
                          PermissionDenied, ResourceExhausted, Unauthenticated, Unavailable, Unimplemented)
from kjit._request import Request, default_address, default_socket_path, infer_kind
from kjit._types import (BlobGroup, BlobStats, CacheListing, CacheStats, CompileBoundsStatus, CompileResult,
                         CompileWorkersStatus, ConfinementStatus, DaemonStatus, Dim3, ExplainResult, FatbinEntry,
                         FunctionAttribute, GcResult, KernelInfo, KeyComponent, KeyDifference, LaunchAttribute,
                         LaunchPlan, PassTiming, PipelineDescription, PlanResult, StageTiming, TierStats,
                         VerifyResult)

from kjit import aio  # noqa: E402  (kjit.aio.Client after `import kjit`)

__version__ = "0.1.0"

__all__ = [
    "Client", "Request", "default_address", "default_socket_path", "infer_kind",
    "KjitError", "InvalidArgument", "FailedPrecondition", "NotFound", "ResourceExhausted", "Unavailable",
    "DeadlineExceeded", "Unimplemented", "Internal", "Unauthenticated", "PermissionDenied", "Cancelled",
    "CompileResult", "KernelInfo", "Dim3", "StageTiming", "PassTiming", "KeyComponent", "FatbinEntry",
    "PipelineDescription", "PlanResult", "LaunchPlan", "FunctionAttribute", "LaunchAttribute",
    "CacheStats", "TierStats", "BlobStats", "BlobGroup", "CacheListing", "GcResult", "VerifyResult", "ExplainResult", "KeyDifference",
    "DaemonStatus", "ConfinementStatus", "CompileBoundsStatus", "CompileWorkersStatus", "aio",
]
