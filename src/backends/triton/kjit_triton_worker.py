# kjit's Triton worker: run by a Triton build's interpreter (python -I -B) as
# a long-lived child of a confined kjit compile worker. Triton is imported
# once; then each request on stdin gets exactly one answer on stdout.
#
# Framing: a 4-byte little-endian length, then that many bytes of UTF-8 JSON
# (one object). Requests: {"op": "describe"}, {"op": "compile", ...},
# {"op": "pipeline", ...}, {"op": "check_plugins", ...} and
# {"op": "probe_targets", ...}; see describe(), compile_job(),
# pipeline_job(), check_plugins_job() and probe_targets_job(). The child
# exits 0 at EOF on stdin.
#
# Compiles go through plain triton.compile() of the source written to a file,
# with a cache manager that keeps every file Triton puts in memory and never
# hits, so the bytes are those of triton.compile() in a fresh process with
# no TRITON_* variables set (tests/triton/check_worker.py compares them).
#
# This text is embedded in kjitd as a C++ raw string (embed_script.cmake):
# it must never contain that literal's closing delimiter.

import base64
import dataclasses
import errno
import hashlib
import json
import os
import re
import shutil
import struct
import sys
import tempfile
import time
import traceback
import typing
import warnings

# The protocol owns the real stdout; fd 1 and sys.stdout become stderr, so
# whatever Triton, LLVM or a tool prints can never corrupt a frame.
PROTOCOL_OUT = os.fdopen(os.dup(1), "wb", buffering=0)
os.dup2(2, 1)
sys.stdout = sys.stderr

# Everything that changes what Triton does comes from the request, not the
# environment: drop the variables Triton (Python or C++) reads, then point
# its directories into the private working directory. TRITON_DEFAULT_FP_FUSION
# is not set although 3.9 warns without it: it is one of the variables Triton
# copies into the metadata and the cache key, so setting it would make every
# result differ from a plain triton.compile.
_ENV_PREFIXES = ("TRITON_", "MLIR_", "LLVM_", "NVPTX_", "AMDGCN_", "PROTON_", "UTLX_")
_ENV_NAMES = ("USE_IR_LOC", "USE_PTX_LOC", "DISABLE_LLVM_OPT", "DISABLE_PTXAS_OPT", "PTXAS_OPTIONS", "CC",
              "USE_STORED_HASH_ON_LOOKUP", "USE_STORED_HASH_ON_REHASH")
for _name in list(os.environ):
    if _name.startswith(_ENV_PREFIXES) or _name in _ENV_NAMES:
        del os.environ[_name]
# The description the daemon holds of this build (this script's answer to
# "describe", kept across the daemon's starts), taken instead of describing
# again once it is seen to be this build's: see describe(). Read before any
# job's child or tool is started, which must not carry it.
_GIVEN_DESCRIPTION = os.environ.pop("KJIT_TRITON_DESCRIPTION", "")
WORK_DIR = os.getcwd()
for _var, _sub in (("TRITON_HOME", "triton-home"), ("TRITON_CACHE_DIR", "triton-cache"),
                   ("TRITON_DUMP_DIR", "triton-dump"), ("TRITON_OVERRIDE_DIR", "triton-override")):
    os.environ[_var] = os.path.join(WORK_DIR, _sub)
# A build with the uTLX plugin (triton-utlx): its .pth, run at interpreter
# start even under -I, imported _utlx_autoregister, which appended
# libutlx.so's path to TRITON_PLUGIN_PATHS; the loop above deleted it. Put
# back what the .pth sets in a clean environment, before triton is imported
# (Triton 3.8 loads the libraries it names while libtriton is imported; the
# string is in Triton's cache key and metadata). Both calls are idempotent
# and also undo UTLX_NO_AUTOREGISTER.
_UTLX = sys.modules.get("_utlx_autoregister")
if _UTLX is not None:
    _UTLX.register()
    _UTLX.install_alias_finder()
# The variables the daemon's configuration gives the build's plugins
# ([[triton.plugin]] environment): set from configuration only (the loop
# above dropped kjitd's own), before Triton and its plugins are imported, as
# some read them then (uTLX: UTLX_NO_LAYOUT_PROPAGATION).
for _name, _value in json.loads(os.environ.pop("KJIT_TRITON_PLUGIN_ENVIRONMENT", "") or "{}").items():
    os.environ[_name] = _value
# The configured plugin libraries of a build that loads plugins from
# TRITON_PLUGIN_PATHS while libtriton is imported (Triton 3.8), after those
# of its installed plugin packages.
CONFIGURED_LIBRARIES = [p for p in os.environ.pop("KJIT_TRITON_PLUGIN_LIBRARIES", "").split(os.pathsep) if p]
if CONFIGURED_LIBRARIES:
    os.environ["TRITON_PLUGIN_PATHS"] = os.pathsep.join(
        [p for p in os.environ.get("TRITON_PLUGIN_PATHS", "").split(os.pathsep) if p] + CONFIGURED_LIBRARIES)



# A warm-up at idle priority that has not ended after this many seconds
# (a machine busy with other work starves it) ends the interpreter with
# EXIT_WARM_UP_STARVED: its worker starts another at ordinary priority.
WARM_UP_IDLE_SECONDS = 30
EXIT_WARM_UP_STARVED = 75


def _at_idle(fn):
    """fn() in a thread of its own at SCHED_IDLE (nice 19 where refused):
    a prestarted interpreter's warm-up must not compete with the clients'
    compiles, while the main thread, which forks every job's child, keeps
    its priority (a thread cannot raise its own back)."""
    import threading
    outcome = {}

    def run():
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            os.nice(19)
        try:
            outcome["value"] = fn()
        except BaseException as e:  # raised again in the main thread
            outcome["error"] = e

    thread = threading.Thread(target=run, name="kjit-warm-up", daemon=True)
    thread.start()
    thread.join(WARM_UP_IDLE_SECONDS)
    if thread.is_alive():
        sys.stderr.write(f"kjit Triton worker: the warm-up at idle priority did not end within "
                         f"{WARM_UP_IDLE_SECONDS} s (the machine is busy); ending, to be started again\n")
        sys.stderr.flush()
        os._exit(EXIT_WARM_UP_STARVED)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _import_triton():
    import triton  # noqa: F401
    if _UTLX is not None:
        import utlx_plugin  # noqa: F401
    for backend in ("nvidia", "amd"):
        try:
            __import__(f"triton.backends.{backend}.compiler")
        except Exception:
            pass  # describe() says which back ends there are


WARM_AT_IDLE = os.environ.pop("KJIT_TRITON_WARM_AT_IDLE", "") == "1"
if WARM_AT_IDLE:
    _at_idle(_import_triton)

import triton  # noqa: E402
from triton import knobs  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime.cache import CacheManager  # noqa: E402

if _UTLX is not None:
    # Its Python side, as the build's users import it: the stages hook
    # (chained below) and its patches. Before _install_stage_hook, and
    # before describe()'s import of triton.language.extra.tlx (aliased to
    # utlx_plugin), either of which would otherwise replace our hook.
    import utlx_plugin  # noqa: E402,F401

TRITON_DIR = os.path.dirname(os.path.abspath(triton.__file__))
# A log longer than this keeps its head and tail (a ptxas failure prints the
# whole PTX).
MAX_LOG = 1 << 20


