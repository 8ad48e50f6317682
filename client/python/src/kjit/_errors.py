"""Errors: every failed call raises a KjitError (or one of its subclasses)."""

from typing import Optional

import grpc

# Trailing metadata of a failed call: the compiler's whole log (a status
# message carries an excerpt at most) and the message without that excerpt.
LOG_TRAILER = "kjit-log-bin"
MESSAGE_TRAILER = "kjit-message-bin"
# On a refusal worth retrying (a full compile queue): milliseconds to wait.
RETRY_AFTER_TRAILER = "kjit-retry-after-ms"


class KjitError(Exception):
    """A call the daemon refused or failed, or one that never reached it.

    code:    the grpc.StatusCode
    details: the daemon's message, without the log
    log:     the compiler's whole log ("" when there is none)
    retry_after_ms: when the daemon says to retry (a full queue), after how
             long; None otherwise
    """

    def __init__(self, code: grpc.StatusCode, details: str, log: str = "", retry_after_ms: Optional[int] = None):
        self.code = code
        self.details = details
        self.log = log
        self.retry_after_ms = retry_after_ms
        text = "%s: %s" % (code.name if code is not None else "UNKNOWN", details)
        if log and log.strip() not in details:
            text += "\n" + log.rstrip("\n")
        super().__init__(text)


class InvalidArgument(KjitError):
    """The request is malformed, or the compiler rejected the input (see .log)."""


class FailedPrecondition(KjitError):
    """The daemon cannot serve it as configured (a toolkit or a GPU is missing)."""


class NotFound(KjitError):
    """A key or kernel the request names is not there."""


class ResourceExhausted(KjitError):
    """The request exceeds one of the daemon's limits, or the compile queue is
    full (then .retry_after_ms says when to try again)."""


class Unavailable(KjitError):
    """The daemon is not reachable (not started, wrong socket) or is shutting down."""


class DeadlineExceeded(KjitError):
    """The call outlived its timeout."""


class Unimplemented(KjitError):
    """The daemon does not offer this (an older daemon, or an unsupported input kind)."""


class Internal(KjitError):
    """The daemon failed."""


class Cancelled(KjitError):
    """The call was cancelled."""


class Unauthenticated(KjitError):
    """The token was missing or refused."""


class PermissionDenied(KjitError):
    """The token does not allow this call."""


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.INTERNAL: Internal,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.CANCELLED: Cancelled,
}


def _text(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _trailer(trailers, key: str) -> Optional[str]:
    for entry in trailers or ():
        k, v = entry[0], entry[1]
        if k == key:
            return _text(v)
    return None


def error_from(code: grpc.StatusCode, details: Optional[str], trailers) -> KjitError:
    log = _trailer(trailers, LOG_TRAILER) or ""
    message = _trailer(trailers, MESSAGE_TRAILER)
    if message is None:
        message = details or ""
    retry = _trailer(trailers, RETRY_AFTER_TRAILER)
    retry_after_ms = int(retry) if retry and retry.isdigit() else None
    cls = _BY_CODE.get(code, KjitError)
    return cls(code, message, log, retry_after_ms)


def from_rpc_error(error: grpc.RpcError) -> KjitError:
    """A KjitError for a grpc.RpcError (sync) or grpc.aio.AioRpcError."""
    try:
        trailers = error.trailing_metadata()
    except Exception:  # not a call: no trailers to read
        trailers = None
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    return error_from(code, details, trailers)
