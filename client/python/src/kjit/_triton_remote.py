"""Remote compile for Triton: the process runs its front end (Python -> TTIR)
and kjitd the rest of Triton's pipeline, with the daemon's build of the same
Triton (kjit.triton.install(compile=True), or KJIT_TRITON=compile).

Triton's compile() is wrapped. For a kernel written in Python (an
ASTSource) whose files are in neither Triton's cache directory nor kjitd's
blob store, the wrapper does what compile() does up to the end of its first
stage (the TTIR, Gluon's TTGIR), sends that IR to kjitd with the options that
differ from the build's defaults, and writes what comes back (the binary,
Triton's metadata with this process's key, the intermediate files) through
Triton's cache manager under Triton's own key. Then it calls Triton's
compile(), which finds the kernel in its cache: the CompiledKernel, its
launcher and every later lookup are Triton's own, and the key is the key a
local compile has, so kernels compiled either way are interchangeable.

Never worse than local: whatever kjitd cannot serve (no daemon, a build the
daemon lacks, an option it does not take, a refusal, a timeout) is
compiled by Triton itself, once, with one log line per reason and a count
(stats()). A kernel is taken from kjitd only when the daemon's build is this
process's build (distribution, version and libtriton.so's digest) and the
metadata it answers with names the options this process compiles with.

A plugin installed with the build (uTLX: a library Triton loads from
TRITON_PLUGIN_PATHS and a stages hook its Python package sets) is part of
it: the process compiles through kjitd only when its plugins are the
daemon build's, the same distribution and version, the same stages hook key
and the same library bytes. Triton adds the hook's key to its own key, and
so does the wrapper; any other hook leaves the kernels to Triton itself.
"""

import dataclasses
import hashlib
import importlib
import json
import logging
import os
import re
import sys
import threading
import time
from typing import Dict, Optional, Tuple

_log = logging.getLogger("kjit.triton")

_lock = threading.Lock()
_installed = None  # Triton's own compile, once the wrapper is in its place
_counts: Dict[str, int] = {}
_reasons_logged = set()
_builds = None  # (asked at, {name: build}) from the daemon: _daemon_builds
_BUILDS_TTL = 60.0
# The options Triton's metadata holds as paths of this process's install:
# equal in content when the builds are the same (their digests are checked).
_PATH_OPTIONS = ("extern_libs",)
# Cache-invalidating environment variables that only set an option's
# default (enable_fp_fusion, default_dot_input_precision), which is sent.
_OPTION_DEFAULT_ENV_VARS = ("TRITON_DEFAULT_FP_FUSION", "TRITON_F32_DEFAULT")
# The cache-invalidating variable naming the plugin libraries Triton loads:
# checked against the daemon build's installed plugins (_plugins_reason).
_PLUGIN_PATHS_ENV_VAR = "TRITON_PLUGIN_PATHS"


def stats() -> Dict[str, int]:
    """What remote compile did in this process: "remote" (kernels kjitd
    compiled or had), "local" (compiled here), "local: REASON" (each reason)."""
    with _lock:
        return dict(_counts)


def _count(what: str) -> None:
    with _lock:
        _counts[what] = _counts.get(what, 0) + 1


def _local(reason: str):
    """Counts a local compile and says why, once per reason."""
    _count("local")
    _count("local: " + reason)
    with _lock:
        first = reason not in _reasons_logged
        _reasons_logged.add(reason)
    if first:
        _log.warning("kjit: Triton compiles locally: %s", reason)
        edits = _call_edits()
        if edits and not isinstance(edits, str) and edits[0] and "edits" not in _reasons_logged:
            _reasons_logged.add("edits")
            _log.warning("kjit: kernels Triton compiles here are compiled without this process's Triton edits "
                         "(KJIT_TRITON_EDITS or install(edits=...)), under Triton's own keys")


_edits = None  # (edits as the wire takes them, their digest): set_edits; None: KJIT_TRITON_EDITS


