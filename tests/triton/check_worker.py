"""Checks kjit's Triton worker script against a Triton build, without pytest.

    python3 tests/triton/check_worker.py BUILD_PYTHON [--targets cuda:90,hip:gfx942]
        [--kernels matmul,softmax] [--full] [--jobs 2]

Starts src/backends/triton/kjit_triton_worker.py the way kjitd does
(`python -I -B -c <script>`, a minimal environment, a private working
directory; the children after the first with the build's description, as
kjitd starts a job's interpreter) and speaks its framing (4-byte
little-endian length + JSON).
Checks: describe's fields; a description of another build refused, the
build's own taken without probing; each corpus kernel (tests/triton/data, and
data/tlx where the build has TLX) compiled through one warm child is
byte-identical (binary) and metadata-equal to reference_compile.py in a fresh
process; several jobs in one child; bad inputs answered with ok:false, the
right code and a log, each followed by a good job; a pass plugin load; that
the child starts no program describe did not name. Prints timings and
`N passed, M failed` last; exits 1 on any failure.

The default matrix is a subset that runs in about three minutes on two
cores; --full runs every kernel on cuda:80, 90, 100, 107, 120 and hip:gfx942,
gfx950.
"""
import argparse
import base64
import concurrent.futures
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

from heavy_module import heavy_ttir

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "src", "backends", "triton", "kjit_triton_worker.py")
FULL_TARGETS = ["cuda:80", "cuda:90", "cuda:100", "cuda:107", "cuda:120", "hip:gfx942", "hip:gfx950"]
DEFAULT_TARGETS = ["cuda:80", "cuda:90", "cuda:100", "hip:gfx942"]
DEFAULT_KERNELS = ["matmul", "attention_fwd", "persistent_matmul_tma", "softmax", "fp8_matmul",
                   "tlx_pipelined_matmul"]

# Prepended to the script in one child: records every program the child
# (Triton) starts, through Python's audit events, in the file $KJIT_EXEC_LOG.
AUDIT_PRELUDE = r'''
import os as _os, sys as _sys
_exec_log = _os.environ.pop("KJIT_EXEC_LOG")
def _audit(event, args):
    if event in ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system"):
        with open(_exec_log, "a") as _f:
            _f.write(repr((event, str(args[0]))) + "\n")
_sys.addaudithook(_audit)
'''


class Results:

    def __init__(self):
        self.passed = 0
        self.failed = []

    def check(self, condition, what, detail=""):
        if condition:
            self.passed += 1
        else:
            self.failed.append(what)
            print(f"FAIL {what}" + (f": {detail}" if detail else ""), flush=True)
        return condition


class Worker:
    """One child running the worker script."""

    def __init__(self, python, prelude="", extra_env=None, description=None):
        self.dir = tempfile.mkdtemp(prefix="kjit-triton-worker-")
        os.makedirs(os.path.join(self.dir, "tmp"))
        env = {"PATH": "/usr/bin:/bin", "HOME": self.dir, "TMPDIR": os.path.join(self.dir, "tmp"),
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}
        env.update(extra_env or {})
        if description is not None:
            # As kjitd starts a job's interpreter: with the build's description.
            env["KJIT_TRITON_DESCRIPTION"] = json.dumps(description)
        with open(SCRIPT) as f:
            script = prelude + f.read()
        self.stderr = open(os.path.join(self.dir, "stderr.txt"), "w+b")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([python, "-I", "-B", "-c", script], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, cwd=self.dir, env=env)

    def ask(self, request):
        body = json.dumps(request).encode()
        self.proc.stdin.write(struct.pack("<I", len(body)) + body)
        self.proc.stdin.flush()
        header = self.proc.stdout.read(4)
        if len(header) < 4:
            raise RuntimeError(f"the worker died (rc {self.proc.wait()}): {self.stderr_text()[-2000:]}")
        (size, ) = struct.unpack("<I", header)
        return json.loads(self.proc.stdout.read(size))

    def raw(self, data):
        # A frame of arbitrary bytes (not JSON).
        self.proc.stdin.write(struct.pack("<I", len(data)) + data)
        self.proc.stdin.flush()
        (size, ) = struct.unpack("<I", self.proc.stdout.read(4))
        return json.loads(self.proc.stdout.read(size))

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stderr_text(self):
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")

    def close(self):
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=60)
        self.proc.stdout.close()
        self.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc


