"""Compiles TLX kernels for one target without a GPU, in a process of
Triton 3.8 with the uTLX plugin (the interpreter of install-deps' triton-3.8.0
build, whose triton-utlx .pth puts libutlx.so in TRITON_PLUGIN_PATHS at
start), as that build's users compile: `import utlx_plugin` sets its stages
hook. The kernels are tests/triton/utlx_kernels.py's corpus (which takes in
tlx_kernels.py's), each for the target if the corpus lists it, then one plain
kernel (triton_kernels.add_kernel). Prints JSON: what remote compile did,
each kernel's hash and binary digest, and the stages hook in force.

The client is on PYTHONPATH, where no .pth file runs: with KJIT_TRITON set,
this does first what the package's kjit-triton.pth does at start.

KJIT_CHILD_TARGET: "cuda:90", "cuda:100", "hip:gfx950".
KJIT_CHILD_KERNELS: names to compile (comma-separated); default: every one.
KJIT_CHILD_HOOK=unknown: a stages hook of this script's own in place of
uTLX's, calling through to it (so the kernels still compile as under uTLX)
with a key of its own: a hook no distribution provides. KJIT_CHILD_HOOK=none:
utlx_plugin is not imported (libutlx.so is still loaded), and only the plain
kernel is compiled.
KJIT_CHILD_EDITS: this process's Triton edits (JSON), installed from code.
"""

import os

os.environ.get("KJIT_TRITON") and __import__("kjit._triton_startup")  # kjit-triton.pth's line

import hashlib  # noqa: E402
import importlib.metadata  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import triton  # noqa: E402

if os.environ.get("KJIT_CHILD_HOOK") != "none":
    import utlx_plugin  # noqa: F401  its stages hook and patches, as its users get them
from triton import knobs  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    target_name = os.environ.get("KJIT_CHILD_TARGET", "cuda:90")
    backend, _, arch = target_name.partition(":")
    target = GPUTarget("hip", arch, 64 if int(arch[3:-2] or 0) < 10 else 32) if backend == "hip" \
        else GPUTarget("cuda", int(arch), 32)
    edits = os.environ.get("KJIT_CHILD_EDITS")
    if edits:
        import kjit.triton
        kjit.triton.install(compile=True, edits=json.loads(edits))
    if os.environ.get("KJIT_CHILD_HOOK") == "unknown":
        plugin_hook = knobs.runtime.add_stages_inspection_hook

        def test_hook(*args, **kwargs):
            if not args and not kwargs:
                key, _ = plugin_hook()
                key += "-a-test-hook"
                return key, hashlib.sha256(key.encode()).hexdigest()
            return plugin_hook(*args, **kwargs)

        knobs.runtime.add_stages_inspection_hook = test_hook
    hook = knobs.runtime.add_stages_inspection_hook

    # (Its import of triton.language.extra.tlx would import utlx_plugin.)
    corpus = load(REPO / "tests" / "triton" / "utlx_kernels.py", "utlx_kernels").CORPUS \
        if os.environ.get("KJIT_CHILD_HOOK") != "none" else {}
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from triton_kernels import add_kernel
    kernels = [(name, fn, signature, constexprs, options, attrs)
               for name, (fn, signature, constexprs, options, attrs, targets) in corpus.items()
               if target_name in targets]
    kernels.append(("add_kernel", add_kernel, {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32",
                                               "BLOCK": "constexpr"}, {"BLOCK": 1024}, None, None))
    wanted = [k for k in os.environ.get("KJIT_CHILD_KERNELS", "").split(",") if k]
    if wanted:
        kernels = [k for k in kernels if k[0] in wanted]

    start = time.perf_counter()
    cpu_start = time.process_time()
    binaries, hashes = {}, {}
    for name, fn, signature, constexprs, options, attrs in kernels:
        compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options)
        binaries[name] = hashlib.sha256(compiled.asm["hsaco" if backend == "hip" else "cubin"]).hexdigest()
        hashes[name] = compiled.hash
    remote = sys.modules["kjit._triton_remote"].stats() if "kjit._triton_remote" in sys.modules else None
    json.dump({"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu_start,
               "binaries": binaries, "hashes": hashes, "remote": remote, "triton": triton.__version__,
               "hook": "%s.%s" % (hook.__module__, hook.__qualname__) if hook is not None else None,
               "plugin_paths": os.environ.get("TRITON_PLUGIN_PATHS"),
               "utlx": importlib.metadata.version("triton-utlx")}, sys.stdout)


if __name__ == "__main__":
    main()