def set_edits(edits) -> None:
    """This process's own edits to Triton's stages, sent with every compile
    after the daemon's edits (None: those of KJIT_TRITON_EDITS, if any). They
    are in each kernel's key, as the daemon's are: a kernel compiled with
    them is never a hit for a process without them. Kernels this process
    compiles itself (kjitd unreachable, say) do not get them, and keep
    Triton's own key."""
    global _edits
    if edits is None:
        _edits = None
        return
    from kjit._request import triton_edits  # noqa: PLC0415
    checked = triton_edits(edits)
    _edits = (checked, _edits_digest(checked))


def _edits_digest(edits) -> str:
    return hashlib.sha256(json.dumps(edits, sort_keys=True, separators=(",", ":")).encode()).hexdigest() if edits else ""


def _call_edits():
    """(edits, digest) for this process's compiles, or a reason (str) why
    the environment's cannot be used."""
    if _edits is not None:
        return _edits
    text = os.environ.get("KJIT_TRITON_EDITS", "").strip()
    if not text:
        return [], ""
    from kjit._request import triton_edits  # noqa: PLC0415
    try:
        checked = triton_edits(json.loads(text))
    except (ValueError, TypeError) as error:
        return "KJIT_TRITON_EDITS is not a JSON list of edits: %s" % str(error).split("\n")[0]
    return checked, _edits_digest(checked)


def install() -> None:
    """Puts the wrapper in place of triton.compile (idempotent). Kernels
    whose binder Triton already made keep the compile they took then. Also
    remembers Triton's build hash per install (kjit._triton_key)."""
    global _installed
    with _lock:
        if _installed is not None:
            return
        import triton  # noqa: PLC0415
        import triton.compiler  # noqa: PLC0415
        import triton.compiler.compiler as compiler_module  # noqa: PLC0415
        _installed = compiler_module.compile
        for module in (triton, triton.compiler, compiler_module):
            module.compile = compile
        try:
            from kjit import _triton_key  # noqa: PLC0415
            _triton_key.install()
        except Exception as error:  # noqa: BLE001  (Triton works out its hash itself, as without kjit)
            _log.warning("kjit: Triton's build hash is not remembered: %s", error)


def compile(src, target=None, options=None, _env_vars=None):  # noqa: A001  (Triton's name)
    original = _installed
    key_suffix = ""
    try:
        reason, key_suffix = _remote_compile(src, target, options, _env_vars, sys._getframe())
    except Exception as error:  # a bug here must never cost the user a kernel
        reason = "kjit's remote compile failed: %s: %s" % (type(error).__name__, str(error).split("\n")[0])
        if type(error).__name__ == "CompilationError":
            # The kernel's own error in the front end: Triton reports it, as always.
            _end_claim(give_up=True)
            return original(src, target=target, options=options, _env_vars=_env_vars)
    # A served kernel's group store ends its claim; one that was not served
    # gives it up here, before Triton's compile() takes one of its own.
    _end_claim(give_up=reason is not None)
    if reason is not None:
        _local(reason)
        return original(src, target=target, options=options, _env_vars=_env_vars)
    if not key_suffix:
        return original(src, target=target, options=options, _env_vars=_env_vars)
    return _with_stages_key(key_suffix, lambda: original(src, target=target, options=options,
                                                         _env_vars=_env_vars))


_thread = threading.local()  # .suffix: what this thread's compile() adds to Triton's key
# The stages hook _stages_hook took the place of (a plugin's, or None): its
# key and its changes to the stages are passed on.
_chained = None


def _key_suffix(stages_digest: str, edits_digest: str) -> str:
    """What changes in Triton's stages adds to its key, as a stages hook's key
    would be: the daemon's edits and plugins, then this process's edits.
    Without either it is empty, and the key is Triton's own."""
    return ("kjit-stages-" + stages_digest if stages_digest else "") + \
        ("kjit-edits-" + edits_digest if edits_digest else "")


