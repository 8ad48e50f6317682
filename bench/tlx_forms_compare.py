"""The same TLX kernels' Python source (`import triton.language.extra.tlx
as tlx`) compiled by the two TLX builds install-deps makes: fbtriton 3.7.4
(Meta's fork, TLX compiled in) and Triton 3.8 + uTLX (stock Triton with the
triton-utlx plugin, its `utlx_plugin` aliased to triton.language.extra.tlx).
It says which kernels each build takes for which target, and for a kernel
both build, at which stage their outputs first part and why, so that a
user choosing a build knows what changes with it.

Every kernel of tests/triton/utlx_kernels.py (tlx_kernels.py's included) is
tried for sm_90, sm_100 and gfx950 with each build's own interpreter in a
fresh process (no GPU: an explicit target), as that build's users compile:
no TRITON_* or UTLX_* variable from the caller, an empty Triton cache, the
uTLX build importing utlx_plugin. The stages compared are the compiled
kernel's asm: ttir, ttgir, llir, ptx or amdgcn, cubin or hsaco. A cell says
"same" (bytes), "loc" (equal once source locations and debug info are left
out), "=ops" (the same operations as many times each: names, layouts or
attributes differ) or "ops" (operation counts differ). Two builds of
different Triton versions part at the TTIR already, so "first differs" and
its why (read off the two TTIRs) say how far each front end lowered; the
next columns say where, from the TTGIR on, the code itself first differs
(operation counts) and why, naming the causes it recognises (the
pipeliner's async wait count, wgmma waits, uTLX's tlx.local_alias, barrier
lowering) and otherwise the ops whose counts differ most.

    python3 bench/tlx_forms_compare.py [--jobs 2] [--markdown]
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILDS = {"fbtriton 3.7.4": REPO / ".deps" / "triton-builds" / "fbtriton-3.7.4" / "bin" / "python",
          "3.8 + uTLX": REPO / ".deps" / "triton-builds" / "triton-3.8.0" / "bin" / "python"}
TARGETS = ("cuda:90", "cuda:100", "hip:gfx950")
KERNELS = ("tlx_pipelined_matmul", "utlx_async_load_matmul", "utlx_aliased_epilogue_matmul", "utlx_async_dot_matmul")
STAGES = (("ttir", "ttir"), ("ttgir", "ttgir"), ("llir", "llir"), ("ptx", "amdgcn"), ("cubin", "hsaco"))


def child(kernel: str, target: str, out: str):
    """In the build's interpreter: compile one kernel and write its asm."""
    cache = tempfile.mkdtemp(prefix="kjit-tlx-forms-")
    os.environ["TRITON_CACHE_DIR"] = cache
    os.chdir(cache)
    import importlib.util

    import triton
    try:
        import utlx_plugin  # noqa: F401  the uTLX build's stages hook, as its users import it
        tlx_from = "utlx_plugin"
    except ImportError:
        tlx_from = "triton"
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    spec = importlib.util.spec_from_file_location("utlx_kernels", REPO / "tests" / "triton" / "utlx_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn, signature, constexprs, options, attrs, _ = module.CORPUS[kernel]
    backend, _, arch = target.partition(":")
    gpu = GPUTarget("hip", arch, 64) if backend == "hip" else GPUTarget("cuda", int(arch), 32)
    result = {"triton": triton.__version__, "tlx": tlx_from}
    try:
        compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=gpu, options=options)
        for key, value in compiled.asm.items():
            data = value if isinstance(value, bytes) else str(value).encode()
            Path(out, key).write_bytes(data)
        result["asm"] = sorted(compiled.asm)
    except Exception as error:  # noqa: BLE001  (the build does not take this kernel for this target)
        result["error"] = error_line(error)
    Path(out, "result.json").write_text(json.dumps(result))
    shutil.rmtree(cache, ignore_errors=True)


