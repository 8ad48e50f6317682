"""A Triton kernel compiled by kjitd and launched by kjitd's Launch service on
this machine's GPU, against the same TTIR compiled by triton.compile and
launched by Triton's own launcher (where this build of Triton can launch:
it needs torch for its stream) and against the softmax computed here.

Run by tests/gpu/run.sh with a kjitd serving on KJIT_SOCKET; needs a GPU.
Usage: triton_launch.py KJIT_BINARY TRITON_PYTHON TTIR WORK_DIR
"""
import json
import math
import os
import random
import struct
import subprocess
import sys

kjit, triton_python, ttir, work = sys.argv[1:5]
socket = os.environ["KJIT_SOCKET"]
rows, n_cols = 64, 1000
random.seed(7)
values = [random.uniform(-4, 4) for _ in range(rows * n_cols)]
halfs = struct.pack(f"<{len(values)}e", *values)
inputs = struct.unpack(f"<{len(values)}e", halfs)  # as the GPU reads them
with open(os.path.join(work, "in.bin"), "wb") as f:
    f.write(halfs)

cc = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                    text=True, check=True).stdout.split()[0]
target = "cuda:" + cc.replace(".", "")

# kjitd: compile the TTIR and launch it; block, shared memory and Triton's
# scratch arguments come from the kernel's metadata.
subprocess.run([kjit, "-s", socket, "launch", ttir, "-t", target, "-k", "softmax", "--grid", str(rows),
                "--arg", f"zeros:{len(halfs)}", "--arg", f"buf:{os.path.join(work, 'in.bin')}",
                "--arg", f"i32:{n_cols}", "--arg", f"i32:{n_cols}", "--arg", f"i32:{n_cols}",
                "--out", "0", "--out-dir", work, "--json"], check=True, stdout=open(os.path.join(work, "launch.json"), "w"))
with open(os.path.join(work, "arg0.bin"), "rb") as f:
    through_kjit = f.read()

failures = 0
outputs = struct.unpack(f"<{len(values)}e", through_kjit)
worst = 0.0
for r in range(rows):
    row = inputs[r * n_cols:(r + 1) * n_cols]
    top = max(row)
    exps = [math.exp(x - top) for x in row]
    total = sum(exps)
    for c in range(n_cols):
        worst = max(worst, abs(outputs[r * n_cols + c] - exps[c] / total))
print(f"kjitd's launch on {target}: largest difference from softmax computed here {worst:.2e}")
if worst > 2e-3:
    print("FAIL: kjitd's launch does not compute softmax")
    failures += 1

# Triton's own launch of the same TTIR, where it can launch.
own = subprocess.run([triton_python, "-c", r'''
import struct, sys
try:
    import torch
except ImportError:
    print("SKIP: no torch in this Triton build (Triton's launcher takes its stream from torch)")
    sys.exit(77)
import triton
from triton.backends.compiler import GPUTarget
ttir, inb, outb, n, rows, cc = sys.argv[1:7]
n, rows = int(n), int(rows)
kernel = triton.compile(ttir, target=GPUTarget("cuda", int(cc), 32), options={"num_warps": 8})
x = torch.frombuffer(bytearray(open(inb, "rb").read()), dtype=torch.float16).cuda()
y = torch.zeros_like(x)
kernel[(rows, 1, 1)](y, x, n, n, n)
torch.cuda.synchronize()
open(outb, "wb").write(y.cpu().numpy().tobytes())
''', ttir, os.path.join(work, "in.bin"), os.path.join(work, "triton.bin"), str(n_cols), str(rows), cc.replace(".", "")])
if own.returncode == 77:
    print("Triton's own launch: skipped (no torch)")
elif own.returncode != 0:
    print("FAIL: Triton's own launch failed")
    failures += 1
else:
    with open(os.path.join(work, "triton.bin"), "rb") as f:
        same = f.read() == through_kjit
    print(f"Triton's own launch: {'the same bytes' if same else 'DIFFERENT bytes'} as kjitd's")
    failures += 0 if same else 1
sys.exit(1 if failures else 0)
