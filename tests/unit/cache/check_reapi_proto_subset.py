"""kjit declares the part of the Remote Execution API it speaks in
proto/reapi (a subset, by hand). This checks every message, field, enum value
and RPC declared there against the full API as BuildGrid ships it: the same
full name, field number, type, label and message or enum type; the same
enum numbers; the same RPC request and response types. A field declared
with a wrong number or type would make kjit's messages mean something else
to every REAPI server.

    check_reapi_proto_subset.py PROTOC PROTO_ROOT BUILDGRID_PYTHON

Exits 77 (skipped) without BuildGrid, except under CI.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77


def main():
    protoc, root, python = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if not python.exists():
        if os.environ.get("CI"):
            sys.exit("CI must run this check: BuildGrid is not installed (scripts/install-deps.sh)")
        print("BuildGrid is not installed in", python.parent.parent, "- skipped")
        sys.exit(SKIP)
    protos = sorted(str(p.relative_to(root)) for p in root.rglob("*.proto"))
    with tempfile.TemporaryDirectory() as tmp:
        descriptors = Path(tmp) / "subset.pb"
        subprocess.run([protoc, "--proto_path", str(root), "--include_imports",
                        "--descriptor_set_out", str(descriptors)] + protos, check=True)
        # Compared inside BuildGrid's interpreter, where the full API's
        # generated modules live.
        result = subprocess.run([str(python), "-c", COMPARE, str(descriptors)], capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    sys.exit(result.returncode)


COMPARE = r'''
import sys
from google.protobuf import descriptor_pb2, descriptor_pool
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2
from buildgrid._protos.google.bytestream import bytestream_pb2
from buildgrid._protos.google.rpc import status_pb2

full = {}
for module in (remote_execution_pb2, bytestream_pb2, status_pb2):
    full[module.DESCRIPTOR.package] = module.DESCRIPTOR

# The full API's modules registered themselves in protobuf's default pool on
# import: its lookups by full name find nested messages and enums too.
pool = descriptor_pool.Default()

def find_message(name):
    try:
        return pool.FindMessageTypeByName(name)
    except KeyError:
        return None

def find_enum(name):
    try:
        return pool.FindEnumTypeByName(name)
    except KeyError:
        return None

subset = descriptor_pb2.FileDescriptorSet()
subset.ParseFromString(open(sys.argv[1], "rb").read())
problems, checked = [], 0

def check_message(prefix, m):
    global checked
    name = prefix + "." + m.name
    theirs = find_message(name)
    if theirs is None:
        problems.append("%s: no such message in the API" % name)
        return
    for f in m.field:
        checked += 1
        t = theirs.fields_by_name.get(f.name)
        if t is None:
            problems.append("%s.%s: no such field in the API" % (name, f.name))
            continue
        if t.number != f.number:
            problems.append("%s.%s: number %d, the API's is %d" % (name, f.name, f.number, t.number))
        if t.type != f.type:
            problems.append("%s.%s: type %d, the API's is %d" % (name, f.name, f.type, t.type))
        repeated = f.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
        theirs_repeated = t.is_repeated if hasattr(t, "is_repeated") else t.label == t.LABEL_REPEATED
        if repeated != theirs_repeated:
            problems.append("%s.%s: repeated is %s, the API's %s" % (name, f.name, repeated, theirs_repeated))
        their_type = (t.message_type or t.enum_type)
        if f.type_name and (their_type is None or "." + their_type.full_name != f.type_name):
            problems.append("%s.%s: of %s, the API's is of %s" % (name, f.name, f.type_name,
                                                                  their_type.full_name if their_type else "-"))
    for nested in m.nested_type:
        check_message(name, nested)
    for e in m.enum_type:
        check_enum(name, e)

def check_enum(prefix, e):
    global checked
    name = prefix + "." + e.name
    theirs = find_enum(name)
    if theirs is None:
        problems.append("%s: no such enum in the API" % name)
        return
    for v in e.value:
        checked += 1
        t = theirs.values_by_name.get(v.name)
        if t is None or t.number != v.number:
            problems.append("%s.%s = %d: the API's is %s" % (name, v.name, v.number, t.number if t else "absent"))

for fd in subset.file:
    if fd.package not in full:
        continue  # google/protobuf imports
    for m in fd.message_type:
        check_message(fd.package, m)
    for e in fd.enum_type:
        check_enum(fd.package, e)
    for s in fd.service:
        theirs = full[fd.package].services_by_name.get(s.name)
        if theirs is None:
            problems.append("%s.%s: no such service in the API" % (fd.package, s.name))
            continue
        for method in s.method:
            checked += 1
            t = theirs.methods_by_name.get(method.name)
            if t is None:
                problems.append("%s.%s: no such RPC" % (s.name, method.name))
            elif ("." + t.input_type.full_name, "." + t.output_type.full_name) != (method.input_type, method.output_type):
                problems.append("%s.%s: types differ from the API's" % (s.name, method.name))

for p in problems:
    print("mismatch:", p)
print("%d declarations checked against the API, %d mismatches" % (checked, len(problems)))
sys.exit(1 if problems or checked < 40 else 0)
'''

if __name__ == "__main__":
    main()