class JobError(Exception):
    """A failure with the code the answer carries."""

    def __init__(self, code, message, log="", bound=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.log = log
        self.bound = bound  # "cpu", "memory" or "time": the job's bound that stopped it


# ---------------------------------------------------------------- cache


class MemoryCache(CacheManager):
    """Records every file Triton puts, in order, and never hits. The files
    are written too, under the working directory (the daemon empties it
    after each job, and so do we), since Triton reads the metadata and IR
    back from the paths put returns to build its CompiledKernel."""

    puts = []  # (file name, data) of the current job

    def __init__(self, key, override=False, dump=False):
        self.dir = os.path.join(WORK_DIR, "triton-cache", key)

    def get_file(self, filename):
        return None

    def get_group(self, filename):
        return None

    def put(self, data, filename, binary=True):
        if not isinstance(data, (bytes, bytearray, str)):
            data = str(data)  # an MLIR module: Triton writes its text
        MemoryCache.puts.append((filename, data))
        os.makedirs(self.dir, exist_ok=True)
        path = os.path.join(self.dir, filename)
        if isinstance(data, str):
            with open(path, "w", encoding="utf-8") as f:
                f.write(data)
        else:
            with open(path, "wb") as f:
                f.write(data)
        return path

    def put_group(self, filename, group):
        pass


knobs.cache.manager_class = MemoryCache
knobs.compilation.always_compile = True
# fbtriton asks the GPU driver for the shared memory size when it can (and
# runs /sbin/ldconfig -p to find libcuda), falling back to a table per
# capability: a compile must depend on the target, not on this machine's GPU.
# A libcuda directory without libcuda makes the driver unavailable at once.
if "libcuda_path" in dir(type(getattr(knobs, "nvidia", None))):
    knobs.nvidia.libcuda_path = os.path.join(WORK_DIR, "no-libcuda")

# ---------------------------------------------------------------- stage timing

_stage_times = []  # [(stage, ms)] of the current job


_PLUGIN_STAGES_HOOK = getattr(getattr(knobs, "runtime", None), "add_stages_inspection_hook", None)


def _stages_hook(*args):
    # Called with no arguments for a cache-key suffix: an empty one keeps the
    # hash (which is in the metadata) that of a plain triton.compile; a job
    # with edits adds their digest, as a plugin's hook would. Called as
    # (backend, stages, options, language, capability) to let us wrap the
    # stage functions; the wrappers time them and say which stage adds and
    # runs the passes.
    if not args:
        key, digest = _PLUGIN_STAGES_HOOK() if _PLUGIN_STAGES_HOOK is not None else ("", "")
        suffix_key, suffix_digest = _job.key_suffix()
        if not suffix_key:
            return key, digest
        return key + suffix_key, hashlib.sha256((digest + suffix_digest).encode()).hexdigest()
    if _PLUGIN_STAGES_HOOK is not None:
        _PLUGIN_STAGES_HOOK(*args)
    stages = args[1]
    for name, fn in list(stages.items()):
        stages[name] = _timed(name, fn)
    _job.stage_order = list(stages.keys())
    _job.stage_functions = stages
    return None


def _timed(name, fn):

    def run(src, metadata):
        start = time.perf_counter()
        _job.stage = name
        try:
            return fn(src, metadata)
        finally:
            _job.stage = None
            _stage_times.append({"stage": name, "ms": round((time.perf_counter() - start) * 1000, 3)})

    return run


def _install_stage_hook():
    runtime = getattr(knobs, "runtime", None)
    if runtime is None or not hasattr(runtime, "add_stages_inspection_hook"):
        return False
    runtime.add_stages_inspection_hook = _stages_hook
    return True


HAS_STAGE_HOOK = _install_stage_hook()

# ---------------------------------------------------------------- passes and edits

# Triton's stage functions build MLIR pass managers through the bindings of
# its `passes` modules (passes.ttir.add_combine, nvidia.passes.ttnvgpuir...)
# and run them. Wrapping the pass manager shows which MLIR passes each stage
# runs, by their argument names as get_pipeline_str prints them; wrapping
# the bindings lets a job's edits act where Triton adds a pass: a pass
# inserted before or after it, the pass dropped or replaced, or a stage
# given a pass list of its own. A job without edits calls every binding as
# Triton does, so its output is that of triton.compile.

_ir = triton._C.libtriton.ir
_TritonPassManager = _ir.pass_manager
_scratch_context = None


def _pass_names(pipeline):
    """'any(inline{...},triton-combine,canonicalize{...})' -> the top-level
    pass names ['inline', 'triton-combine', 'canonicalize']."""
    text = pipeline.strip()
    opening = text.find("(")
    if opening >= 0 and text.endswith(")"):
        text = text[opening + 1:-1]
    names, depth, start = [], 0, 0
    for i, c in enumerate(text + ","):
        if c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
        elif c == "," and depth == 0:
            entry = text[start:i].strip()
            if entry:
                names.append(re.split(r"[({]", entry, maxsplit=1)[0].strip())
            start = i + 1
    return names


def _scratch_pass_manager():
    global _scratch_context
    if _scratch_context is None:
        _scratch_context = _ir.context()
    return _TritonPassManager(_scratch_context)


class _Edits:
    """The edits of the current job and what its stages ran."""

    def __init__(self):
        self.reset([])

    def reset(self, edits):
        self.edits = edits  # dicts: op, anchor, pass, stage, passes, origin; "done" once applied
        self.stage = None
        self.stage_order = []
        self.stage_functions = {}
        self.ran = {}  # stage -> pass names its pass managers ran
        self.overridden = set()
        self.digest = hashlib.sha256(json.dumps(edits, sort_keys=True).encode()).hexdigest() if edits else ""

    def key_suffix(self):
        return ("-kjit-edits-" + self.digest, self.digest) if self.digest else ("", "")

    def record_run(self, pipeline):
        if self.stage is not None:
            self.ran.setdefault(self.stage, []).extend(_pass_names(pipeline))

    def add(self, pm, original, args, kwargs):
        if not self.edits or self.stage is None:
            return original(pm, *args, **kwargs)
        override = next((e for e in self.edits if e["op"] == "override-stage" and e["stage"] == self.stage), None)
        if override is not None:
            # The stage's own passes are dropped; its list goes in at the
            # first pass Triton adds.
            if self.stage not in self.overridden:
                self.overridden.add(self.stage)
                override["done"] = True
                for name in override["passes"]:
                    _add_pass_named(pm, name, override)
            return None
        names = _names_added(original, args, kwargs)
        matching = [e for e in self.edits if not e.get("done") and e.get("anchor") in names
                    and e.get("stage") in (None, self.stage)]
        if matching and len(names) != 1:
            raise JobError(_edit_fault(matching[0]['origin']), f"{matching[0]['origin']}: pass {matching[0]['anchor']} is added "
                           f"together with {', '.join(n for n in names if n != matching[0]['anchor'])} by one "
                           "binding of Triton's; an edit cannot single it out")
        for edit in matching:
            if edit["op"] == "insert-before":
                _add_pass_named(pm, edit["pass"], edit)
                edit["done"] = True
        dropped = next((e for e in matching if e["op"] in ("disable", "replace")), None)
        if dropped is None:
            original(pm, *args, **kwargs)
        else:
            dropped["done"] = True
            if dropped["op"] == "replace":
                _add_pass_named(pm, dropped["pass"], dropped)
        for edit in matching:
            if edit["op"] == "insert-after":
                _add_pass_named(pm, edit["pass"], edit)
                edit["done"] = True
        return None


_job = _Edits()


class _RecordingPassManager(_TritonPassManager):

    def run(self, *args, **kwargs):
        _job.record_run(self.get_pipeline_str())
        return super().run(*args, **kwargs)


_ir.pass_manager = _RecordingPassManager


def _names_added(binding, args=(), kwargs=None):
    scratch = _scratch_pass_manager()
    binding(scratch, *args, **(kwargs or {}))
    return _pass_names(scratch.get_pipeline_str())


def _binding_modules():
    lib = triton._C.libtriton
    module_type = type(lib)
    found, seen = [], set()

    def walk(module):
        if module is None or id(module) in seen:
            return
        seen.add(id(module))
        found.append(module)
        for name in dir(module):
            child = getattr(module, name, None)
            if isinstance(child, module_type):
                walk(child)

    walk(getattr(lib, "passes", None))
    for backend in ("nvidia", "amd"):
        walk(getattr(getattr(lib, backend, None), "passes", None))
    return found


_plain_bindings = None  # pass name -> a binding that adds only it, from pm alone


def _wrap_bindings():
    """Wraps every add_* binding not wrapped yet (a plugin brings new ones)."""
    global _plain_bindings
    for module in _binding_modules():
        for name in dir(module):
            binding = getattr(module, name, None)
            if not name.startswith("add_") or not callable(binding) or hasattr(binding, "kjit_original"):
                continue

            def add(pm, *args, _original=binding, **kwargs):
                return _job.add(pm, _original, args, kwargs)

            add.kjit_original = binding
            add.__doc__ = binding.__doc__
            setattr(module, name, add)
    _plain_bindings = None


def _plain_binding_map():
    """The passes a stage may be given by name: those a binding adds from the
    pass manager alone (plugin passes first)."""
    global _plain_bindings
    if _plain_bindings is not None:
        return _plain_bindings
    found = {}
    modules = _binding_modules()
    modules.sort(key=lambda m: 0 if m.__name__.endswith("plugin") else 1)
    for module in modules:
        for name in sorted(dir(module)):
            binding = getattr(getattr(module, name, None), "kjit_original", None)
            if binding is None:
                continue
            try:
                names = _names_added(binding)
            except Exception:  # the binding needs arguments
                continue
            if len(names) == 1:
                found.setdefault(names[0], binding)
    _plain_bindings = found
    return found


def _add_pass_named(pm, name, edit):
    binding = _plain_binding_map().get(name)
    if binding is None:
        raise JobError(_edit_fault(edit['origin']), f"{edit['origin']}: no pass named {name!r} can be added by name "
                       "(a plugin's pass, or a Triton pass that takes no arguments)")
    binding(pm)


_wrap_bindings()

# A small kernel whose compile shows the passes each stage runs for a target
# and options: which passes Triton adds depends on those, not on the kernel.
_PROBE_TTIR = """module {
  tt.func public @kjit_pipeline_probe(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %two = arith.constant dense<2.000000e+00> : tensor<128xf32>
    %block = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %start = arith.muli %pid, %block : i32
    %range = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %starts = tt.splat %start : i32 -> tensor<128xi32>
    %offsets = arith.addi %starts, %range : tensor<128xi32>
    %ns = tt.splat %n : i32 -> tensor<128xi32>
    %mask = arith.cmpi slt, %offsets, %ns : tensor<128xi32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offsets : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offsets : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %v = tt.load %xp, %mask : tensor<128x!tt.ptr<f32>>
    %w = arith.mulf %v, %two : tensor<128xf32>
    tt.store %yp, %w, %mask : tensor<128x!tt.ptr<f32>>
    tt.return
  }
}
"""

_pipelines = {}  # (target, options, plugins) -> the stages and their passes


def _pipeline_key(target, options, plugins, plugins_off=()):
    return json.dumps([target.backend, target.arch, target.warp_size, options, sorted(set(plugins or [])),
                       sorted(set(plugins_off))], sort_keys=True, default=str)



def describe_pipeline(target, options):
    """Triton's stages for this target and options, in order, each with the
    MLIR passes it runs: [{"name", "passes"}]. The source's own stage is
    listed too (Triton skips it for an IR source; run_stages says which)."""
    cache_key = _pipeline_key(target, options, _loaded_plugins, _PLUGINS_OFF)
    if cache_key in _pipelines:
        return _pipelines[cache_key]
    path = os.path.join(WORK_DIR, "kjit_pipeline_probe.ttir")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_PROBE_TTIR)
    _job.reset([])
    try:
        with _Capture() as capture:
            try:
                _compile_file(path, target, options)
                # The ttir stage, which Triton skips for this TTIR source,
                # run on its own to see its passes.
                backend = triton.compiler.compiler.make_backend(target)
                context = _ir.context()
                _ir.load_dialects(context)
                backend.load_dialects(context)
                module = _ir.parse_mlir_module(path, context)
                module.context = context  # as Triton's IRSource does
                _job.stage_functions["ttir"](module, {})
                error = None
            except Exception as e:
                error = e
        if error is not None:
            raise JobError("internal", f"cannot list the passes of {target.backend}:{target.arch}: {_one_line(error)}",
                           capture.text + "".join(traceback.format_exception(error)))
        stages = [{"name": name, "passes": list(_job.ran.get(name, []))} for name in _job.stage_order]
    finally:
        MemoryCache.puts = []
        os.unlink(path)
        _job.reset([])
    _pipelines[cache_key] = stages
    return stages


