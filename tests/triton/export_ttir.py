"""Writes the corpus kernels' TTIR: one <kernel>.ttir each and corpus.json.

Run with a Triton build's interpreter (no GPU needed):
    <venv>/bin/python tests/triton/export_ttir.py OUT_DIR            # kernels.py
    <venv>/bin/python tests/triton/export_ttir.py --tlx OUT_DIR      # tlx_kernels.py (fbtriton)
    <venv>/bin/python tests/triton/export_ttir.py --utlx OUT_DIR     # utlx_kernels.py (3.8 + uTLX)

Each kernel is compiled from Python for cuda:90 with triton.compile and its
asm["ttir"] kept. That text carries the kernel's source locations as
loc("<path of kernels.py>":line:col); the directory part is replaced with
"tests/triton/" so the files do not depend on the checkout's location (the
locations still name the right file and lines relative to the repository).
corpus.json maps each file name to the options it was lowered with; they are
also the options a test should compile the TTIR with.

--utlx exports utlx_kernels.py with a Triton build holding the uTLX plugin
(triton-utlx), compiled as that build's own processes compile: the plugin
library in TRITON_PLUGIN_PATHS as its .pth sets it, utlx_plugin imported.
Each kernel is exported once per target it lists, as <kernel>.<target>.ttir
(sm_90, sm_100, gfx950): on NVIDIA uTLX's ttir stage ends by converting to
TritonGPU, so the file is TritonGPU IR for that one target. corpus.json
then also maps each file to its target ("targets") and names the uTLX
version ("utlx").
"""
import argparse
import importlib.util
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--tlx", action="store_true", help="export tlx_kernels.py instead of kernels.py")
    parser.add_argument("--utlx", action="store_true", help="export utlx_kernels.py (Triton with uTLX)")
    args = parser.parse_args()
    if args.utlx:
        return export_utlx(args.out)

    # A private cache, and nothing from the caller's TRITON_* environment.
    for name in [k for k in os.environ if k.startswith("TRITON_")]:
        del os.environ[name]
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="kjit-export-")

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource

    module_name = "tlx_kernels" if args.tlx else "kernels"
    path = os.path.join(HERE, module_name + ".py")
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    os.makedirs(args.out, exist_ok=True)
    target = GPUTarget("cuda", 90, 32)
    corpus = {}
    for name, (fn, signature, constexprs, options) in module.CORPUS.items():
        src = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
        ttir = triton.compile(src, target=target, options=options).asm["ttir"]
        ttir = ttir.replace(f'"{HERE}{os.sep}', '"tests/triton/')
        if HERE in ttir:
            sys.exit(f"{name}: the TTIR still names {HERE}")
        with open(os.path.join(args.out, name + ".ttir"), "w") as f:
            f.write(ttir)
        corpus[name + ".ttir"] = options
        print(f"{name}.ttir: {len(ttir)} bytes, options {options}", file=sys.stderr)
    with open(os.path.join(args.out, "corpus.json"), "w") as f:
        json.dump({"triton": f"{triton.__version__}", "target": "cuda:90", "kernels": corpus}, f, indent=2,
                  sort_keys=True)
        f.write("\n")


def _file_target(target):
    """cuda:90 -> sm_90, hip:gfx950 -> gfx950: the part of a file's name
    saying which target it is for."""
    backend, arch = target.split(":", 1)
    return f"sm_{arch}" if backend == "cuda" else arch


def export_utlx(out):
    # As export does, nothing from the caller's TRITON_* environment; then
    # the one variable uTLX's .pth sets at interpreter start, as it sets it
    # in a clean environment (Triton 3.8 loads the library while libtriton
    # is imported, so before triton is).
    for name in [k for k in os.environ if k.startswith(("TRITON_", "UTLX_"))]:
        del os.environ[name]
    try:
        import _utlx_autoregister
    except ImportError:
        sys.exit("--utlx needs a Triton build with the uTLX plugin (triton-utlx)")
    _utlx_autoregister.register()
    _utlx_autoregister.install_alias_finder()
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="kjit-export-")

    import importlib.metadata
    import triton
    import utlx_plugin  # noqa: F401  its stages hook and patches, as its users get them
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource

    path = os.path.join(HERE, "utlx_kernels.py")
    spec = importlib.util.spec_from_file_location("utlx_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    os.makedirs(out, exist_ok=True)
    corpus, targets = {}, {}
    for name, (fn, signature, constexprs, options, attrs, kernel_targets) in module.CORPUS.items():
        for target_name in kernel_targets:
            backend, arch = target_name.split(":", 1)
            target = GPUTarget(backend, int(arch) if backend == "cuda" else arch, 32 if backend == "cuda" else 64)
            src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
            ttir = triton.compile(src, target=target, options=options).asm["ttir"]
            ttir = ttir.replace(f'"{HERE}{os.sep}', '"tests/triton/')
            if HERE in ttir:
                sys.exit(f"{name}: the TTIR still names {HERE}")
            file = f"{name}.{_file_target(target_name)}.ttir"
            with open(os.path.join(out, file), "w") as f:
                f.write(ttir)
            corpus[file] = options
            targets[file] = target_name
            print(f"{file}: {len(ttir)} bytes, {target_name}, options {options}", file=sys.stderr)
    with open(os.path.join(out, "corpus.json"), "w") as f:
        json.dump({"triton": f"{triton.__version__}", "utlx": importlib.metadata.version("triton-utlx"),
                   "targets": targets, "kernels": corpus}, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
