"""Compiles cuTile kernels to cubins for one sm without a GPU (cuTile's
export_kernel, output_format="cubin"), and prints as JSON what happened: the
tileiras runs this process made, kjit.cutile's counts, and each cubin's path.

Run in a fresh process by test_cutile.py:
    python cutile_child.py OUT_DIR SM KERNEL... [--kjit]
with --kjit, kjit.cutile.install() first (the daemon from $KJIT_SOCKET).
cuTile's cache directory is $CUDA_TILE_CACHE_DIR, as cuTile reads it."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

# Every tileiras run cuTile makes goes through subprocess.run (compiles,
# probes, --version): counted whatever tileiras cuTile found.
tileiras_runs = []
_run = subprocess.run


def _counting_run(command, *args, **kwargs):
    if command and os.path.basename(str(command[0])) == "tileiras":
        tileiras_runs.append([str(a) for a in command])
    return _run(command, *args, **kwargs)


subprocess.run = _counting_run

import cuda.tile as ct  # noqa: E402
from cuda.tile.compilation import CallingConvention, KernelSignature, export_kernel  # noqa: E402

# The kernels tests/tileir exports too: one definition, in a file of its own,
# since cuTile reads a kernel's source from its file.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "tileir"))
from export_kernels import array, matmul, vector_add  # noqa: E402


def signatures(name):
    conv = CallingConvention.cutile_python_v1()
    if name == "vector_add":
        f32 = array(ct.float32, 1)
        return vector_add, [KernelSignature([f32, f32, f32, 128], conv, symbol="vector_add")]
    f16 = array(ct.float16, 2)
    return matmul, [KernelSignature([f16, f16, f16, 128, 128, 64], conv, symbol="matmul")]


def main(argv):
    use_kjit = "--kjit" in argv
    argv = [a for a in argv if a != "--kjit"]
    out_dir, sm, names = Path(argv[0]), argv[1], argv[2:]
    out_dir.mkdir(parents=True, exist_ok=True)
    if use_kjit:
        import kjit.cutile  # noqa: PLC0415
        kjit.cutile.install()
    cubins = {}
    for name in names:
        kernel, sigs = signatures(name)
        out = io.BytesIO()
        export_kernel(kernel, sigs, out, gpu_code=sm, output_format="cubin")
        path = out_dir / ("%s.%s.cubin" % (name, sm))
        path.write_bytes(out.getvalue())
        cubins[name] = str(path)
    stats = None
    if use_kjit:
        import kjit.cutile  # noqa: PLC0415
        stats = kjit.cutile.stats()
    print(json.dumps({"tileiras_runs": tileiras_runs, "stats": stats, "cubins": cubins}))


if __name__ == "__main__":
    main(sys.argv[1:])
