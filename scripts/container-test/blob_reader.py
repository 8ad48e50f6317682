"""One client of kjitd's blobs, as Triton's cache manager reads them: the
disk tier directly where the daemon's direct-read manifest allows it, else
a GetBlob call. Run by scripts/container-test.sh inside the systemd test
container, once as a member of the socket's group and once as a user let
onto the socket alone.

    python3 blob_reader.py SOCKET put|read|own NAMESPACE KEY NAME HEX_BYTES

Prints one JSON line: how the bytes came ("direct" or "grpc"), whether they
were the expected ones, whether a direct reader was had, and whether gRPC
was loaded before the fallback. "own" stores the bytes as this user, asks
for its direct-read grant (kept in $XDG_CACHE_HOME), and reads them back.
"""

import json
import sys

import kjit

socket_path, action, namespace, key, name, hex_bytes = sys.argv[1:7]
expected = bytes.fromhex(hex_bytes)
if action == "put":
    kjit.Client(socket_path).put_blob(namespace, key, name, expected)
    print(json.dumps({"put": True}))
    sys.exit(0)
if action == "own":
    from kjit._direct import remember_grant
    with kjit.Client(socket_path) as client:
        client.put_blob(namespace, key, name, expected)
        granted = remember_grant(client, socket_path)
    reader = kjit.DirectReader.open(socket_path)
    data = reader.get_blob(namespace, key, name) if reader else None
    print(json.dumps({"how": "direct" if data is not None else "none", "same_bytes": data == expected,
                      "granted": granted}))
    sys.exit(0)

reader = kjit.DirectReader.open(socket_path)
data = reader.get_blob(namespace, key, name) if reader else None
how = "direct"
grpc_before_fallback = "grpc" in sys.modules
if data is None:
    how = "grpc"
    data = kjit.Client(socket_path).get_blob(namespace, key, name)
print(json.dumps({"how": how, "same_bytes": data == expected, "direct_reader": reader is not None,
                  "grpc_loaded_before_fallback": grpc_before_fallback}))