def _stages_hook(*args, **kwargs):
    """Triton's stages hook, installed once a compile changes Triton's
    stages (the daemon's changes or this process's edits), in place of the
    hook that was there (a plugin's, _chained), which it calls through to:
    for a compile() that remote compile served it adds what the remote
    compile added to the key after the plugin's key, so compile() finds the
    kernel it stored; for any other it is the plugin's hook (or nothing).
    Triton calls it with its stages only on a miss, which for a served
    kernel would compile here without those changes under their key:
    refused."""
    suffix = getattr(_thread, "suffix", "")
    chained = _chained
    if not args and not kwargs:
        if chained is None:
            return (suffix, hashlib.sha256(suffix.encode()).hexdigest()) if suffix else ("", "")
        key, digest = chained()
        if not suffix:
            return key, digest
        return key + suffix, hashlib.sha256((digest + suffix).encode()).hexdigest()
    if suffix:
        raise RuntimeError("kjit: the kernel kjitd compiled with Triton edits or plugins is not in Triton's "
                           "cache directory any more; compile again")
    return chained(*args, **kwargs) if chained is not None else None


def _plugin_hook(hook):
    """The stages hook of this process's plugin, if any: `hook` (Triton's
    knob), or the one kjit's own hook calls through to."""
    return _chained if hook is _stages_hook else hook


def _with_stages_key(suffix: str, call):
    global _chained
    from triton import knobs  # noqa: PLC0415
    with _lock:
        if knobs.runtime.add_stages_inspection_hook is not _stages_hook:
            _chained = knobs.runtime.add_stages_inspection_hook
            knobs.runtime.add_stages_inspection_hook = _stages_hook
    _thread.suffix = suffix
    try:
        return call()
    finally:
        _thread.suffix = ""


def _remote_compile(src, target, options, env_vars, compiling):
    """Leaves the kernel in Triton's cache directory, compiled by kjitd or
    found there or in kjitd: (None, what it added to Triton's key) when it
    did, else (why it did not, ""). `compiling` is the frame of the compile()
    call, which a claim on the kernel lives with."""
    reason, suffix = _remote_compile_steps(src, target, options, env_vars, compiling)
    return reason, (suffix if reason is None else "")


def _end_claim(give_up: bool) -> None:
    name = getattr(_thread, "claim", None)
    _thread.claim = None
    if give_up and name is not None and "kjit._claims" in sys.modules:
        sys.modules["kjit._claims"].holder.finish(name)


