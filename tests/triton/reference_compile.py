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
"""
import argparse
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--target", required=True, help="cuda:90, hip:gfx942 ...")
    parser.add_argument("--option", action="append", default=[], help="name=value")
    parser.add_argument("--out", required=True)
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE, a plugin's variable")
    parser.add_argument("--plugin-hook-off", action="store_true", help="no plugin package's stages hook")
    args = parser.parse_args()

    for name in [k for k in os.environ if k.startswith("TRITON_")]:
        del os.environ[name]
    # The cache lies in DIR, which the caller removes: a compile that
    # aborts the process (LLVM's "Cannot select") leaves it behind.
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
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
    options = {}
    for item in args.option:
        name, _, value = item.partition("=")
        options[name] = parse_value(value)

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