def skipped_stages(stages, ir):
    """The stages Triton does not run for a source of this IR: up to and
    including the source's own."""
    names = [s["name"] for s in stages]
    own = "ttgir" if ir == "glir" else ir
    return names[:names.index(own) + 1] if own in names else []


def _edit_fault(origin):
    """An edit that cannot act is the daemon's configuration's fault
    (failed_precondition), or the request's when the request made it."""
    return "invalid_argument" if str(origin).startswith("request ") else "failed_precondition"


_EDIT_OPS = ("insert-before", "insert-after", "disable", "replace", "override-stage")


def _checked_edits(edits, stages, ir, pipeline_name):
    """The request's edits, checked against the stages that will run."""
    if edits is None:
        return []
    if not isinstance(edits, list):
        raise JobError("invalid_argument", "edits must be a list")
    skipped = skipped_stages(stages, ir)
    by_name = {s["name"]: s for s in stages}
    checked = []
    for edit in edits:
        if not isinstance(edit, dict) or edit.get("op") not in _EDIT_OPS:
            raise JobError("invalid_argument", f"an edit is an object whose op is one of {', '.join(_EDIT_OPS)}")
        origin = str(edit.get("origin") or "an edit")
        op = edit["op"]
        if op == "override-stage":
            stage, passes = edit.get("stage"), edit.get("passes")
            if stage not in by_name:
                raise JobError(_edit_fault(origin), f"{origin}: override-stage names stage {stage!r}; "
                               f"{pipeline_name} has {', '.join(by_name)}")
            if not by_name[stage]["passes"]:
                raise JobError(_edit_fault(origin), f"{origin}: stage {stage} runs no MLIR passes to override")
            if stage in skipped:
                raise JobError(_edit_fault(origin), f"{origin}: override-stage {stage} would never run: Triton "
                               f"skips stage{'s' if len(skipped) > 1 else ''} {', '.join(skipped)} for a .{ir} source")
            if not isinstance(passes, list) or not all(isinstance(p, str) and p for p in passes):
                raise JobError("invalid_argument", f"{origin}: override-stage needs a list of pass names")
            for name in passes:
                if name not in _plain_binding_map():
                    _add_pass_named(None, name, {"origin": origin})
            checked.append({"op": op, "stage": stage, "passes": passes, "origin": origin})
            continue
        anchor = edit.get("anchor")
        if not isinstance(anchor, str) or not anchor:
            raise JobError("invalid_argument", f"{origin}: {op} needs an anchor pass")
        # "ttgir/canonicalize": that stage's first canonicalize. A bare name:
        # its first occurrence in the stages that run, as on kjit's own
        # pipelines (the source's own stage never runs).
        in_stage = None
        if "/" in anchor and anchor.split("/", 1)[0] in by_name:
            in_stage, anchor = anchor.split("/", 1)
        candidates = [s for s in stages if in_stage in (None, s["name"])]
        where = [s["name"] for s in candidates if anchor in s["passes"]]
        if not where:
            raise JobError(_edit_fault(origin), f"{origin}: {op} names anchor pass {anchor!r}, which "
                           f"{in_stage or pipeline_name} does not run for this target and options")
        if all(name in skipped for name in where):
            raise JobError(_edit_fault(origin), f"{origin}: {op} {anchor} is in stage {where[0]}, which Triton "
                           f"skips for a .{ir} source (it is the source's own stage or an earlier one); anchor a "
                           "pass of a later stage")
        entry = {"op": op, "anchor": anchor, "stage": in_stage, "origin": origin}
        if op != "disable":
            name = edit.get("pass")
            if not isinstance(name, str) or not name:
                raise JobError("invalid_argument", f"{origin}: {op} needs a pass")
            if name not in _plain_binding_map():
                _add_pass_named(None, name, {"origin": origin})
            entry["pass"] = name
        checked.append(entry)
    return checked

# ---------------------------------------------------------------- describe

# Options a request may not set, and why; every other field of the options
# dataclass whose type a JSON value can give is allowed.
_REFUSED = {
    "ir_override": "names a file Triton reads to replace a stage's IR",
    "extern_libs": "names library files Triton links (libdevice and others)",
    "instrumentation_mode": "turns on instrumentation, which loads runtime libraries and can write profiles",
    "ptx_options": "passed to ptxas unchecked: ptxas options read and write files (--options-file, -o)",
    "arch": "comes from the target",
    "backend_name": "comes from the target",
    "warp_size": "comes from the target",
}
_REFUSED_CUDA = {
    "max_num_imprecise_acc_default": "set by Triton from the target's capability (a request's value is overwritten)",
}
_TYPE_NAMES = {int: "int", bool: "bool", str: "str", float: "float"}


