// Where kjitd listens by default and how a client finds it.
#pragma once

#include <string>
#include <string_view>

namespace kjit {

// $XDG_RUNTIME_DIR/kjit/kjitd.sock, or /tmp/kjit-$UID/kjitd.sock.
std::string default_socket_path();

// The explicit path when given, then $KJIT_SOCKET, then the default.
std::string resolve_socket_path(std::string_view explicit_path);

}  // namespace kjit