def _remote_compile_steps(src, target, options, env_vars, compiling):
    from triton import knobs  # noqa: PLC0415
    from triton.compiler.compiler import ASTSource, make_backend  # noqa: PLC0415
    from triton._C.libtriton import get_cache_invalidating_env_vars, ir  # noqa: PLC0415
    from triton.runtime.cache import get_cache_key, get_cache_manager  # noqa: PLC0415
    from triton.runtime.driver import driver  # noqa: PLC0415

    if not isinstance(src, ASTSource):
        return "the source is an IR file, not a Python kernel", ""
    if knobs.compilation.always_compile:
        return "TRITON_ALWAYS_COMPILE is set", ""
    if knobs.compilation.override or knobs.compilation.dump_ir:
        return "TRITON_KERNEL_OVERRIDE or TRITON_KERNEL_DUMP is set (a developer's local tools)", ""
    # A plugin's hook (checked against the daemon's build below), as
    # Triton's compile() calls it: kjit's own only passes it on.
    plugin_hook = _plugin_hook(knobs.runtime.add_stages_inspection_hook)
    if target is None:
        target = driver.active.get_current_target()
    backend = make_backend(target)
    parsed = backend.parse_options(dict(options or dict(), **src.parse_options()))
    env_vars = get_cache_invalidating_env_vars() if env_vars is None else env_vars
    # Such a variable changes what the daemon's stages would do; those that
    # only set an option's default reach it as that option, sent below.
    # The plugin libraries' variable is checked against the daemon's build.
    acting = sorted(name for name in env_vars
                    if name not in _OPTION_DEFAULT_ENV_VARS and name != _PLUGIN_PATHS_ENV_VAR)
    if acting:
        return "Triton's cache-invalidating environment variables are set (%s)" % ", ".join(acting), ""
    edits = _call_edits()
    if isinstance(edits, str):
        return edits, ""
    edits, edits_digest = edits
    build, why = _daemon_build()
    if build is None:
        return why, ""
    why, plugin_key = _plugins_reason(build, plugin_hook, env_vars)
    if why is not None:
        return why, ""
    backend_name = "hip" if target.backend == "hip" else "cuda"
    # Triton's key, then its plugin's stages hook key, as compile() adds it.
    key = get_cache_key(src, backend, parsed, env_vars=env_vars) + plugin_key
    # The daemon's edits and plugins, and this process's edits, change
    # Triton's stages: their digests are in the key as a stages hook's key
    # would be (after the plugin's: _stages_hook), so a kernel they changed
    # is never another's hit, and taking them out gives the original key back.
    key_suffix = _key_suffix(build["stages_digest"].get(backend_name, ""), edits_digest)
    key += key_suffix
    key_hash = hashlib.sha256(key.encode("utf-8")).hexdigest()
    file_name = src.name[:150]
    metadata_filename = file_name + ".json"
    manager = get_cache_manager(key_hash)
    claim_group = getattr(manager, "claim_group", None)
    if claim_group is None:
        return "Triton's cache manager is not kjit's (TRITON_CACHE_MANAGER=%s)" % type(manager).__name__, ""
    from kjit import triton as kjit_triton  # noqa: PLC0415
    # In this process's directory or in kjitd already, or compiled by the
    # process that holds its claim; else this process holds it until it puts
    # the group (or _end_claim gives it up).
    _thread.claim = (kjit_triton._namespace(), key_hash, metadata_filename)
    if claim_group(metadata_filename, compiling) is not None:
        _count("remote")
        return None, key_suffix

    client = kjit_triton._shared_client()
    if client is None:
        return "kjitd cannot be reached", ""
    target_text = "hip:%s" % target.arch if backend_name == "hip" else "cuda:%d" % target.arch
    accepted = set()
    for option in build["options"]:
        scope, _, rest = option.partition(".")
        if scope == backend_name:
            accepted.add(rest.split(":")[0].strip())
    # An option is sent when it differs from the options class's own default
    # or from this process's default (an environment variable may set that):
    # the daemon's worker, with no TRITON_* in its environment, then parses
    # the same options. One it does not take must be this process's default.
    defaults = backend.parse_options({})
    sent = {}
    for field in dataclasses.fields(parsed):
        value = getattr(parsed, field.name)
        default = getattr(defaults, field.name)
        if field.name in accepted and isinstance(value, (bool, int, float, str)):
            if value != default or field.default is dataclasses.MISSING or value != field.default:
                sent[field.name] = value
        elif value != default:
            return "option %s=%r is not one kjitd takes" % (field.name, value), ""

    # The front end: what compile() does up to the end of its first stage.
    metadata = {"hash": key_hash, "target": target, **parsed.__dict__, **env_vars}
    metadata["triton_version"] = _triton_version()
    first_keys = list(metadata)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    stages = dict()
    backend.add_stages(stages, parsed, src.language)
    module = src.make_ir(target, parsed, backend.get_codegen_implementation(parsed), backend.get_module_map(), context)
    source_text = str(module)
    first_stage = src.ext
    front_end = str(stages[first_stage](module, metadata))

    from kjit._errors import KjitError  # noqa: PLC0415
    try:
        result = client.compile(front_end, target=target_text, kind="triton", name=file_name + "." + first_stage,
                                triton_options=sent, triton_build=build["name"], triton_edits=edits,
                                timeout=_compile_timeout())
    except KjitError as error:
        return "kjitd did not compile it: %s" % (str(error).splitlines()[0] if str(error) else type(error).__name__), ""
    theirs = result.triton_metadata
    for name in parsed.__dict__:
        if name in _PATH_OPTIONS:
            continue
        if _as_json(getattr(parsed, name)) != theirs.get(name):
            return "kjitd compiled it with %s=%r, not %r" % (name, theirs.get(name), getattr(parsed, name)), ""
    # This process's key and option values first, in compile()'s order; then
    # what the daemon's later stages wrote.
    merged = {k: v for k, v in metadata.items()}
    for name, value in theirs.items():
        if name not in first_keys:
            merged[name] = value
    # Put in the order compile() puts them: the source, each stage's output, the metadata.
    binary_ext = "hsaco" if target.backend == "hip" else "cubin"
    files = dict(result.triton_files)
    files[first_stage] = front_end
    files[binary_ext] = result.artifact
    group = {file_name + ".source": manager.put(source_text, file_name + ".source")}
    for ext in list(stages)[list(stages).index(first_stage):]:
        if ext in files:
            group[file_name + "." + ext] = manager.put(files[ext], file_name + "." + ext)
    # What this build's compile() does after its stages, in the process: the
    # metadata as it writes it, then the files it makes from that metadata
    # and the source (fbtriton: extern_libs by name only, a launch metadata
    # schema and a standalone launcher's source).
    compiler_module = sys.modules["triton.compiler.compiler"]
    sanitize = getattr(compiler_module, "_sanitize_extern_libs", None)
    if sanitize is not None:
        merged = sanitize(merged)
    group[metadata_filename] = manager.put(json.dumps(merged, default=vars), metadata_filename, binary=False)
    if hasattr(backend, "make_launch_metadata"):
        name = file_name + ".launch_metadata"
        group[name] = manager.put(json.dumps(backend.make_launch_metadata(merged, src)), name, binary=False)
    if hasattr(backend, "make_launcher_src"):
        name = file_name + ".launcher_src"
        group[name] = manager.put(backend.make_launcher_src(merged, src), name, binary=False)
    manager.put_group(metadata_filename, group)
    _count("remote")
    return None, key_suffix


