"""Plain triton.compile of a TTIR/TTGIR file, no kjit code: the reference a
kjit Triton compile is compared with byte for byte.

    <venv>/bin/python reference_compile.py FILE.ttir --target cuda:90 \
        [--option num_warps=8 ...] --out DIR

Run it in a fresh process. Every TRITON_* variable is removed and the cache
goes to a new directory in DIR (removed after), so the compile is Triton's defaults and
never a cache hit; it compiles from that (empty) directory, since ptxas 12
embeds the mtime of files it finds under the names in the line info. Writes DIR/<name>.<cubin|hsaco>, DIR/<name>.json (the
metadata file exactly as Triton wrote it) and DIR/result.json
({"name", "binary", "metadata", "ms"}). On a compile error writes
DIR/error.txt and exits 1.

In a Triton build with the uTLX plugin (triton-utlx, whose .pth runs at
interpreter start) the compile is the one that build's own processes run:
TRITON_PLUGIN_PATHS names the plugin library as the .pth sets it in a clean
environment (Triton 3.8 loads it while libtriton is imported), no UTLX_*
variable is set, and utlx_plugin is imported (its stages hook and patches)
before compiling. --env NAME=VALUE sets a plugin's variable before Triton
and its plugins are imported (as kjit's [[triton.plugin]] environment does);
--plugin-hook-off then drops the plugin package's stages hook (as a request's
triton_plugins_off does).

--reuse DIR (or $KJIT_TRITON_REFERENCES): the test scripts that compare with
the same references (daemon-tests.sh, check_worker.py) share them there.
The first process to need one compiles it, as above, and keeps what it
wrote under a key of everything the compile depends on (the file's bytes,
target, options, variables, this script, the interpreter, and the size and
mtime of every file of the build's Triton and plugin packages); another one
that needs it waits for it (a lock per key) and copies it. A compile that
killed its process is kept by nobody.
"""
import argparse
import fcntl
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import traceback


def parse_value(text):
    # Options come as name=value: ints, true/false, else a string.
    if text in ("true", "True"):
        return True
    if text in ("false", "False"):
        return False
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


# How long a process waits for another one compiling the same reference.
REUSE_WAIT_SECONDS = 600


def build_fingerprint():
    """This interpreter's Triton, without importing it: the interpreter, and
    the size and mtime of every file of the packages a compile imports
    (bytecode caches aside, which a first import may write)."""
    import importlib.util
    digest = hashlib.sha256(f"{os.path.realpath(sys.executable)} {sys.version}".encode())
    for package in ("triton", "utlx_plugin"):
        spec = importlib.util.find_spec(package)
        for top in (spec.submodule_search_locations or []) if spec else []:
            for root, dirs, files in os.walk(top):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(files):
                    st = os.stat(os.path.join(root, name))
                    digest.update(f"{os.path.relpath(os.path.join(root, name), top)} {st.st_size} "
                                  f"{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def reuse_key(args, options):
    with open(args.file, "rb") as f:
        source = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.abspath(__file__), "rb") as f:
        script = hashlib.sha256(f.read()).hexdigest()
    what = {"file": os.path.realpath(args.file), "source": source, "target": args.target, "options": options,
            "env": args.env, "plugin_hook_off": args.plugin_hook_off, "script": script, "build": build_fingerprint()}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def copy_files(source, destination, names):
    for name in names:
        shutil.copyfile(os.path.join(source, name), os.path.join(destination, name))


