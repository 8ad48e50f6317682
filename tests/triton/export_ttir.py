"""Writes the corpus kernels' TTIR: one <kernel>.ttir each and corpus.json.

Run with a Triton build's interpreter (no GPU needed):
    <venv>/bin/python tests/triton/export_ttir.py OUT_DIR            # kernels.py
    <venv>/bin/python tests/triton/export_ttir.py --tlx OUT_DIR      # tlx_kernels.py (fbtriton)

Each kernel is compiled from Python for cuda:90 with triton.compile and its
asm["ttir"] kept. That text carries the kernel's source locations as
loc("<path of kernels.py>":line:col); the directory part is replaced with
"tests/triton/" so the files do not depend on the checkout's location (the
locations still name the right file and lines relative to the repository).
corpus.json maps each file name to the options it was lowered with; they are
also the options a test should compile the TTIR with.
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
    args = parser.parse_args()

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


if __name__ == "__main__":
    main()