def _as_json(value):
    return json.loads(json.dumps(value, default=vars))


def _compile_timeout() -> float:
    try:
        return float(os.environ.get("KJIT_TRITON_COMPILE_TIMEOUT", "600"))
    except ValueError:
        return 600.0


def _triton_version() -> str:
    import triton  # noqa: PLC0415
    return triton.__version__


def _canonical(name: str) -> str:
    """A distribution's name as packaging compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


_hook_owners: Dict[str, Optional[Tuple[str, str]]] = {}  # module file -> (distribution, version)
_library_digests: Dict[Tuple, Optional[str]] = {}  # (path, device, inode, size, mtime) -> SHA-256


def _hook_owner(hook) -> Optional[Tuple[str, str]]:
    """(name, version) of the installed distribution whose files hold the
    module that defines `hook`, as the daemon's worker finds a hook's
    plugin; None for a hook of no distribution (a script's, a test's).
    Worked out once per module per process."""
    module = sys.modules.get(getattr(hook, "__module__", None) or "")
    source = getattr(module, "__file__", None)
    if not source:
        return None
    source = os.path.realpath(source)
    with _lock:
        if source in _hook_owners:
            return _hook_owners[source]
    from importlib import metadata  # noqa: PLC0415
    owner = None
    try:
        names = metadata.packages_distributions().get(module.__name__.split(".")[0], [])
        for name in dict.fromkeys(names):
            distribution = metadata.distribution(name)
            if any(os.path.realpath(distribution.locate_file(f)) == source for f in distribution.files or []):
                owner = (distribution.metadata["Name"] or name, distribution.version)
                break
    except Exception:  # noqa: BLE001  (a broken environment: the hook is nobody's)
        owner = None
    with _lock:
        _hook_owners[source] = owner
    return owner


def _library_digest(path: str) -> Optional[str]:
    """The SHA-256 of a plugin library, worked out once per process for
    each version of the file (its path, inode, size and modification time)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:
        if stamp in _library_digests:
            return _library_digests[stamp]
    digest = _file_digest(path)
    with _lock:
        _library_digests[stamp] = digest
    return digest


def _describe_hook(hook) -> str:
    return "%s.%s" % (getattr(hook, "__module__", "?"), getattr(hook, "__qualname__", type(hook).__name__))