def error_line(error: Exception) -> str:
    """One line for a refusal: the error, the one it came from, and for a
    CompilationError the source line it points at."""
    lines = [line for line in str(error).splitlines() if re.search("[A-Za-z]", line)]
    text = type(error).__name__
    if error.__cause__ is not None:
        cause = str(error.__cause__).strip().splitlines()
        text += " from %s%s" % (type(error.__cause__).__name__, ": " + cause[0] if cause else "")
    elif lines:
        text += ": " + lines[-1].strip()
    caret = [i for i, line in enumerate(str(error).splitlines()) if line.strip() == "^"]
    if caret and error.__cause__ is not None:
        text += " at `%s`" % str(error).splitlines()[caret[-1] - 1].strip()
    return text[:200]


def compile_in(build: str, kernel: str, target: str, work: Path) -> dict:
    out = work / build.replace(" ", "_").replace("+", "") / target.replace(":", "_") / kernel
    out.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITON_", "UTLX_", "KJIT_"))}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(BUILDS[build]), str(Path(__file__).resolve()), "--child", kernel, target, str(out)],
                          env=env, capture_output=True, text=True, timeout=900)
    if not (out / "result.json").exists():
        return {"error": "process failed (%d): %s" % (done.returncode, (done.stderr.strip().splitlines() or ["?"])[-1])}
    result = json.loads((out / "result.json").read_text())
    result["dir"] = out
    return result


LOC = re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)|^#loc.*$|^\s*\.loc\s.*$|^\s*\.file\s.*$|, !dbg !\d+|^!\d+ = .*$",
                 re.M)
MLIR_OP = re.compile(r"^\s*(?:%[^=]*=\s*)?\"?([a-z_]\w*\.[\w.]+)")
ASYNC_WAIT = re.compile(r"\{num = (\d+) : i32\}")


def without_locations(text: str) -> str:
    return "\n".join(line.rstrip() for line in LOC.sub("", text).splitlines() if line.strip())


def ops(stage: str, text: str) -> Counter:
    """The stage's operations and how many of each: MLIR ops (an async
    wait with its count), LLVM instructions and intrinsics called, PTX or
    AMDGCN mnemonics (cp.async.wait_group with its count). Two outputs with
    the same counts differ only in names, layouts, attributes or order."""
    counts = Counter()
    for line in without_locations(text).splitlines():
        if stage in ("ttir", "ttgir"):
            m = MLIR_OP.match(line)
            if m:
                op = m.group(1)
                if op == "ttg.async_wait":
                    op += "{num=%s}" % ASYNC_WAIT.search(line).group(1)
                counts[op] += 1
        elif stage == "llir":
            if line.startswith("  ") and not line.lstrip().startswith(";"):
                call = re.search(r"\bcall\b.*?@([\w.$]+)\(", line)
                words = line.split("=", 1)[-1].split() if " = " in line else line.split()
                counts["call " + call.group(1) if call else words[0]] += 1
        else:
            words = line.split()
            if words[0].startswith("@"):
                words = words[1:]
            if not words or words[0][0] in ".;/{}$)" or words[0].endswith(":"):
                continue
            op = words[0]
            if op == "cp.async.wait_group":
                op += " " + words[1].rstrip(";")
            counts[op] += 1
    return counts


def op_delta(a: Counter, b: Counter, limit: int = 4) -> str:
    """The ops whose counts differ most, fbtriton's count -> uTLX's."""
    keys = sorted((k for k in set(a) | set(b) if a[k] != b[k]), key=lambda k: (-abs(a[k] - b[k]), k))
    text = ", ".join("%s %d->%d" % (k, a[k], b[k]) for k in keys[:limit])
    return text + (" (+%d more)" % (len(keys) - limit) if len(keys) > limit else "")