def parse_target(text):
    backend, arch = text.split(":", 1)
    if backend == "cuda":
        return {"backend": "cuda", "arch": int(arch), "warp_size": 32}
    return {"backend": "hip", "arch": arch, "warp_size": 64}


def corpus(describe):
    """[(kernel name, path, options)] of the corpus files this build can parse."""
    out = []
    # fbtriton's TLX corpus is TLX's own front end's TTIR, which only a build
    # with TLX compiled in takes (a plugin's TLX has a corpus of its own:
    # check_plugin_tlx).
    compiled_in = describe.get("tlx") and describe.get("tlx_provider", describe.get("distribution")) == \
        describe.get("distribution")
    dirs = [os.path.join(HERE, "data")] + ([os.path.join(HERE, "data", "tlx")] if compiled_in else [])
    for d in dirs:
        with open(os.path.join(d, "corpus.json")) as f:
            kernels = json.load(f)["kernels"]
        for file, options in sorted(kernels.items()):
            out.append((file[:-len(".ttir")], os.path.join(d, file), options))
    return out


def reference(python, path, target, options):
    """reference_compile.py in a fresh process: (binary, metadata text, ms, error)."""
    out = tempfile.mkdtemp(prefix="kjit-triton-ref-")
    try:
        argv = [python, os.path.join(HERE, "reference_compile.py"), path, "--target", target, "--out", out]
        for name, value in options.items():
            argv += ["--option", f"{name}={json.dumps(value) if isinstance(value, bool) else value}"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
        started = time.perf_counter()
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        wall_ms = (time.perf_counter() - started) * 1000
        if proc.returncode != 0:
            error_file = os.path.join(out, "error.txt")
            error = open(error_file).read() if os.path.exists(error_file) else proc.stdout.decode(errors="replace")
            return None, None, wall_ms, error
        with open(os.path.join(out, "result.json")) as f:
            result = json.load(f)
        with open(os.path.join(out, result["binary"]), "rb") as f:
            binary = f.read()
        with open(os.path.join(out, result["metadata"])) as f:
            metadata = f.read()
        return binary, metadata, wall_ms, None
    finally:
        shutil.rmtree(out, ignore_errors=True)


def check_describe(results, d, python):
    results.check(d.get("ok") is True, "describe ok", str(d)[:500])
    for key in ("distribution", "version", "name", "python", "backends", "cuda_archs", "hip_archs", "options",
                "refused_options", "libtriton_sha256", "ptxas", "executables", "read_paths", "plugins", "tlx"):
        results.check(key in d, f"describe has {key}")
    results.check(d.get("distribution") in ("triton", "fbtriton"), "describe distribution")
    results.check(d.get("name") == f"{d.get('distribution')}-{d.get('version')}", "describe name")
    results.check(set(d.get("backends", [])) <= {"nvidia", "amd"} and d.get("backends"), "describe backends")
    results.check(all(isinstance(a, int) for a in d.get("cuda_archs", [])) and 90 in d.get("cuda_archs", []),
                  "describe cuda_archs", str(d.get("cuda_archs")))
    results.check("gfx942" in d.get("hip_archs", []), "describe hip_archs", str(d.get("hip_archs")))
    kinds = {"int", "int?", "bool", "str", "str?", "float"}
    for backend, options in d.get("options", {}).items():
        results.check(all(k in kinds for k in options.values()), f"describe option types ({backend})")
        results.check("num_warps" in options and "ir_override" not in options, f"describe options ({backend})")
    for name in ("ir_override", "extern_libs", "arch", "backend_name"):
        results.check(name in d.get("refused_options", {}), f"describe refuses {name}")
    results.check(len(d.get("libtriton_sha256", "")) == 64, "describe libtriton_sha256")
    ptxas = d.get("ptxas", [])
    results.check(len(ptxas) >= 1 and all(os.path.isabs(p["path"]) and len(p["sha256"]) == 64 and p["version"]
                                          for p in ptxas), "describe ptxas", str(ptxas))
    results.check(all(os.path.isabs(p) and os.access(p, os.X_OK) for p in d.get("executables", [])),
                  "describe executables")
    prefix = os.path.realpath(os.path.dirname(os.path.dirname(python)))
    results.check(any(os.path.realpath(p) == prefix for p in d.get("read_paths", [])), "describe read_paths",
                  f"{prefix} not in {d.get('read_paths')}")
    results.check(all(p.endswith(".so") and os.path.isfile(p) for p in d.get("plugins", [])), "describe plugins")


def check_matrix(results, python, worker, d, targets, kernels, jobs, timings):
    """Every (kernel, target): the warm worker's answer against a fresh
    reference process (references run in parallel with the worker). A target
    describe does not list must be refused (failed_precondition). Triton
    aborts the process on some inputs (LLVM ERROR: Cannot select): a worker
    that dies where the reference dies too is restarted and counted as
    "both fail"; returns the matrix and the worker to go on with."""
    entries = [(k, p, o) for k, p, o in corpus(d) if kernels is None or k in kernels]
    cells = [(k, p, o, t) for t in targets for k, p, o in entries]
    matrix = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs - 1)) as pool:
        refs = {(k, t): pool.submit(reference, python, p, t, o) for k, p, o, t in cells}
        for kernel, path, options, target in cells:
            with open(path) as f:
                source = f.read()
            label = f"{kernel} {target}"
            started = time.perf_counter()
            try:
                answer = worker.ask({"op": "compile", "source": source, "target": parse_target(target),
                                     "options": options})
            except RuntimeError as e:
                answer = {"ok": False, "code": "crashed", "message": str(e)[:200], "log": ""}
                worker.close()
                worker = Worker(python, description=d)
                worker.ask({"op": "describe"})
            worker_ms = (time.perf_counter() - started) * 1000
            binary, metadata, ref_ms, ref_error = refs[(kernel, target)].result()
            spec = parse_target(target)
            listed = spec["arch"] in (d["cuda_archs"] if spec["backend"] == "cuda" else d["hip_archs"])
            if not listed:
                ok = results.check(answer.get("code") == "failed_precondition", f"{label}: not in describe, refused",
                                   str(answer.get("message")))
                matrix[label] = "refused (arch not built)" if ok else "MISMATCH (arch not listed)"
                print(f"  {label}: {answer.get('code')} {answer.get('message', '')[:100]}; reference: "
                      f"{'fails' if ref_error else 'compiles'}", flush=True)
                continue
            if answer.get("code") == "crashed":
                ok = results.check(ref_error is not None, f"{label}: the worker crashed, so must the reference")
                matrix[label] = "both crash (Triton aborts)" if ok else "MISMATCH (worker crashed)"
                print(f"  {label}: worker crashed; reference: "
                      f"{ref_error.strip().splitlines()[-1][:120] if ref_error else 'compiles'}", flush=True)
                continue
            if ref_error is not None:
                ok = results.check(not answer["ok"] and answer["code"] == "invalid_argument" and answer["log"],
                                   f"{label}: the reference fails, so must the worker",
                                   answer.get("message") or "worker succeeded")
                matrix[label] = "both fail" if ok else "MISMATCH (reference fails)"
                print(f"  {label}: reference fails ({ref_error.strip().splitlines()[-1][:120]}); worker: "
                      f"{answer.get('code')} {answer.get('message', '')[:120]}", flush=True)
                continue
            if not results.check(answer["ok"], f"{label}: worker compiles", answer.get("message")):
                print(answer.get("log", "")[-3000:])
                matrix[label] = "MISMATCH (worker fails)"
                continue
            same_binary = base64.b64decode(answer["binary_b64"]) == binary
            same_metadata = json.loads(answer["metadata_json"]) == json.loads(metadata)
            if not results.check(same_binary, f"{label}: identical binary"):
                keep = os.path.join(tempfile.gettempdir(), "kjit-triton-mismatch", label.replace(" ", "-"))
                os.makedirs(keep, exist_ok=True)
                with open(os.path.join(keep, "worker." + answer["binary_ext"]), "wb") as f:
                    f.write(base64.b64decode(answer["binary_b64"]))
                with open(os.path.join(keep, "reference." + answer["binary_ext"]), "wb") as f:
                    f.write(binary)
                for name, text in answer["files"].items():
                    with open(os.path.join(keep, "worker-" + name.lstrip("@")), "w") as f:
                        f.write(text)
                print(f"  (both binaries kept in {keep})")
            results.check(same_metadata, f"{label}: equal metadata",
                          _metadata_diff(json.loads(answer["metadata_json"]), json.loads(metadata)))
            results.check(answer["metadata_json"] == metadata, f"{label}: identical metadata text")
            matrix[label] = "identical" if same_binary and same_metadata else "DIFFERENT"
            timings.append((label, worker_ms, ref_ms, [s["stage"] for s in answer["stages"]]))
            print(f"  {label}: {matrix[label]}; worker {worker_ms:.0f} ms, fresh reference {ref_ms:.0f} ms",
                  flush=True)
    return matrix, worker