def _plugins_reason(build, hook, env_vars) -> Tuple[Optional[str], str]:
    """(None, the key text Triton adds for this process's stages hook) when
    this process's plugins are those installed with the daemon's build: the
    libraries Triton loaded from TRITON_PLUGIN_PATHS have the bytes of the
    build's, and its stages hook (if any) belongs to a distribution of the
    build's plugins, at the same version, with the same key. Else (why not, "")."""
    plugins = build.get("installed_plugins") or []
    name = build["name"]
    mine = []
    for path in filter(None, env_vars.get(_PLUGIN_PATHS_ENV_VAR, "").split(os.pathsep)):
        digest = _library_digest(path)
        if digest is None:
            return "TRITON_PLUGIN_PATHS names a library that cannot be read (%s)" % path, ""
        mine.append(digest)
    theirs = [library["sha256"] for plugin in plugins for library in plugin.get("libraries", [])]
    if sorted(mine) != sorted(theirs):
        if not theirs:
            return "TRITON_PLUGIN_PATHS names plugin libraries kjitd's %s does not load" % name, ""
        listed = ", ".join("%s %s" % (p["distribution"], p["version"]) for p in plugins if p.get("libraries"))
        return "the plugin libraries Triton loads here (TRITON_PLUGIN_PATHS) are not those kjitd's %s loads " \
               "(%s)" % (name, listed), ""
    hooked = [plugin for plugin in plugins if plugin.get("stages_hook_sha256")]
    if hook is None:
        if hooked:
            return "kjitd's %s runs the stages hook of %s %s, which this process has not installed " \
                   "(its package is not imported)" % (name, hooked[0]["distribution"], hooked[0]["version"]), ""
        return None, ""
    owner = _hook_owner(hook)
    if owner is None:
        return "a stages inspection hook (a plugin) is installed in this process (%s) that no installed " \
               "distribution provides" % _describe_hook(hook), ""
    same = [plugin for plugin in hooked if _canonical(plugin["distribution"]) == _canonical(owner[0])]
    if not same:
        return "a stages inspection hook (a plugin) is installed in this process (%s, of %s %s) that kjitd's %s " \
               "does not run" % (_describe_hook(hook), owner[0], owner[1], name), ""
    plugin = same[0]
    if plugin["version"] != owner[1]:
        return "this process has %s %s, kjitd's %s has %s" % (owner[0], owner[1], name, plugin["version"]), ""
    if len(hooked) > 1:
        return "kjitd's %s runs the stages hooks of several plugins (%s)" % (
            name, ", ".join(p["distribution"] for p in hooked)), ""
    key, _ = hook()
    if hashlib.sha256(str(key).encode("utf-8")).hexdigest() != plugin["stages_hook_sha256"]:
        return "the stages hook of %s %s here has another key than kjitd's %s's (its stages differ)" % (
            owner[0], owner[1], name), ""
    return None, key


def _daemon_build():
    """The daemon's build that is this process's build (a dict: name,
    libtriton_sha256, options, stages_digest, installed_plugins), else None
    and why."""
    mine = _this_build()
    if mine is None:
        return None, "this process's Triton has no distribution kjit can name"
    name, digest = mine
    builds, why = _daemon_builds()
    if builds is None:
        return None, why
    build = builds.get(name)
    if build is None:
        return None, "kjitd has no build %s (it has %s)" % (name, ", ".join(sorted(builds)) or "none")
    if build["libtriton_sha256"] != digest:
        return None, "kjitd's %s is another build than this process's (libtriton.so differs)" % name
    return build, None


def _daemon_builds():
    """The daemon's Triton builds by name, asked at most every _BUILDS_TTL
    seconds: kept in the process and, for the processes that follow it, in a
    file under the user's cache directory (a process whose kernels are all
    in kjitd then reads them directly, without loading gRPC to ask)."""
    global _builds
    now = time.time()
    with _lock:
        cached = _builds
    if cached is not None and now - cached[0] < _BUILDS_TTL:
        return cached[1], None
    from kjit._address import default_address  # noqa: PLC0415
    address = default_address()
    memo = _memo_path("triton-builds-2-%s.json" % hashlib.sha256(address.encode("utf-8")).hexdigest()[:16])
    try:
        with open(memo, encoding="utf-8") as f:
            saved = json.load(f)
        if 0 <= now - float(saved["at"]) < _BUILDS_TTL and isinstance(saved["builds"], dict):
            with _lock:
                _builds = (float(saved["at"]), saved["builds"])
            return saved["builds"], None
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from kjit import triton as kjit_triton  # noqa: PLC0415
    client = kjit_triton._shared_client()
    if client is None:
        return None, "kjitd cannot be reached"
    from kjit._errors import KjitError  # noqa: PLC0415
    try:
        listed = _list_builds(client)
    except KjitError as error:
        kjit_triton._failed(error)
        return None, "kjitd cannot be reached"
    builds = {b.name: {"name": b.name, "libtriton_sha256": b.libtriton_sha256, "options": list(b.options),
                       "stages_digest": dict(b.stages_digest), "installed_plugins": plugins}
              for b, plugins in listed if not b.error}
    with _lock:
        _builds = (now, builds)
    _write_json(memo, {"at": now, "builds": builds})
    return builds, None


