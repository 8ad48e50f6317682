"""Builds the kjit package, generating its gRPC stubs from the repository's protos.

The protos are the repository's proto/ directory (two levels above this
file), or a proto/ directory next to this file (where an sdist carries its
copy), or $KJIT_PROTO_DIR. The stubs land in the built package as
kjit/v1/*_pb2.py and kjit/v1/*_pb2_grpc.py; nothing generated is committed.

The health service (grpc.health.v1) is not generated as a module: a module
would register grpc.health.v1.* in protobuf's default pool, where it clashes
with grpcio-health-checking in the same process. Its descriptor set is
stored instead and loaded into a private pool (kjit/_health.py).
"""

import glob
import os
import re
import shutil
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
HEALTH_PROTO = os.path.join("grpc", "health", "v1", "health.proto")
# The cache entry's metadata, which kjit/_direct.py checks when it reads the
# daemon's disk tier itself.
RECORD_PROTO = os.path.join("kjit", "internal", "artifact_record.proto")


PTH_LINE = "import os; os.environ.get('KJIT_TRITON') and __import__('kjit._triton_startup')\n"


def proto_dir():
    candidates = []
    if os.environ.get("KJIT_PROTO_DIR"):
        candidates.append(os.environ["KJIT_PROTO_DIR"])
    candidates.append(os.path.join(HERE, "..", "..", "proto"))
    candidates.append(os.path.join(HERE, "proto"))
    for candidate in candidates:
        if os.path.isfile(os.path.join(candidate, "kjit", "v1", "compiler.proto")):
            return os.path.realpath(candidate)
    sys.exit("kjit: no kjit/v1/compiler.proto in any of " + ", ".join(os.path.realpath(c) for c in candidates) +
             "; set KJIT_PROTO_DIR to the repository's proto/ directory")


def _protoc(args):
    import grpc_tools
    from grpc_tools import protoc

    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    command = ["grpc_tools.protoc", "-I" + proto_dir(), "-I" + well_known] + args
    if protoc.main(command) != 0:
        sys.exit("kjit: protoc failed: " + " ".join(command))


def generate(out_dir):
    """Writes kjit/v1/*_pb2{,_grpc}.py and kjit/_health_descriptor.py under out_dir."""
    source = proto_dir()
    protos = sorted(glob.glob(os.path.join(source, "kjit", "v1", "*.proto")))
    os.makedirs(os.path.join(out_dir, "kjit", "v1"), exist_ok=True)
    for stale in glob.glob(os.path.join(out_dir, "kjit", "v1", "*_pb2*.py")):
        os.remove(stale)
    _protoc(["--python_out=" + out_dir, "--grpc_python_out=" + out_dir] + protos)
    with open(os.path.join(out_dir, "kjit", "v1", "__init__.py"), "w") as f:
        f.write('"""Generated from proto/kjit/v1 when the package was built."""\n')
    os.makedirs(os.path.join(out_dir, "kjit", "internal"), exist_ok=True)
    _protoc(["--python_out=" + out_dir, os.path.join(source, RECORD_PROTO)])
    with open(os.path.join(out_dir, "kjit", "internal", "__init__.py"), "w") as f:
        f.write('"""Generated from proto/kjit/internal when the package was built."""\n')
    with tempfile.TemporaryDirectory() as tmp:
        descriptor_set = os.path.join(tmp, "health.pb")
        _protoc(["--descriptor_set_out=" + descriptor_set, os.path.join(source, HEALTH_PROTO)])
        with open(descriptor_set, "rb") as f:
            serialized = f.read()
    with open(os.path.join(out_dir, "kjit", "_health_descriptor.py"), "w") as f:
        f.write('"""Generated from proto/grpc/health/v1/health.proto when the package was built."""\n')
        f.write("SERIALIZED = %r\n" % serialized)


def requirements():
    """grpcio and protobuf no older than the versions the stubs were generated for."""
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _protoc(["--python_out=" + tmp, "--grpc_python_out=" + tmp,
                     os.path.join(proto_dir(), "kjit", "v1", "compiler.proto")])
            with open(os.path.join(tmp, "kjit", "v1", "compiler_pb2.py")) as f:
                protobuf = re.search(r"Protobuf Python Version: (\d+)\.(\d+)\.(\d+)", f.read())
            with open(os.path.join(tmp, "kjit", "v1", "compiler_pb2_grpc.py")) as f:
                grpcio = re.search(r"GRPC_GENERATED_VERSION = '([^']+)'", f.read())
    except ImportError:  # metadata asked for without grpcio-tools: unversioned
        return ["grpcio", "protobuf", "xxhash>=2"]
    out = ["grpcio>=" + grpcio.group(1) if grpcio else "grpcio"]
    if protobuf:
        major = int(protobuf.group(1))
        out.append("protobuf>=%s,<%d" % (".".join(protobuf.groups()), major + 1))
    else:
        out.append("protobuf")
    # XXH3-128, the cache entries' checksum, for direct reads (kjit/_direct.py).
    out.append("xxhash>=2")
    return out


class BuildPy(build_py):
    def run(self):
        editable = getattr(self, "editable_mode", False)
        if not editable:  # an in-tree build reuses build/lib: drop what an earlier build left there
            shutil.rmtree(os.path.join(self.build_lib, "kjit"), ignore_errors=True)
        super().run()
        # An editable install imports from src/, so the stubs go there.
        generate(os.path.join(HERE, "src") if editable else self.build_lib)
        if not editable:
            # Read by Python at every start: KJIT_TRITON in the environment turns
            # on kjit for Triton with no code change (kjit/_triton_startup.py).
            with open(os.path.join(self.build_lib, "kjit-triton.pth"), "w") as f:
                f.write(PTH_LINE)


class Sdist(sdist):
    """Carries the protos, so that the sdist builds away from the repository."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        source = proto_dir()
        protos = glob.glob(os.path.join(source, "kjit", "v1", "*.proto")) + \
            [os.path.join(source, HEALTH_PROTO), os.path.join(source, RECORD_PROTO)]
        for proto in protos:
            copy = os.path.join(base_dir, "proto", os.path.relpath(proto, source))
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            shutil.copy2(proto, copy)


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist}, install_requires=requirements())