def ttir_why(a: str, b: str) -> str:
    """What sets the two TTIRs apart: how far each front end lowered."""
    reasons = []
    blocked_a, blocked_b = "#ttg.blocked" in a, "#ttg.blocked" in b
    if blocked_b and not blocked_a:
        reasons.append("uTLX's TTIR is already TritonGPU IR (blocked layouts); fbtriton's lays out TLX buffers only")
    elif blocked_a and not blocked_b:
        reasons.append("fbtriton's TTIR is already TritonGPU IR (blocked layouts); uTLX's lays out TLX buffers only")
    target_a, target_b = "ttg.target" in a, "ttg.target" in b
    if target_a != target_b:
        reasons.append("only %s's names its target" % ("fbtriton" if target_a else "uTLX"))
    mark = "tlx.has_explicit_local_mem_access"
    if (mark in a) != (mark in b):
        reasons.append("only %s's has %s" % ("fbtriton" if mark in a else "uTLX", mark))
    if not reasons:
        reasons.append("first: " + first_difference(a, b))
    return "; ".join(reasons)


def first_difference(a: str, b: str) -> str:
    la, lb = without_locations(a).splitlines(), without_locations(b).splitlines()
    for x, y in zip(la, lb):
        if x != y:
            return "%r vs %r" % (x.strip()[:60], y.strip()[:60])
    return "%d vs %d lines" % (len(la), len(lb))


def why(stage: str, fb: bytes, ut: bytes) -> str:
    """What the two outputs of the first stage that differs show."""
    if stage in ("cubin", "hsaco"):
        return "binaries only (%d vs %d bytes)" % (len(fb), len(ut))
    a, b = fb.decode("utf-8", "replace"), ut.decode("utf-8", "replace")
    if stage == "ttir":
        return ttir_why(a, b)
    if without_locations(a) == without_locations(b):
        return "source locations/debug info only"
    delta = op_delta(ops(stage, a), ops(stage, b))
    return ("ops: " + delta) if delta else "same ops; first: " + first_difference(a, b)


def ops_why(stage: str, a: Counter, b: Counter) -> str:
    """The causes recognised in two op counts (fbtriton's, uTLX's), else
    the ops whose counts differ most."""
    reasons = []
    waits_a = sorted(k for k in a if k.startswith("ttg.async_wait"))
    waits_b = sorted(k for k in b if k.startswith("ttg.async_wait"))
    if waits_a != waits_b or any(a[k] != b[k] for k in waits_a):
        reasons.append("pipeliner's wait count: %s -> %s" % (
            " ".join("%sx%d" % (k[len("ttg.async_wait"):], a[k]) for k in waits_a),
            " ".join("%sx%d" % (k[len("ttg.async_wait"):], b[k]) for k in waits_b)))
    if b["tlx.local_alias"] and not a["tlx.local_alias"]:
        reasons.append("uTLX keeps tlx.local_alias to its llir stage (fbtriton: ttg.memdesc_reinterpret)")
    if a["ttng.warp_group_dot_wait"] != b["ttng.warp_group_dot_wait"]:
        reasons.append("wgmma waits: ttng.warp_group_dot_wait %d -> %d" % (a["ttng.warp_group_dot_wait"],
                                                                          b["ttng.warp_group_dot_wait"]))
    if a["fence"] != b["fence"] or a["call llvm.amdgcn.s.waitcnt"] != b["call llvm.amdgcn.s.waitcnt"]:
        reasons.append("barrier lowering: fence %d -> %d, llvm.amdgcn.s.waitcnt %d -> %d" % (
            a["fence"], b["fence"], a["call llvm.amdgcn.s.waitcnt"], b["call llvm.amdgcn.s.waitcnt"]))
    return "; ".join(reasons) if reasons else op_delta(a, b, 3)