def _list_builds(client):
    """[(kjit.TritonBuild, its installed plugins)] of the daemon's builds,
    each plugin a dict: distribution, version, libraries [{path, sha256}],
    stages_hook_sha256 (the message's fields; none from a daemon without them)."""
    from kjit import _calls  # noqa: PLC0415
    from kjit._types import TritonBuild, convert  # noqa: PLC0415
    from kjit.v1 import compiler_pb2  # noqa: PLC0415

    def plugins_of(message):
        if "installed_plugins" not in message.DESCRIPTOR.fields_by_name:
            return []
        return [{"distribution": p.distribution, "version": p.version,
                 "libraries": [{"path": lib.path, "sha256": lib.sha256} for lib in p.libraries],
                 "stages_hook_sha256": p.stages_hook_sha256} for p in message.installed_plugins]

    def read(response):
        return [(convert(TritonBuild, m), plugins_of(m)) for m in response.triton]

    return client._send(_calls.Call("compiler.ListToolkits", compiler_pb2.ListToolkitsRequest(), read), None)


def _memo_path(name: str) -> Optional[str]:
    from kjit._direct import user_cache_directory  # noqa: PLC0415
    directory = user_cache_directory()
    return os.path.join(directory, name) if directory is not None else None


def _write_json(path: Optional[str], value) -> None:
    """Atomically; a directory that cannot be written only costs the next process an RPC."""
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temp = "%s.%d.%d" % (path, os.getpid(), threading.get_ident())  # threads of a process write apart
        with open(temp, "w", encoding="utf-8") as f:
            json.dump(value, f)
        os.replace(temp, path)
    except OSError:
        pass


_this = None


def _this_build():
    """("triton-3.9.0", libtriton.so's SHA-256) of this process's Triton:
    worked out once per install (naming the distribution reads every
    installed package's metadata; libtriton.so is hundreds of megabytes)
    and remembered under the user's cache directory by the library's path,
    size and modification time."""
    global _this
    if _this is not None:
        return _this
    import triton  # noqa: PLC0415
    library = os.path.join(os.path.dirname(triton.__file__), "_C", "libtriton.so")
    try:
        stat = os.stat(library)
    except OSError:
        return None
    memo = _memo_path("triton-builds-here.json")
    stamp = "%s:%d:%d:%s" % (library, stat.st_size, stat.st_mtime_ns, triton.__version__)
    try:
        with open(memo, encoding="utf-8") as f:
            known = json.load(f)
        entry = known.get(stamp) if isinstance(known, dict) else None
        if isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, str) for x in entry):
            _this = tuple(entry)
            return _this
    except (OSError, ValueError, TypeError):  # TypeError: no cache directory (memo None)
        known = {}
    distribution = _distribution_of(triton.__version__)
    digest = _file_digest(library)
    if distribution is None or digest is None:
        return None
    _this = ("%s-%s" % distribution, digest)
    known = known if isinstance(known, dict) else {}
    known[stamp] = list(_this)
    _write_json(memo, known)
    return _this


def _distribution_of(version: str) -> Optional[Tuple[str, str]]:
    """(name, version) of the installed distribution that provides the
    package `triton` at this version ("triton", "fbtriton", ...), as the
    daemon's worker names its build: by the distribution's own version,
    which may lack the local part triton.__version__ has ("3.7.4" for
    fbtriton's "3.7.4+fb")."""
    from importlib import metadata  # noqa: PLC0415
    try:
        candidates = metadata.packages_distributions().get("triton", [])
    except Exception:  # noqa: BLE001  (a broken environment: no remote compile)
        return None
    for name in candidates:
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if installed.split("+")[0] == version.split("+")[0]:
            return name, installed
    return None


def _file_digest(path: str) -> Optional[str]:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()