def _metadata_diff(a, b):
    keys = sorted(set(a) | set(b))
    return "; ".join(f"{k}: {a.get(k)!r} != {b.get(k)!r}" for k in keys if a.get(k) != b.get(k))[:800]


GOOD_TTIR = os.path.join(HERE, "data", "softmax.ttir")
NOT_MLIR = "this is not MLIR\n"
UNKNOWN_OP = """module {
  tt.func public @k(%p: !tt.ptr<f32>) {
    "kjit.nonsense"() : () -> ()
    tt.return
  }
}
"""
# Parses, then fails verification: tt.store of an i32 through an f32 pointer.
VERIFY_FAILS = """module {
  tt.func public @k(%p: !tt.ptr<f32>) {
    %c = arith.constant 1 : i32
    "tt.store"(%p, %c) {cache = 1 : i32, evict = 1 : i32} : (!tt.ptr<f32>, i32) -> ()
    tt.return
  }
}
"""


def check_bad_inputs(results, worker, d):
    with open(GOOD_TTIR) as f:
        good_source = f.read()
    cuda90 = {"backend": "cuda", "arch": 90, "warp_size": 32}
    good = {"op": "compile", "source": good_source, "target": cuda90, "options": {"num_warps": 8}}
    tlx_path = os.path.join(HERE, "data", "tlx", "tlx_pipelined_matmul.ttir")
    with open(tlx_path) as f:
        tlx_source = f.read()
    unknown_hip = {"backend": "hip", "arch": "gfx999", "warp_size": 64}
    cases = [
        ("not MLIR", dict(good, source=NOT_MLIR), "invalid_argument"),
        ("unknown op", dict(good, source=UNKNOWN_OP), "invalid_argument"),
        ("verification failure", dict(good, source=VERIFY_FAILS), "invalid_argument"),
        ("unknown option", dict(good, options={"num_wraps": 8}), "invalid_argument"),
        ("num_warps=3", dict(good, options={"num_warps": 3}), "invalid_argument"),
        ("num_warps as a string", dict(good, options={"num_warps": "8"}), "invalid_argument"),
        ("refused ir_override", dict(good, options={"ir_override": "/etc/passwd"}), "invalid_argument"),
        ("refused ptx_options", dict(good, options={"ptx_options": "--options-file /etc/passwd"}), "invalid_argument"),
        ("unknown cuda arch", dict(good, target={"backend": "cuda", "arch": 99, "warp_size": 32}),
         "failed_precondition"),
        ("unknown hip arch", dict(good, target=unknown_hip), "failed_precondition"),
        ("unknown backend", dict(good, target={"backend": "metal", "arch": 1, "warp_size": 32}), "invalid_argument"),
        ("unknown ir", dict(good, ir="ptx"), "invalid_argument"),
        ("no source", {"op": "compile", "target": cuda90}, "invalid_argument"),
        ("unknown op name", {"op": "fly"}, "invalid_argument"),
    ]
    if not d.get("tlx"):
        cases.append(("TLX TTIR on a build without TLX", dict(good, source=tlx_source, options={"num_warps": 4}),
                      "invalid_argument"))
    if "cuda" in d["options"] and 107 not in d["cuda_archs"]:
        cases.append(("sm_107 on a build whose ptxas lacks it", dict(good, target=dict(cuda90, arch=107)),
                      "failed_precondition"))
    for what, request, code in cases:
        answer = worker.ask(request)
        results.check(not answer["ok"] and answer.get("code") == code, f"bad input {what}: {code}",
                      f"{answer.get('code')} {answer.get('message')}")
        results.check(bool(answer.get("message")), f"bad input {what}: a message")
        needs_log = what in ("not MLIR", "unknown op", "verification failure", "TLX TTIR on a build without TLX")
        if needs_log:
            results.check(bool(answer.get("log", "").strip()), f"bad input {what}: a log")
        print(f"  {what}: {answer.get('code')}: {answer.get('message')}"
              + (f" | log: {answer['log'].strip().splitlines()[0][:150]}" if answer.get("log", "").strip() else ""),
              flush=True)
        after = worker.ask(good)
        results.check(after["ok"], f"a good job after {what}", after.get("message"))
    answer = worker.ask(dict(good, options={"num_wraps": 8}))
    results.check("num_warps" in answer.get("message", ""), "unknown option lists the known ones",
                  answer.get("message"))
    answer = worker.raw(b"\xff not json")
    results.check(not answer["ok"] and answer["code"] == "invalid_argument", "a frame that is not JSON")
    results.check(worker.ask(good)["ok"], "a good job after a frame that is not JSON")