def _option_type(field):
    """The request type of a dataclass field ("int", "int?", "bool", "str",
    "str?", "float"), or None where no JSON value fits it."""
    t = field.type
    if isinstance(t, str):  # postponed annotations: evaluate the simple ones
        t = {"int": int, "bool": bool, "str": str, "float": float, "Optional[int]": typing.Optional[int],
             "Optional[str]": typing.Optional[str]}.get(t.strip(), t)
    if t in _TYPE_NAMES:
        name = _TYPE_NAMES[t]
        # `ptx_version: int = None` takes None as well (Triton then picks).
        return name + "?" if field.default is None and name in ("int", "str") else name
    args = [a for a in typing.get_args(t) if a is not type(None)]
    if typing.get_origin(t) is typing.Union or type(t).__name__ == "UnionType":
        plain = [a for a in args if a in _TYPE_NAMES]
        if len(plain) == 1 and type(None) in typing.get_args(t) and len(args) == 1:
            return _TYPE_NAMES[plain[0]] + "?"
        if str in plain:  # e.g. llvm_fn_attrs: str | tuple of pairs; a str is one of its forms
            return "str"
    return None


def _options_of(options_class, refused_extra):
    allowed, refused = {}, {}
    for field in dataclasses.fields(options_class):
        reason = _REFUSED.get(field.name) or refused_extra.get(field.name)
        kind = None if reason else _option_type(field)
        if reason:
            refused[field.name] = reason
        elif kind is None:
            refused[field.name] = f"of type {getattr(field.type, '__name__', field.type)}, which a request cannot give"
        else:
            allowed[field.name] = kind
    return allowed, refused


def _backend_modules():
    found = {}
    try:
        from triton.backends.nvidia import compiler as nvidia
        found["cuda"] = nvidia
    except Exception:
        pass
    try:
        from triton.backends.amd import compiler as amd
        found["hip"] = amd
    except Exception:
        pass
    return found


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run_quietly(argv):
    import subprocess
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                              check=False).stdout.decode("utf-8", "replace")
    except Exception:
        return ""


def _ptxas_programs():
    """[(name, path, version, {gpu names it takes})] of the bundled ptxas."""
    found = []
    bin_dir = os.path.join(TRITON_DIR, "backends", "nvidia", "bin")
    for name in ("ptxas", "ptxas-blackwell"):
        path = os.path.join(bin_dir, name)
        if not os.access(path, os.X_OK):
            continue
        version = re.search(r"release (\d+\.\d+)", _run_quietly([path, "--version"]))
        # --help lists the values --gpu-name allows (ptxas has no
        # --list-gpu-arch), quoted and wrapped across lines.
        help_text = re.sub(r"\s+", "", _run_quietly([path, "--help"]))
        names = set(re.findall(r"'(sm_\d+[a-z]?)'", help_text))
        found.append((name, path, version.group(1) if version else "", names))
    return found


def _cuda_archs(nvidia, ptxas):
    """The SM numbers Triton can build: the ptxas Triton picks for an arch
    (by number) must take the --gpu-name Triton passes it (sm_90a ...)."""
    by_name = {name: names for name, _, _, names in ptxas}
    numbers = sorted({int(re.match(r"sm_(\d+)", n).group(1)) for _, _, _, names in ptxas for n in names})
    archs = []
    for number in numbers:
        if number < 75:  # Triton's NVIDIA backend targets Turing and later
            continue
        try:
            tool = os.path.basename(nvidia.get_ptxas(number).path)
            gpu_name = nvidia.sm_arch_from_capability(number)
        except Exception:
            continue
        if gpu_name in by_name.get(tool, ()):
            archs.append(number)
    return archs


# Candidate AMD processors. Which of them a build can really compile is not
# written down anywhere (3.9's amd.get_target_triple accepts gfx1030, whose
# compile then fails; fbtriton 3.7.4 crashes on gfx11): _probe_targets tries.
_HIP_CANDIDATES = ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1150",
                   "gfx1151", "gfx1200", "gfx1201", "gfx1250")
# Compiles a tiny TTIR for each target named on its command line (cuda:90,
# hip:gfx942), printing "start T" before and "ok T" or "fail T" after each.
# Run as a separate process of the same interpreter: a target that crashes
# Triton ends that process, not the worker.
_PROBE = r"""
import os, sys, warnings
warnings.simplefilter("ignore")
os.dup2(2, 1)
import triton
from triton import knobs
from triton.backends.compiler import GPUTarget
knobs.compilation.always_compile = True
with open("probe.ttir", "w") as f:
    f.write("module {\n  tt.func public @kjit_probe(%p: !tt.ptr<f32>) {\n    %c = arith.constant 1.0 : f32\n"
            "    tt.store %p, %c : !tt.ptr<f32>\n    tt.return\n  }\n}\n")
out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
for name in sys.argv[2:]:
    backend, arch = name.split(":")
    out.write("start " + name + "\n")
    try:
        if backend == "cuda":
            target = GPUTarget("cuda", int(arch), 32)
        else:
            target = GPUTarget("hip", arch, 32 if int(arch[3:-2]) >= 10 else 64)
        triton.compile("probe.ttir", target=target, options={"enable_fp_fusion": True})
        out.write("ok " + name + "\n")
    except Exception:
        out.write("fail " + name + "\n")
"""


def _probe_targets(targets):
    """The subset of targets (["cuda:90", "hip:gfx942"]) a tiny TTIR
    compiles for, each tried in a child interpreter (restarted past a
    target that kills it)."""
    import subprocess
    accepted, left = [], list(targets)
    probe_dir = os.path.join(WORK_DIR, "triton-probe")
    os.makedirs(probe_dir, exist_ok=True)
    try:
        while left:
            read_fd, write_fd = os.pipe()
            proc = subprocess.Popen([sys.executable, "-I", "-B", "-c", _PROBE, str(write_fd)] + left,
                                    cwd=probe_dir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, pass_fds=(write_fd, ))
            os.close(write_fd)
            with os.fdopen(read_fd) as lines:
                current = None
                for line in lines:
                    word, _, name = line.strip().partition(" ")
                    if word == "start":
                        current = name
                        continue
                    if word == "ok":
                        accepted.append(name)
                    left.remove(name)
                    current = None
            proc.wait()
            if current is not None:
                left.remove(current)  # it took the probe down
            elif left:
                break  # the probe ended without trying the rest: give up on them
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)
    return accepted


def _installed_plugins():
    """The plugins that come with this build, as its own processes load them:
    each library named in TRITON_PLUGIN_PATHS (set by a plugin package's
    .pth at interpreter start) and the stages hook a plugin package set on
    import, grouped by the distribution that installed them, with its
    version, its libraries' digests and the digest of the hook's key (the
    text Triton adds to its cache key)."""
    import importlib.metadata as metadata
    owners = {}  # real path of a file -> (distribution, version)
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name or name.lower() in ("triton", "fbtriton"):
            continue
        for file in dist.files or []:
            if str(file).endswith((".so", ".py")):
                owners[os.path.realpath(dist.locate_file(file))] = (name, dist.version)
    found = {}

    def entry(owner):
        name, version = owner
        return found.setdefault(name, {"distribution": name, "version": version, "libraries": [],
                                       "stages_hook_sha256": ""})

    for path in filter(None, os.environ.get("TRITON_PLUGIN_PATHS", "").split(os.pathsep)):
        if path in CONFIGURED_LIBRARIES:
            continue  # the daemon's, not the build's
        real = os.path.realpath(path)
        owner = owners.get(real, (os.path.basename(path), ""))
        entry(owner)["libraries"].append({"path": path, "sha256": _sha256(real) if os.path.isfile(real) else ""})
    if _PLUGIN_STAGES_HOOK is not None:
        module = sys.modules.get(getattr(_PLUGIN_STAGES_HOOK, "__module__", ""), None)
        source = os.path.realpath(getattr(module, "__file__", "") or "")
        owner = owners.get(source)
        if owner is not None:
            key, _ = _PLUGIN_STAGES_HOOK()
            entry(owner)["stages_hook_sha256"] = hashlib.sha256(str(key).encode()).hexdigest()
    return sorted(found.values(), key=lambda p: p["distribution"])


def _stages_hook_owner():
    """The distribution of the plugin package whose stages hook this build
    runs ("triton-utlx"), or ""."""
    global _hook_owner
    if _hook_owner is None:
        _hook_owner = next((p["distribution"] for p in _installed_plugins() if p["stages_hook_sha256"]), "")
    return _hook_owner


_hook_owner = None