def parse_options(items):
    options = {}
    for item in items:
        name, _, value = item.partition("=")
        options[name] = parse_value(value)
    return options


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--target", required=True, help="cuda:90, hip:gfx942 ...")
    parser.add_argument("--option", action="append", default=[], help="name=value")
    parser.add_argument("--out", required=True)
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE, a plugin's variable")
    parser.add_argument("--plugin-hook-off", action="store_true", help="no plugin package's stages hook")
    parser.add_argument("--reuse", default=os.environ.get("KJIT_TRITON_REFERENCES", ""),
                        help="a directory of references shared by the processes that compare with them")
    args = parser.parse_args()
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    if not args.reuse:
        return compile_reference(args)
    os.makedirs(args.reuse, exist_ok=True)
    kept = os.path.join(args.reuse, reuse_key(args, parse_options(args.option)))
    with open(kept + ".lock", "w") as lock:
        # Another process compiling the same one: wait for it, within a bound
        # (past it, compile here without sharing).
        deadline = time.monotonic() + REUSE_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    print(f"reference_compile: {kept} still locked after {REUSE_WAIT_SECONDS} s; compiling here")
                    return compile_reference(args)
                time.sleep(0.1)
        if os.path.isdir(kept):
            copy_files(kept, args.out, os.listdir(kept))
            print(f"reference_compile: reused the reference an earlier process compiled ({kept})")
            return 1 if os.path.exists(os.path.join(kept, "error.txt")) else 0
        status = compile_reference(args)
        written = [n for n in os.listdir(args.out) if not n.startswith("triton-cache-")]
        if "result.json" in written or "error.txt" in written:
            shutil.rmtree(kept + ".new", ignore_errors=True)
            os.makedirs(kept + ".new")
            copy_files(args.out, kept + ".new", written)
            os.rename(kept + ".new", kept)
        return status


def compile_reference(args):
    for name in [k for k in os.environ if k.startswith("TRITON_")]:
        del os.environ[name]
    # The cache lies in DIR, which the caller removes: a compile that
    # aborts the process (LLVM's "Cannot select") leaves it behind.
    cache = tempfile.mkdtemp(prefix="triton-cache-", dir=args.out)
    os.environ["TRITON_CACHE_DIR"] = cache
    utlx = sys.modules.get("_utlx_autoregister")  # imported by uTLX's .pth
    if utlx is not None:
        for name in [k for k in os.environ if k.startswith("UTLX_")]:
            del os.environ[name]
        utlx.register()
        utlx.install_alias_finder()
    for item in args.env:
        name, _, value = item.partition("=")
        os.environ[name] = value

    import triton
    if utlx is not None:
        import utlx_plugin  # noqa: F401
    if args.plugin_hook_off:
        triton.knobs.runtime.add_stages_inspection_hook = None
    from triton.backends.compiler import GPUTarget

    backend, arch = args.target.split(":", 1)
    target = GPUTarget(backend, int(arch) if backend == "cuda" else arch, 32 if backend == "cuda" else 64)
    options = parse_options(args.option)

    # Compile from an empty directory, as kjit's worker does: ptxas before
    # 13 records the size and mtime of each source file a .file directive
    # names when it can find it, relative paths from the working directory.
    args.file = os.path.abspath(args.file)
    os.chdir(cache)
    start = time.perf_counter()
    try:
        kernel = triton.compile(args.file, target=target, options=options)
    except Exception:
        with open(os.path.join(args.out, "error.txt"), "w") as f:
            f.write(traceback.format_exc())
        shutil.rmtree(cache, ignore_errors=True)
        return 1
    ms = (time.perf_counter() - start) * 1000
    name = kernel.metadata.name
    ext = "cubin" if backend == "cuda" else "hsaco"
    # The files Triton itself put in its cache, not re-serialised ones.
    group = kernel.metadata_group
    metadata_file = next(path for file, path in group.items() if file.endswith(".json"))
    binary_file = next(path for file, path in group.items() if file.endswith("." + ext))
    shutil.copyfile(binary_file, os.path.join(args.out, f"{name}.{ext}"))
    shutil.copyfile(metadata_file, os.path.join(args.out, f"{name}.json"))
    with open(os.path.join(args.out, "result.json"), "w") as f:
        json.dump({"name": name, "binary": f"{name}.{ext}", "metadata": f"{name}.json", "ms": ms}, f)
    shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