def check_plugin(results, worker, d):
    plugin = next((p for p in d["plugins"] if p.endswith("libTritonPluginsTestLib.so")), None)
    if not results.check(plugin is not None, "the build ships libTritonPluginsTestLib.so"):
        return
    with open(GOOD_TTIR) as f:
        source = f.read()
    request = {"op": "compile", "source": source, "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
               "options": {"num_warps": 8}}
    before = worker.ask(request)
    answer = worker.ask(dict(request, plugins=[plugin]))
    if answer["ok"]:
        results.check(True, "plugin load")
        results.check(answer["binary_b64"] == before["binary_b64"], "loading the plugin leaves the cubin as it was")
        again = worker.ask(dict(request, plugins=[plugin]))
        results.check(again["ok"], "a second job naming the loaded plugin")
        print(f"  plugin {os.path.basename(plugin)}: loaded", flush=True)
    else:
        # Builds without passes.plugin.extend_with say so.
        results.check(answer["code"] == "failed_precondition", "plugin load: ok or failed_precondition",
                      f"{answer['code']} {answer['message']}")
        print(f"  plugin: {answer['code']}: {answer['message']}", flush=True)
    answer = worker.ask(dict(request, plugins=["relative/lib.so"]))
    results.check(not answer["ok"], "a relative plugin path is refused")