def _plugin_loader():
    """How this build loads pass plugin libraries: "extend_with" (Triton 3.9:
    passes.plugin.extend_with, at any time), "TRITON_PLUGIN_PATHS" (Triton
    3.8: the libraries that variable names, while libtriton is imported), or
    "" when it loads none."""
    from triton._C.libtriton import passes
    if getattr(getattr(passes, "plugin", None), "extend_with", None) is not None:
        return "extend_with"
    marker = b"TRITON_PLUGIN_PATHS"
    with open(os.path.join(TRITON_DIR, "_C", "libtriton.so"), "rb") as f:
        tail = b""
        while chunk := f.read(1 << 22):
            if marker in tail + chunk:
                return "TRITON_PLUGIN_PATHS"
            tail = chunk[-len(marker):]
    return ""


def _tlx_provider():
    module = sys.modules.get("triton.language.extra.tlx")
    path = os.path.realpath(getattr(module, "__file__", "") or "")
    if path.startswith(os.path.realpath(TRITON_DIR) + os.sep):
        return _distribution()[0]
    import importlib.metadata as metadata
    top = getattr(module, "__name__", "").split(".")[0]
    names = metadata.packages_distributions().get(top, []) if top else []
    return names[0] if names else top


def _distribution():
    import importlib.metadata as metadata
    names = metadata.packages_distributions().get("triton", []) if hasattr(metadata,
                                                                          "packages_distributions") else []
    for name in list(names) + ["fbtriton", "triton"]:
        try:
            return name, metadata.version(name)
        except Exception:
            continue
    return "triton", triton.__version__


def _unique(paths):
    out = []
    for p in paths:
        if p not in out:
            out.append(p)
    return out


def _read_paths():
    paths = [sys.prefix, sys.base_prefix, TRITON_DIR] + [p for p in sys.path if p and os.path.isdir(p)]
    out = []
    for p in paths:
        for q in (os.path.abspath(p), os.path.realpath(p)):
            if q not in out:
                out.append(q)
    return out


def _description_inputs(executables, plugins):
    """What the description is made of, for a daemon that keeps it across
    its starts: files (the interpreter, the programs and libraries it
    names) and trees (every directory this interpreter imports from besides
    the standard library, whose changes come with the interpreter's own).
    A file changed, added or removed in any of them means describing the
    build again."""
    import sysconfig
    # Not "platstdlib": in a virtual environment that is the environment's
    # own lib/pythonX.Y, which holds its site-packages.
    stdlib = [os.path.realpath(sysconfig.get_paths()["stdlib"]), os.path.realpath(os.path.dirname(os.__file__))]

    def inside(path, roots):
        return any(path == root or path.startswith(root + os.sep) for root in roots)

    trees = []
    for entry in [TRITON_DIR] + sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and not inside(real, stdlib) and real not in trees:
            trees.append(real)
    # A tree inside another is walked with it.
    trees = sorted(t for t in trees if not inside(os.path.dirname(t), [u for u in trees if u != t]))
    # pyvenv.cfg: which interpreter a virtual environment runs, and whether
    # it sees the system's packages.
    named = list(executables) + list(plugins) + [os.path.join(sys.prefix, "pyvenv.cfg")]
    files = sorted({os.path.realpath(p) for p in named if os.path.exists(p)})
    return {"files": files, "trees": trees}


_description = None
_cuda_arch_set = None
_hip_arch_set = None


def _given_description():
    """The description the daemon gave (KJIT_TRITON_DESCRIPTION) when it is
    this build's: the same distribution and version, Triton and Python; else
    None, and the build describes itself. The daemon's own addition (another
    build's ptxas lent for some targets, which each such request names) is
    taken off: the description is the build's as it describes itself."""
    if not _GIVEN_DESCRIPTION:
        return None
    try:
        given = json.loads(_GIVEN_DESCRIPTION)
    except ValueError:
        given = None
    if not isinstance(given, dict) or given.get("ok") is not True:
        sys.stderr.write("kjit Triton worker: the description given is not one; describing this build\n")
        return None
    distribution, version = _distribution()
    ours = {"distribution": distribution, "version": version, "triton_version": triton.__version__,
            "python": sys.version.split()[0]}
    differing = [f"{k} {given.get(k)!r} here {v!r}" for k, v in ours.items() if given.get(k) != v]
    if differing or not all(k in given for k in ("name", "options", "cuda_archs", "hip_archs")):
        sys.stderr.write(f"kjit Triton worker: the description given is not of this build "
                         f"({'; '.join(differing) or 'fields missing'}); describing it\n")
        return None
    lent = given.pop("borrowed_ptxas", None)
    if isinstance(lent, dict):
        given["cuda_archs"] = [a for a in given["cuda_archs"] if a not in lent.get("cuda_archs", [])]
        given["executables"] = [p for p in given.get("executables", []) if p != lent.get("path")]
    return given


def describe():
    """What this build is and builds. Probing which targets compile takes
    seconds of CPU, so an interpreter the daemon starts for jobs takes the
    description the daemon holds instead (_given_description)."""
    global _description, _cuda_arch_set, _hip_arch_set
    if _description is not None:
        return _description
    given = _given_description()
    if given is not None:
        _description = given
        _cuda_arch_set = set(given["cuda_archs"])
        _hip_arch_set = set(given["hip_archs"])
        return _description
    modules = _backend_modules()
    ptxas = _ptxas_programs() if "cuda" in modules else []
    options, refused = {}, {}
    if "cuda" in modules:
        options["cuda"], refused_cuda = _options_of(modules["cuda"].CUDAOptions, _REFUSED_CUDA)
        refused.update(refused_cuda)
    if "hip" in modules:
        options["hip"], refused_hip = _options_of(modules["hip"].HIPOptions, {})
        refused.update(refused_hip)
    # What ptxas takes narrows the SM numbers; a compile of each decides.
    candidates = [f"cuda:{a}" for a in _cuda_archs(modules["cuda"], ptxas)] if "cuda" in modules else []
    candidates += [f"hip:{a}" for a in _HIP_CANDIDATES] if "hip" in modules else []
    accepted = _probe_targets(candidates)
    cuda_archs = [int(t[5:]) for t in accepted if t.startswith("cuda:")]
    hip_archs = [t[4:] for t in accepted if t.startswith("hip:")]
    plugins_dir = os.path.join(TRITON_DIR, "plugins")
    plugins = sorted(
        os.path.join(plugins_dir, f) for f in os.listdir(plugins_dir)
        if f.endswith(".so")) if os.path.isdir(plugins_dir) else []
    try:
        import importlib
        importlib.import_module("triton.language.extra.tlx")
        tlx = True
    except Exception:
        tlx = False
    distribution, version = _distribution()
    executables = _unique([path for _, path, _, _ in ptxas] + [sys.executable, os.path.realpath(sys.executable)])
    installed_plugins = _installed_plugins()
    plugin_libraries = plugins + [lib["path"] for p in installed_plugins for lib in p["libraries"]]
    _description = {
        "ok": True,
        "distribution": distribution,
        "version": version,
        "name": f"{distribution}-{version}",
        "triton_version": triton.__version__,
        "python": sys.version.split()[0],
        "backends": [{"cuda": "nvidia", "hip": "amd"}[b] for b in ("cuda", "hip") if b in modules],
        "cuda_archs": cuda_archs,
        "hip_archs": hip_archs,
        "options": options,
        "refused_options": refused,
        "libtriton_sha256": _sha256(os.path.join(TRITON_DIR, "_C", "libtriton.so")),
        "ptxas": [{"path": path, "sha256": _sha256(path), "version": version} for _, path, version, _ in ptxas],
        # ptxas is the only program a compile starts (make_cubin, and
        # `ptxas --version` for the backend's hash); AMD links in process.
        # describe also runs this interpreter (the target probe).
        "executables": executables,
        "read_paths": _read_paths(),
        "plugins": plugins,
        "installed_plugins": installed_plugins,
        "plugin_loader": _plugin_loader(),
        "tlx": tlx,
        # Who brings TLX: the build's own distribution (compiled in), or a
        # plugin package (utlx_plugin, which triton.language.extra.tlx
        # aliases).
        "tlx_provider": _tlx_provider() if tlx else "",
        "stage_timing": HAS_STAGE_HOOK,
        "inputs": _description_inputs(executables, plugin_libraries),
    }
    _cuda_arch_set = set(cuda_archs)
    _hip_arch_set = set(hip_archs)
    return _description


# ---------------------------------------------------------------- compile


