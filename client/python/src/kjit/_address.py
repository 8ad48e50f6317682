"""Where the daemon is: what kjit.Client and the direct reader resolve alike.
No gRPC here, so a process that only reads kjitd's disk tier never loads it."""

import os
from typing import Optional


def default_socket_path() -> str:
    """kjitd's default socket: $XDG_RUNTIME_DIR/kjit/kjitd.sock, else /tmp/kjit-$UID/kjitd.sock."""
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    if runtime_dir:
        return runtime_dir + "/kjit/kjitd.sock"
    return "/tmp/kjit-%d/kjitd.sock" % os.getuid()


def default_address() -> str:
    """$KJIT_SOCKET, then $KJIT_ADDRESS, then the daemon's default socket."""
    for variable in ("KJIT_SOCKET", "KJIT_ADDRESS"):
        value = os.environ.get(variable)
        if value:
            return value
    return default_socket_path()


def socket_path_of(address) -> Optional[str]:
    """The unix socket's path for a socket path or a "unix:" URI; None for TCP
    (HOST:PORT, dns:, ipv4:, ipv6:) and for abstract sockets, which have none."""
    address = os.fspath(address)
    if address.startswith("unix://"):
        return address[len("unix://"):]
    if address.startswith("unix:"):
        return os.path.abspath(address[len("unix:"):])
    if address.startswith(("unix-abstract:", "dns:", "ipv4:", "ipv6:")):
        return None
    if "/" in address or ":" not in address:
        return os.path.abspath(os.path.expanduser(address))
    return None