def proc_times(pid):
    """(own CPU s, reaped children's CPU s) of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def proc_limit(pid, name):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith(name):
                return line[len(name):].split()[0]
    return None


def live_children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return f.read().split()


def check_history(results, python, d):
    """A job's bytes do not depend on what the worker compiled before: the
    persistent matmul for gfx950 after the attention kernel, and first, each
    equal to a fresh process's (Triton's AMD back end, in place, gave other
    bytes after the attention kernel)."""
    if "gfx950" not in d["hip_archs"]:
        print("  (no gfx950 in this build: skipped)")
        return
    entries = {k: (p, o) for k, p, o in corpus(d)}
    if "matmul_persistent" not in entries or "attention_fwd" not in entries:
        return
    path, options = entries["matmul_persistent"]
    binary, _, _, error = reference(python, path, "hip:gfx950", options)
    with open(path) as f:
        source = f.read()
    request = {"op": "compile", "source": source, "target": parse_target("hip:gfx950"), "options": options}
    att_path, att_options = entries["attention_fwd"]
    with open(att_path) as f:
        attention = {"op": "compile", "source": f.read(), "target": parse_target("hip:gfx950"),
                     "options": att_options}
    for order in ("first", "after attention_fwd"):
        worker = Worker(python, description=d)
        try:
            worker.ask({"op": "describe"})
            if order != "first":
                worker.ask(attention)
            answer = worker.ask(request)
        finally:
            worker.close()
        if error is not None:
            results.check(not answer["ok"], f"history: matmul_persistent gfx950 {order}: fails as Triton does")
            continue
        got = base64.b64decode(answer["binary_b64"]) if answer.get("ok") else b""
        results.check(got == binary, f"history: matmul_persistent gfx950 {order}: Triton's bytes",
                      f"{len(got)} bytes against {len(binary)}")
        print(f"  matmul_persistent gfx950 {order}: {len(got)} bytes, Triton's {len(binary)}", flush=True)


def check_job_children(results, python, d):
    """Every job runs in a child of the interpreter: the interpreter compiles
    nothing itself, holds no job's limit, keeps no child, and each job's
    bounds (CPU, time, memory) are its child's alone, from zero."""
    with open(GOOD_TTIR) as f:
        good_source = f.read()
    good = {"op": "compile", "source": good_source, "target": parse_target("cuda:90"), "options": {"num_warps": 8}}
    worker = Worker(python, description=d)
    try:
        worker.ask({"op": "describe"})
        # The first job's parent fills its caches (Triton's own hash...):
        # measured from the second on.
        results.check(worker.ask(good)["ok"], "a first job")
        pid = worker.proc.pid
        rss_before = worker.rss_kib()
        # A stream adding up to more than twice each job's bound: matmuls,
        # each bounded to 2.5 times what one costs on this machine (measured
        # here: a loaded machine makes each job's CPU larger), whole seconds.
        matmul = {k: (p, o) for k, p, o in corpus(d)}["matmul"]
        with open(matmul[0]) as f:
            stream = dict(good, source=f.read(), options=matmul[1])
        results.check(worker.ask(stream)["ok"], "one matmul, unbounded")
        _, children_before = proc_times(pid)
        results.check(worker.ask(dict(stream, options=dict(matmul[1], num_warps=8)))["ok"], "a second matmul, unbounded")
        own_mid, children_mid = proc_times(pid)
        one_job = max(children_mid - children_before, 0.05)
        bound = max(1, math.ceil(2.5 * one_job))
        jobs = math.ceil(2 * bound / one_job) + 2
        stream["bounds"] = {"cpu_seconds": bound}
        answers = [worker.ask(dict(stream, options=dict(matmul[1], num_warps=4 + 4 * (i % 2)))) for i in range(jobs)]
        own_after, children_after = proc_times(pid)
        results.check(all(a["ok"] for a in answers), f"{jobs} jobs each bounded to {bound} s of CPU all compile "
                      f"(one took {one_job:.2f} s)", str([a.get("message") for a in answers if not a["ok"]]))
        children_cpu = children_after - children_mid
        results.check(children_cpu > 2 * bound, "their children's CPU adds up to more than twice one job's bound",
                      f"{children_cpu:.2f} s")
        own_cpu = own_after - own_mid
        results.check(own_cpu < 0.25 * jobs and own_cpu < children_cpu / 2,
                      "the interpreter itself compiled nothing (its own CPU is a fraction of its children's)",
                      f"{own_cpu:.2f} s own, {children_cpu:.2f} s children")
        rss_after = worker.rss_kib()
        results.check(rss_after < rss_before + 20 * 1024, "the interpreter's memory stays as it was",
                      f"{rss_before // 1024} -> {rss_after // 1024} MiB")
        results.check(proc_limit(pid, "Max cpu time") == "unlimited", "the interpreter has no CPU limit")
        results.check(proc_limit(pid, "Max address space") == "unlimited", "the interpreter has no memory limit")
        results.check(not live_children(pid), "no job's child outlives its answer", str(live_children(pid)))
        print(f"  {jobs} jobs: children {children_cpu:.2f} s of CPU, the interpreter {own_cpu:.2f} s; RSS "
              f"{rss_before // 1024} -> {rss_after // 1024} MiB", flush=True)

        if "cuda" in d["options"]:
            # Several times the bound in the compiling process's own CPU.
            request = {"op": "compile", "source": heavy_ttir(100), "target": parse_target("cuda:90"),
                       "options": {"num_warps": 4}, "ir": "ttir", "bounds": {"cpu_seconds": 1}}
            answer = worker.ask(request)
            results.check(not answer["ok"] and answer.get("code") == "resource_exhausted"
                          and answer.get("bound") == "cpu", "a job past its CPU bound: resource_exhausted, cpu",
                          f"{answer.get('code')} {answer.get('bound')} {answer.get('message')}")
            print(f"  CPU bound: {answer.get('code')} {answer.get('message')}", flush=True)
            answer = worker.ask(dict(request, bounds={"time_ms": 200}))
            results.check(not answer["ok"] and answer.get("code") == "deadline_exceeded"
                          and answer.get("bound") == "time", "a job past its time bound: deadline_exceeded, time",
                          f"{answer.get('code')} {answer.get('bound')} {answer.get('message')}")
            results.check(not live_children(pid), "a job stopped at its time bound leaves no process behind",
                          str(live_children(pid)))
        # A module whose parse alone needs far more memory than the bound.
        big = ", ".join("1.0" for _ in range(1 << 20))
        huge = good_source.replace("module {", "module {\n  tt.func private @kjit_big() -> tensor<1048576xf32> {\n"
                                   f"    %c = arith.constant dense<[{big}]> : tensor<1048576xf32>\n"
                                   "    tt.return %c : tensor<1048576xf32>\n  }", 1)
        answer = worker.ask(dict(good, source=huge, bounds={"memory_bytes": 1 << 20}))
        results.check(not answer["ok"] and answer.get("code") == "resource_exhausted"
                      and answer.get("bound") == "memory", "a job past its memory bound: resource_exhausted, memory",
                      f"{answer.get('code')} {answer.get('bound')} {answer.get('message')}")
        print(f"  memory bound: {answer.get('code')} {answer.get('message')}", flush=True)
        after = worker.ask(good)
        results.check(after["ok"], "a good job after the bounded ones", after.get("message"))
    finally:
        worker.close()