class _Capture:
    """Sends fds 1 and 2 (and Python's warnings) to a file for the length of
    a job: MLIR diagnostics, LLVM and ptxas print there directly. In a job's
    child that file is its job log, which the parent reads back if the child
    dies inside the capture (an abort's "LLVM ERROR: ..." is there)."""

    def __enter__(self):
        sys.stderr.flush()
        self.file = _job_log if _job_log is not None else tempfile.TemporaryFile(dir=WORK_DIR)
        self.start = self.file.seek(0, os.SEEK_END)
        self.saved = (os.dup(1), os.dup(2))
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        self.warnings = warnings.catch_warnings()
        self.warnings.__enter__()
        warnings.simplefilter("always")  # every job logs its own warnings
        self.text = ""
        return self

    def __exit__(self, *exc):
        self.warnings.__exit__(*exc)
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        self.file.seek(self.start)
        data = self.file.read()
        if self.file is not _job_log:
            self.file.close()
        self.text = _cut_log(data).decode("utf-8", "replace")
        return False


def _cut_log(data):
    if len(data) > MAX_LOG:
        data = data[:MAX_LOG // 2] + b"\n[... log cut ...]\n" + data[-MAX_LOG // 2:]
    return data


def _write_source(source, ir):
    path = os.path.join(WORK_DIR, f"kernel.{ir}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    return path


def _compile_file(path, target, options):
    MemoryCache.puts = []
    del _stage_times[:]
    # Triton's warn_once is cached per process; clear it so every job's log
    # has the warnings its compile raises, not only the first job's.
    warn_once = getattr(getattr(triton, "_utils", None), "warn_once", None)
    if hasattr(warn_once, "cache_clear"):
        warn_once.cache_clear()
    try:
        return triton.compile(path, target=target, options=options)
    finally:
        shutil.rmtree(os.path.join(WORK_DIR, "triton-cache"), ignore_errors=True)


def _ir_kind(request):
    ir = request.get("ir")
    if ir is not None:
        if ir not in ("ttir", "ttgir", "glir"):
            raise JobError("invalid_argument", f"unknown ir {ir!r}: ttir, ttgir or glir")
        return ir
    # TTGIR carries ttg.num-warps on its module. So does the TTIR of a TLX
    # kernel (tlx.has_explicit_local_mem_access, before any layout is
    # assigned): a module without a distributed layout is still TTIR.
    head = request["source"]
    if "ttg.num-warps" not in head:
        return "ttir"
    if "tlx.has_explicit_local_mem_access" in head and not re.search(r"#ttg\.(blocked|slice|linear)<", head):
        return "ttir"
    return "ttgir"


def _target(request, description):
    target = request.get("target")
    if not isinstance(target, dict):
        raise JobError("invalid_argument", "target must be an object {backend, arch, warp_size}")
    backend, arch, warp_size = target.get("backend"), target.get("arch"), target.get("warp_size")
    if backend not in ("cuda", "hip"):
        raise JobError("invalid_argument", f"unknown backend {backend!r}: cuda or hip")
    if backend not in description["options"]:
        raise JobError("failed_precondition", f"this Triton build has no {backend} backend")
    if backend == "cuda":
        if not isinstance(arch, int) or isinstance(arch, bool):
            raise JobError("invalid_argument", f"a cuda arch is an SM number like 90, not {arch!r}")
        if arch not in _cuda_arch_set and not _lent_ptxas(request):
            raise JobError("failed_precondition",
                           f"{description['name']} cannot build sm_{arch}; it builds {sorted(_cuda_arch_set)}")
        expected_warp = 32
    else:
        if not isinstance(arch, str):
            raise JobError("invalid_argument", f"a hip arch is a name like gfx942, not {arch!r}")
        if arch not in _hip_arch_set:
            raise JobError("failed_precondition",
                           f"{description['name']} cannot build {arch}; it builds {sorted(_hip_arch_set)}")
        expected_warp = 32 if int(arch[3:-2] or 0) >= 10 else 64
    if warp_size is None:
        warp_size = expected_warp
    if warp_size != expected_warp:
        raise JobError("invalid_argument", f"{backend}:{arch} has a warp size of {expected_warp}, not {warp_size!r}")
    return GPUTarget(backend, arch, warp_size)


def _check_options(backend, options, description):
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise JobError("invalid_argument", "options must be an object")
    known = description["options"][backend]
    for name, value in options.items():
        if name in description["refused_options"] and name not in known:
            raise JobError("invalid_argument",
                           f"option {name} may not be set: {description['refused_options'][name]}")
        kind = known.get(name)
        if kind is None:
            raise JobError("invalid_argument", f"unknown option {name!r}; known: {', '.join(sorted(known))}")
        base = kind.rstrip("?")
        if value is None and kind.endswith("?"):
            continue
        fits = {
            "int": isinstance(value, int) and not isinstance(value, bool),
            "bool": isinstance(value, bool),
            "str": isinstance(value, str),
            "float": isinstance(value, (int, float)) and not isinstance(value, bool),
        }[base]
        if not fits:
            raise JobError("invalid_argument", f"option {name} takes {kind}, not {value!r}")
    # Ranges Triton checks with assertions (or not at all).
    for name in ("num_warps", "num_ctas"):
        value = options.get(name)
        if value is not None and (value < 1 or value & (value - 1) or value > 64):
            raise JobError("invalid_argument", f"option {name} must be a power of two from 1 to 64, not {value}")
    if options.get("num_stages") is not None and not 0 <= options["num_stages"] <= 16:
        raise JobError("invalid_argument", f"option num_stages must be from 0 to 16, not {options['num_stages']}")
    if options.get("maxnreg") is not None and not 16 <= options["maxnreg"] <= 255:
        raise JobError("invalid_argument", f"option maxnreg must be from 16 to 255, not {options['maxnreg']}")
    return dict(options)


_loaded_plugins = set()


def _load_plugins(paths):
    if not paths:
        return
    from triton._C.libtriton import passes
    plugin = getattr(passes, "plugin", None)
    extend_with = getattr(plugin, "extend_with", None)
    if extend_with is None:
        raise JobError("failed_precondition", "this Triton build cannot load pass plugins (no passes.plugin.extend_with)")
    for path in paths:
        if path in _loaded_plugins:
            continue
        if not os.path.isabs(path) or not os.path.isfile(path):
            raise JobError("invalid_argument", f"plugin {path!r} is not an absolute path to a file")
        with _Capture() as capture:
            try:
                extend_with(path)
            except Exception as e:
                error = e
            else:
                error = None
        if error is not None:
            raise JobError("invalid_argument", f"cannot load plugin {path}: {_one_line(error)}",
                           capture.text + "".join(traceback.format_exception(error)))
        _loaded_plugins.add(path)
        _wrap_bindings()  # the plugin's add_* bindings


def _one_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:500]


def _pipeline_name(target):
    return "triton-nvidia" if target.backend == "cuda" else "triton-amd"


def pipeline_job(request):
    """The stages and passes a compile for this target and options runs."""
    description = describe()
    target = _target(request, description)
    options = _check_options(target.backend, request.get("options"), description)
    _load_plugins(_plugin_paths(request))
    stages = describe_pipeline(target, options)
    return {
        "ok": True,
        "pipeline": _pipeline_name(target),
        "stages": stages,
        "skipped": {ir: skipped_stages(stages, ir) for ir in ("ttir", "ttgir")},
    }


def compile_job(request):
    description = describe()
    source = request.get("source")
    if not isinstance(source, str) or not source.strip():
        raise JobError("invalid_argument", "source must be the MLIR text of a module")
    ir = _ir_kind(request)
    target = _target(request, description)
    options = _check_options(target.backend, request.get("options"), description)
    _load_plugins(_plugin_paths(request))
    edits = []
    if request.get("edits"):
        edits = _checked_edits(request["edits"], describe_pipeline(target, options), ir, _pipeline_name(target))
    path = _write_source(source, ir)

    error = None
    _job.reset(edits)
    with _Capture() as capture:
        try:
            kernel = _compile_file(path, target, options)
        except Exception as e:  # Triton reports bad input as any exception
            error = e
    skipped = skipped_stages([{"name": name} for name in _job.stage_order], ir)
    ran = [{"stage": name, "passes": _job.ran.get(name, [])} for name in _job.stage_order if name not in skipped]
    _job.reset([])
    log = capture.text
    if error is not None:
        log += "".join(traceback.format_exception(error))
        if isinstance(error, JobError):  # an edit that could not be applied
            raise JobError(error.code, error.message, log)
        # ptxas that cannot start is the machine's fault, not the input's.
        code = "failed_precondition" if isinstance(error, OSError) else "invalid_argument"
        if isinstance(error, MemoryError) or (isinstance(error, OSError) and error.errno == errno.ENOMEM):
            raise JobError("resource_exhausted", "the compile ran out of memory: " + _one_line(error), log,
                           bound="memory")
        raise JobError(code, _one_line(error), log)
    for edit in edits:
        if not edit.get("done"):
            what = edit.get("anchor") or edit.get("stage")
            raise JobError(_edit_fault(edit['origin']), f"{edit['origin']}: {edit['op']} {what} found nothing to act on "
                           "while compiling (Triton added that pass through a path kjit does not see)", log)

    binary_ext = "cubin" if target.backend == "cuda" else "hsaco"
    name = kernel.metadata.name
    binary = metadata_json = None
    files = {}
    for filename, data in MemoryCache.puts:
        if filename.endswith("." + binary_ext):
            binary = bytes(data)
        elif filename.endswith(".json"):
            metadata_json = data
        if not isinstance(data, (bytes, bytearray)):
            files[filename] = data
    MemoryCache.puts = []
    if binary is None or metadata_json is None:
        raise JobError("internal", f"Triton put no .{binary_ext} or no .json for {name}", log)
    return {
        "ok": True,
        "name": name,
        "binary_ext": binary_ext,
        "binary_b64": base64.b64encode(binary).decode("ascii"),
        "metadata_json": metadata_json,
        "files": files,
        "stages": list(_stage_times),
        "passes": ran,
        "log": log,
    }


# ---------------------------------------------------------------- a child per job

# This process imports Triton and describes the build, and never compiles:
# every compile (and every pipeline probe) runs in a child forked from it,
# which answers and exits. So every job starts from the same state (Triton's
# AMD back end gives bytes that depend on what the process compiled before;
# a child of a process that compiled nothing gives a fresh process's bytes),
# whatever a plugin or a failed compile leaves behind dies with its child,
# and a job's bounds (CPU, memory, time) are its child's alone, counted from
# zero: this process has none of them.

# A child that runs out of memory leaves with this status, as a compile
# worker does under its memory bound.
EXIT_OUT_OF_MEMORY = 86
# How much of a dead child's log its answer keeps.
MAX_DEAD_LOG = 64 << 10

_job_log = None  # in a job's child: the file its fds 1 and 2 write to
_request_arrived = 0.0  # time.monotonic() when the current request arrived
_pipeline_answers = {}  # _pipeline_key -> a pipeline child's answer


def _job_bounds(request):
    """{"cpu_seconds", "memory_bytes", "time_ms"}: each a positive int, or absent."""
    bounds = request.get("bounds") or {}
    if not isinstance(bounds, dict):
        raise JobError("invalid_argument", "bounds must be an object")
    out = {}
    for name in ("cpu_seconds", "memory_bytes", "time_ms"):
        value = bounds.get(name)
        if value is None or value == 0:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise JobError("invalid_argument", f"bounds.{name} must be a positive integer, not {value!r}")
        out[name] = value
    return out


def _plugin_paths(request):
    paths = request.get("plugins") or []
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise JobError("invalid_argument", "plugins must be a list of paths")
    return paths


def _plugins_off(request):
    """The plugin packages switched off for this job, by distribution ("*":
    all): their stages hook is not run (their libraries stay loaded, unused
    without it). The daemon leaves a switched-off library out of "plugins"."""
    off = request.get("plugins_off") or []
    if not isinstance(off, list) or not all(isinstance(p, str) for p in off):
        raise JobError("invalid_argument", "plugins_off must be a list of names")
    return sorted(set(off))


_PLUGINS_OFF = []  # in a job's child: its request's plugins_off


def _apply_plugins_off(request):
    """In a job's child: the switched-off package's stages hook goes."""
    global _PLUGIN_STAGES_HOOK, _PLUGINS_OFF
    off = _PLUGINS_OFF = _plugins_off(request)
    owner = _stages_hook_owner()
    if owner and ("*" in off or owner in off):
        _PLUGIN_STAGES_HOOK = None


def _address_space():
    """The address space this process holds now, in bytes: from /proc where
    it may read it, else found by bisection on its own RLIMIT_AS, each step
    trying to map one page (a confined worker's children may not read their
    /proc entries: its Landlock rule names the worker's own)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        pass
    import mmap
    import resource
    page = mmap.PAGESIZE
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    low, high = 0, 1 << 47  # one more page fits under `high`, not under `low`
    try:
        while high - low > page:
            middle = (low + high) // 2 // page * page
            try:
                resource.setrlimit(resource.RLIMIT_AS, (middle, hard))
                mmap.mmap(-1, page).close()
                high = middle
            except (OSError, MemoryError, ValueError):
                low = middle  # an allocation of Python's own failing errs upwards, by what it needed
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return high - page


def _enter_job(log, bounds, background):
    """In a fresh child: its own process group (a time bound ends the
    programs it started too), death with this process, its output to the job
    log, and the job's bounds."""
    global _job_log
    import ctypes
    import resource
    import signal
    os.setpgid(0, 0)
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    _job_log = log
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    if background:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    if "cpu_seconds" in bounds:
        # SIGXCPU at the bound, SIGKILL a second later should it be caught.
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        limit = bounds["cpu_seconds"]
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1 if hard == resource.RLIM_INFINITY else
                                                 min(limit + 1, hard)))
    if "memory_bytes" in bounds:
        # What the child holds now (Triton's libraries, mapped but mostly
        # shared with this process) plus what a compile may add.
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = _address_space() + bounds["memory_bytes"]
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _lent_ptxas(request):
    """The newer ptxas-blackwell (another build's) the daemon sends for an
    arch this build's own does not know, or ""."""
    path = request.get("ptxas_blackwell") or ""
    if path and (not isinstance(path, str) or not os.path.isabs(path) or not os.access(path, os.X_OK)):
        raise JobError("failed_precondition", f"ptxas_blackwell {path!r} is not an executable file")
    return path