def compare(fb: dict, ut: dict, backend: str):
    """Per stage: same, loc, =ops (same op counts) or ops (diff for
    binaries); the first stage whose bytes differ and why; from the TTGIR on
    (the TTIR's form aside), the first stage whose ops differ and why."""
    cells, first, reason, first_ops, ops_reason = [], None, "", None, ""
    for nvidia, amd in STAGES:
        key = amd if backend == "hip" else nvidia
        a, b = fb["dir"] / key, ut["dir"] / key
        if not (a.exists() and b.exists()):
            cells.append("-")
            continue
        da, db = a.read_bytes(), b.read_bytes()
        if da == db:
            cells.append("same")
            continue
        if first is None:
            first, reason = key, why(key, da, db)
        if key in ("cubin", "hsaco"):
            cells.append("diff")
            if first_ops is None:
                first_ops, ops_reason = key, "binaries only: %d vs %d bytes" % (len(da), len(db))
            continue
        ta, tb = da.decode("utf-8", "replace"), db.decode("utf-8", "replace")
        if without_locations(ta) == without_locations(tb):
            cells.append("loc")
            continue
        oa, ob = ops(key, ta), ops(key, tb)
        cells.append("=ops" if oa == ob else "ops")
        if oa != ob and first_ops is None and key != "ttir":
            first_ops, ops_reason = key, ops_why(key, oa, ob)
    return cells, first or "none", reason or "identical", first_ops or "none", ops_reason or "-"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(*sys.argv[2:5])
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2, help="processes at a time")
    parser.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    parser.add_argument("--keep", help="keep every stage's output under this directory")
    args = parser.parse_args()
    for build, python in BUILDS.items():
        if not python.exists():
            raise SystemExit("no %s build at %s (scripts/install-deps.sh installs it)" % (build, python))
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kjit-tlx-forms-"))
    try:
        jobs = [(b, k, t) for t in TARGETS for k in KERNELS for b in BUILDS]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = dict(zip(jobs, pool.map(lambda j: compile_in(*j, work), jobs)))
        versions = {b: next((r["triton"] for (bb, _, _), r in results.items() if bb == b and "triton" in r), "?")
                    for b in BUILDS}
        fb_name, ut_name = BUILDS
        header = ("kernel", "target", "fbtriton", "3.8+uTLX", "ttir", "ttgir", "llir", "ptx/amdgcn", "cubin/hsaco",
                  "first differs", "why", "ttgir on: ops first differ", "why (fbtriton -> uTLX)")
        rows, refusals = [], []
        for target in TARGETS:
            for kernel in KERNELS:
                fb, ut = results[(fb_name, kernel, target)], results[(ut_name, kernel, target)]
                for name, r in ((fb_name, fb), (ut_name, ut)):
                    if "error" in r:
                        refusals.append("%s, %s, %s: %s" % (kernel, target, name, r["error"]))
                if "error" in fb or "error" in ut:
                    rows.append((kernel, target, "no" if "error" in fb else "yes", "no" if "error" in ut else "yes")
                                + ("-", ) * 5 + ("-", "not built by both", "-", "-"))
                    continue
                cells, first, reason, first_ops, how = compare(fb, ut, target.partition(":")[0])
                rows.append((kernel, target, "yes", "yes", *cells, first, reason, first_ops, how))
        print("TLX kernels' Python source under fbtriton %s and Triton %s + uTLX (tlx from %s), no GPU" % (
            versions[fb_name], versions[ut_name],
            next((r["tlx"] for (b, _, _), r in results.items() if b == ut_name and "tlx" in r), "?")))
        print("same: byte-identical; loc: equal but for source locations and debug info; =ops: the same operations "
              "as many times each (names, layouts, attributes or order differ); ops: operation counts differ; "
              "diff: binaries differ")
        print()
        widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
        for n, row in enumerate([header] + rows):
            print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
            if n == 0:
                print("  ".join("-" * w for w in widths))
        if refusals:
            print()
            print("not built:")
            for line in refusals:
                print("  " + line)
        if args.markdown:
            print()
            print("| " + " | ".join(header) + " |")
            print("|" + "---|" * len(header))
            for row in rows:
                print("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