def check_plugin_tlx(results, python, worker, d):
    """A build whose TLX is a plugin package (Triton 3.8 + uTLX): its corpus
    (data/utlx, one file per target: uTLX's TTIR for NVIDIA already carries
    its target) through the warm worker, byte-identical to a fresh process
    of the build that imports the plugin as its users do; and the plugin
    listed with its version and digests."""
    plugins = {p["distribution"]: p for p in d.get("installed_plugins", [])}
    utlx = plugins.get("triton-utlx")
    if not results.check(utlx is not None, "describe lists triton-utlx among the build's plugins",
                         str(d.get("installed_plugins"))):
        return
    results.check(d.get("tlx") and d.get("tlx_provider") == "triton-utlx", "TLX comes from triton-utlx",
                  str(d.get("tlx_provider")))
    results.check(all(len(lib["sha256"]) == 64 for lib in utlx["libraries"]) and utlx["libraries"]
                  and len(utlx["stages_hook_sha256"]) == 64, "the plugin's library and hook digests",
                  json.dumps(utlx))
    folder = os.path.join(HERE, "data", "utlx")
    with open(os.path.join(folder, "corpus.json")) as f:
        listing = json.load(f)
    for file, options in sorted(listing["kernels"].items()):
        target = listing["targets"][file]
        path = os.path.join(folder, file)
        binary, metadata, _, error = reference(python, path, target, options)
        with open(path) as f:
            answer = worker.ask({"op": "compile", "source": f.read(), "target": parse_target(target),
                                 "options": options, "ir": "ttir"})
        label = f"uTLX {file[:-len('.ttir')]}"
        if error is not None:
            results.check(not answer["ok"], f"{label}: fails as the build's own process does", answer.get("message"))
            continue
        if not results.check(answer["ok"], f"{label}: compiles", answer.get("message")):
            continue
        results.check(base64.b64decode(answer["binary_b64"]) == binary, f"{label}: identical binary")
        results.check(answer["metadata_json"] == metadata, f"{label}: identical metadata text",
                      _metadata_diff(json.loads(answer["metadata_json"]), json.loads(metadata)))
        print(f"  {label} {target}: {len(binary)} bytes", flush=True)