def _run_job(op, request):
    """The job itself, in its child."""
    try:
        _apply_plugins_off(request)
        lent = _lent_ptxas(request)
        if lent:
            # As a Triton process pointed at it: Triton reads the variable
            # when it picks the assembler (and keeps it in the metadata).
            os.environ["TRITON_PTXAS_BLACKWELL_PATH"] = lent
        return {"compile": compile_job, "pipeline": pipeline_job, "check_plugins": check_plugins_in_child}[op](request)
    except Exception as e:
        return _failure(e)


def probe_targets_job(request):
    """Which of the targets this build compiles with another build's newer
    ptxas-blackwell: {"accepted": [...]}."""
    targets = request.get("targets") or []
    if not isinstance(targets, list) or not all(isinstance(t, str) and t.startswith("cuda:") for t in targets):
        raise JobError("invalid_argument", "targets must be a list of cuda:N")
    path = _lent_ptxas(request)
    if not path:
        raise JobError("invalid_argument", "probe_targets needs ptxas_blackwell")
    describe()
    os.environ["TRITON_PTXAS_BLACKWELL_PATH"] = path
    try:
        return {"ok": True, "accepted": _probe_targets(targets)}
    finally:
        del os.environ["TRITON_PTXAS_BLACKWELL_PATH"]


def check_plugins_in_child(request):
    _load_plugins(_plugin_paths(request))
    return {"ok": True}


def check_plugins_job(request):
    """Whether this build loads the daemon's plugin libraries: those Triton
    loaded from TRITON_PLUGIN_PATHS at import must be mapped into this
    process; those it loads itself (extend_with) a child loads, so that a
    library built for another Triton release kills the child, not this
    process."""
    describe()
    with open("/proc/self/maps") as f:
        mapped = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    for path in CONFIGURED_LIBRARIES:
        if os.path.realpath(path) not in mapped:
            raise JobError("failed_precondition", f"Triton did not load {path} from TRITON_PLUGIN_PATHS")
    if _plugin_paths(request):
        return run_in_child("check_plugins", request)
    return {"ok": True}


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _dead_child_log(log):
    log.seek(0)
    data = log.read()
    if len(data) > MAX_DEAD_LOG:
        data = b"[... log cut ...]\n" + data[-MAX_DEAD_LOG:]
    return data.decode("utf-8", "replace")