def check_executables(results, python, d):
    """One child with an audit hook, given the build's description as kjitd
    gives it: it answers describe with that description, probing nothing
    (no interpreter started), and every program it starts must be one of
    describe's executables."""
    log = tempfile.mktemp(prefix="kjit-exec-log-")
    worker = Worker(python, prelude=AUDIT_PRELUDE, extra_env={"KJIT_EXEC_LOG": log}, description=d)
    try:
        given = worker.ask({"op": "describe"})
        results.check(given == d, "a child given the description answers describe with it")
        with open(GOOD_TTIR) as f:
            source = f.read()
        for target in ("cuda:80", "cuda:90", "cuda:100", "hip:gfx942"):
            answer = worker.ask({"op": "compile", "source": source, "target": parse_target(target),
                                 "options": {"num_warps": 8}})
            results.check(answer["ok"], f"audited compile {target}", answer.get("message"))
        started = set()
        if os.path.exists(log):
            with open(log) as f:
                for line in f:
                    started.add(eval(line)[1])  # noqa: S307 - our own repr() lines
        # describe itself runs ptxas --version/--help; compiles run ptxas.
        unexpected = {p for p in started if os.path.realpath(p) not in {os.path.realpath(e) for e in d["executables"]}}
        results.check(not unexpected, "the child starts only describe's executables", str(sorted(unexpected)))
        # describe's probe is an interpreter of the build (the child's own
        # python); a compile starts none.
        interpreter = os.path.realpath(python)
        results.check(not {p for p in started if os.path.realpath(p) == interpreter},
                      "a child given the description probes no target again (starts no interpreter)", str(sorted(started)))
        print(f"  programs started: {sorted(started)}", flush=True)
    finally:
        worker.close()
        if os.path.exists(log):
            os.remove(log)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("python", help="a Triton build's interpreter")
    parser.add_argument("--targets", help="comma-separated, e.g. cuda:90,hip:gfx942")
    parser.add_argument("--kernels", help="comma-separated corpus kernel names")
    parser.add_argument("--full", action="store_true", help="every kernel on every target")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    # Not resolved: a venv's python is a symlink, and resolving it leaves the venv.
    args.python = os.path.abspath(args.python)
    targets = args.targets.split(",") if args.targets else FULL_TARGETS if args.full else DEFAULT_TARGETS
    kernels = set(args.kernels.split(",")) if args.kernels else None if args.full else set(DEFAULT_KERNELS)

    results = Results()
    # The first child is given a description of another build (as a daemon
    # might hold after an upgrade): it must not take it, and describes itself.
    other_build = {"ok": True, "distribution": "triton", "version": "0.0.1", "triton_version": "0.0.1",
                   "python": "0.0", "name": "triton-0.0.1", "options": {}, "cuda_archs": [], "hip_archs": []}
    worker = Worker(args.python, description=other_build)
    d = worker.ask({"op": "describe"})
    start_s = time.perf_counter() - worker.started
    check_describe(results, d, args.python)
    results.check("is not of this build" in worker.stderr_text() and d.get("version") != "0.0.1",
                  "a child given another build's description describes itself, saying why",
                  worker.stderr_text()[-500:])
    print(f"{d.get('name')}: describe answered {start_s:.2f} s after spawn", flush=True)
    print(json.dumps({k: d.get(k) for k in ("cuda_archs", "hip_archs", "options", "refused_options", "tlx",
                                             "stage_timing")}, indent=None), flush=True)

    with open(GOOD_TTIR) as f:
        answer = worker.ask({"op": "compile", "source": f.read(), "target": parse_target("cuda:90"),
                             "options": {"num_warps": 8}})
    results.check(answer["ok"], "first compile", answer.get("message"))
    print(f"RSS after one compile: {worker.rss_kib() / 1024:.0f} MiB; stages {answer.get('stages')}; "
          f"files {sorted(answer.get('files', {}))}", flush=True)
    results.check(answer.get("name") == "softmax" and answer.get("binary_ext") == "cubin", "name and binary_ext")

    timings = []
    print("matrix:", flush=True)
    matrix, worker = check_matrix(results, args.python, worker, d, targets, kernels, args.jobs, timings)
    print("bad inputs:", flush=True)
    check_bad_inputs(results, worker, d)
    print("plugins:", flush=True)
    check_plugin(results, worker, d)
    if d.get("installed_plugins"):
        print("plugin TLX:", flush=True)
        check_plugin_tlx(results, args.python, worker, d)
    rss = worker.rss_kib()
    rc = worker.close()
    results.check(rc == 0, "the child exits 0 at EOF", str(rc))
    print("executables:", flush=True)
    check_executables(results, args.python, d)
    print("a child per job:", flush=True)
    check_job_children(results, args.python, d)
    print("history:", flush=True)
    check_history(results, args.python, d)

    if timings:
        worker_total = sum(t[1] for t in timings)
        ref_total = sum(t[2] for t in timings)
        print(f"compile time: warm worker {worker_total / len(timings):.0f} ms per kernel, fresh reference process "
              f"{ref_total / len(timings):.0f} ms (ratio {worker_total / ref_total:.2f}); RSS at the end "
              f"{rss / 1024:.0f} MiB", flush=True)
    counts = {}
    for value in matrix.values():
        counts[value] = counts.get(value, 0) + 1
    print(f"matrix: {counts}", flush=True)
    print(f"{results.passed} passed, {len(results.failed)} failed")
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