def _ended(status, usage, bounds, log, elapsed):
    """The answer for a child that ended without answering."""
    import signal
    text = _dead_child_log(log)
    sys.stderr.write(text)  # into kjitd's log, as a worker's own output
    sys.stderr.flush()
    signalled = os.WIFSIGNALED(status)
    number = os.WTERMSIG(status) if signalled else os.WEXITSTATUS(status)
    cpu = usage.ru_utime + usage.ru_stime
    how = f"was killed by signal {number}" if signalled else f"exited with status {number}"
    # Only RLIMIT_CPU sends SIGXCPU; its hard limit, a second later, SIGKILL.
    if "cpu_seconds" in bounds and signalled and (number == signal.SIGXCPU or
                                                  (number == signal.SIGKILL and cpu >= bounds["cpu_seconds"])):
        return {"ok": False, "code": "resource_exhausted", "bound": "cpu", "log": text,
                "message": f"its process used {cpu:.1f} s of CPU time, its bound being {bounds['cpu_seconds']} s"}
    memory_words = ("out of memory", "Memory allocation failure", "std::bad_alloc", "Cannot allocate memory",
                    "MemoryError")
    if "memory_bytes" in bounds and ((not signalled and number == EXIT_OUT_OF_MEMORY)
                                     or any(w in text for w in memory_words)):
        return {"ok": False, "code": "resource_exhausted", "bound": "memory", "log": text,
                "message": f"its process {how} out of memory, its bound being {bounds['memory_bytes']} bytes "
                           "beyond what it held at its start"}
    if signalled and number == signal.SIGABRT:
        # LLVM and MLIR abort on some inputs they cannot lower ("LLVM ERROR:
        # Cannot select"): the module caused it.
        last = [line for line in text.splitlines() if line.strip()]
        return {"ok": False, "code": "invalid_argument", "log": text,
                "message": "Triton aborted compiling this module" + (f": {last[-1][:300]}" if last else "")}
    return {"ok": False, "code": "internal", "log": text,
            "message": f"the Triton job's process {how} without answering after {elapsed:.1f} s"}


def run_in_child(op, request):
    """Forks a child for one job and returns its answer, or the answer for
    the bound or failure that ended it."""
    import select
    import signal
    bounds = _job_bounds(request)
    background = bool(request.get("background"))
    log = tempfile.TemporaryFile(dir=WORK_DIR)
    read_fd, write_fd = os.pipe()
    sys.stderr.flush()
    began = time.monotonic()
    # The time bound counts from the request's arrival: a compile with
    # edits runs a pipeline child first, within the same bound.
    deadline = _request_arrived + bounds["time_ms"] / 1000 if "time_ms" in bounds else None
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_fd)
            _enter_job(log, bounds, background)
            body = json.dumps(_run_job(op, request)).encode("utf-8")
            _write_all(write_fd, body)
            code = 0
        except MemoryError:
            code = EXIT_OUT_OF_MEMORY
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write_fd)
    chunks, timed_out = [], False
    poller = select.poll()
    poller.register(read_fd, select.POLLIN)
    try:
        while True:
            wait_ms = None
            if deadline is not None:
                wait_ms = int((deadline - time.monotonic()) * 1000)
                if wait_ms <= 0:
                    timed_out = True
                    break
            if not poller.poll(wait_ms):
                continue
            data = os.read(read_fd, 1 << 20)
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(read_fd)
        # Its group: the child and any program it started and left running.
        for target in (-pid, pid) if timed_out else (-pid, ):
            try:
                os.kill(target, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status, usage = os.wait4(pid, 0)
    elapsed = time.monotonic() - began
    try:
        if timed_out:
            return {"ok": False, "code": "deadline_exceeded", "bound": "time", "log": _dead_child_log(log),
                    "message": f"it ran longer than {bounds['time_ms'] / 1000:g} s and was stopped"}
        if chunks and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            try:
                answer = json.loads(b"".join(chunks).decode("utf-8"))
            except ValueError:
                answer = None
            if isinstance(answer, dict):
                # What the job's process cost, for logs and benchmarks.
                answer["job_process"] = {"cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
                                         "max_rss_kib": usage.ru_maxrss, "seconds": round(elapsed, 3)}
                return answer
        return _ended(status, usage, bounds, log, elapsed)
    finally:
        log.close()


_caches_warm = False


def _warm_caches():
    """Fills, once, the caches of pure functions every compile calls:
    Triton's own hash (the digest of libtriton, about half a second), each
    back end's hash (ptxas --version, the AMD code generator's revision) and
    its options' hash (the digests of libdevice and its peers). The children
    inherit them; nothing here compiles, and nothing changes what a
    compile's bytes depend on."""
    global _caches_warm
    if _caches_warm:
        return
    _caches_warm = True
    description = describe()
    from triton.runtime.cache import triton_key
    triton_key()
    targets = [GPUTarget("cuda", arch, 32) for arch in {min(a, 90) for a in description["cuda_archs"] if a <= 90}]
    targets += [GPUTarget("cuda", a, 32) for a in description["cuda_archs"][-1:] if a > 90]
    targets += [GPUTarget("hip", arch, 64 if int(arch[3:-2] or 0) < 10 else 32) for arch in description["hip_archs"][:1]]
    for target in targets:
        try:
            backend = triton.compiler.compiler.make_backend(target)
            backend.hash()
            backend.parse_options({}).hash()
        except Exception as e:  # a compile will say what is wrong, in its own words
            sys.stderr.write(f"kjit Triton worker: warming {target}: {_one_line(e)}\n")


def pipeline_in_child(request):
    """The stages and passes for a target and options, from a child's probe
    compile; kept, so later children (a compile with edits) inherit it."""
    description = describe()
    target = _target(request, description)
    options = _check_options(target.backend, request.get("options"), description)
    key = _pipeline_key(target, options, _plugin_paths(request), _plugins_off(request))
    if key not in _pipeline_answers:
        answer = run_in_child("pipeline", request)
        if not answer.get("ok"):
            return answer
        _pipeline_answers[key] = answer
        _pipelines[key] = answer["stages"]
    return _pipeline_answers[key]


def compile_in_child(request):
    _warm_caches()  # once, here: every child inherits what it fills
    if request.get("edits"):
        pipeline = pipeline_in_child(dict(request, op="pipeline"))
        if not pipeline.get("ok"):
            return pipeline
    return run_in_child("compile", request)


# ---------------------------------------------------------------- protocol


def read_request(stream):
    header = stream.read(4)
    if len(header) == 0:
        return None
    if len(header) < 4:
        raise EOFError("stdin ended inside a frame header")
    (size, ) = struct.unpack("<I", header)
    body = stream.read(size)
    if len(body) < size:
        raise EOFError("stdin ended inside a frame")
    return body


def write_answer(answer):
    body = json.dumps(answer).encode("utf-8")
    PROTOCOL_OUT.write(struct.pack("<I", len(body)) + body)


def _failure(error):
    """The answer for an exception a job raised."""
    if isinstance(error, JobError):
        answer = {"ok": False, "code": error.code, "message": error.message, "log": error.log}
        if error.bound:
            answer["bound"] = error.bound
        return answer
    if isinstance(error, MemoryError):
        return {"ok": False, "code": "resource_exhausted", "bound": "memory",
                "message": "the job ran out of memory: " + _one_line(error), "log": ""}
    return {"ok": False, "code": "internal", "message": _one_line(error),
            "log": "".join(traceback.format_exception(error))}


def answer_for(body):
    try:
        request = json.loads(body.decode("utf-8"))
        if not isinstance(request, dict):
            raise ValueError("a request is a JSON object")
    except (ValueError, UnicodeDecodeError) as e:
        return {"ok": False, "code": "invalid_argument", "message": f"not a JSON request: {e}", "log": ""}
    op = request.get("op")
    try:
        if op == "describe":
            return describe()
        if op == "compile":
            return compile_in_child(request)
        if op == "pipeline":
            return pipeline_in_child(request)
        if op == "check_plugins":
            return check_plugins_job(request)
        if op == "probe_targets":
            return probe_targets_job(request)
        return {"ok": False, "code": "invalid_argument",
                "message": f"unknown op {op!r}: describe, compile, pipeline or check_plugins",
                "log": ""}
    except Exception as e:
        return _failure(e)


def main():
    global _request_arrived
    if WARM_AT_IDLE:
        _at_idle(_warm_caches)
    stdin = sys.stdin.buffer
    while True:
        try:
            body = read_request(stdin)
        except EOFError:
            PROTOCOL_OUT.close()
            return 0
        if body is None:
            PROTOCOL_OUT.close()
            return 0
        _request_arrived = time.monotonic()
        write_answer(answer_for(body))


if __name__ == "__main__":
    sys.exit(main())
