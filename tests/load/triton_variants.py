#!/usr/bin/env python3
"""Distinct Triton kernels from the TTIR corpus (tests/triton/data), for
long runs of a daemon: a few hundred requests that are all misses, each a
real Triton kernel Triton compiles (python3 stdlib only).

A variant is a corpus kernel with its function renamed (`tt.func public
@softmax(` to `@softmax_s7_v17(`: always valid, since each module has one
function and nothing else names it; the main axis, so every variant's text
is its own), compiled for one of several targets with num_warps in 1, 2,
4, 8 and num_stages in 1 to 4. The list is the same for the same seed.

Pairs Triton itself cannot compile are left out (UNSUPPORTED); every other
(kernel, target, num_warps, num_stages) of the grid was compiled with
triton.compile (triton 3.9.0) when this list was made: all 392 compiled,
in 0.65 s of CPU on average and 1.6 s at most.

    python3 tests/load/triton_variants.py --seed 7 --count 300 --out DIR

writes DIR/<name>.ttir for each and DIR/manifest.json; imported,
variants(seed, count) gives the same list without writing anything.
"""
import argparse
import itertools
import json
import os
import random
import re
import sys

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "triton", "data")

TARGETS = ("cuda:80", "cuda:90", "cuda:100", "hip:gfx942")
NUM_WARPS = (1, 2, 4, 8)
NUM_STAGES = (1, 2, 3, 4)
# A kernel with a dot (tt.dot) on its 64- and 128-wide tiles with one or two
# warps costs Triton 2.5 to 6 s of CPU (the attention kernel with one warp
# for sm_80: 6 s), against 0.5 to 1.5 s with four or eight: the smaller
# counts would cross a 5 s CPU bound per compile, so those take 4 and 8.
DOT_NUM_WARPS = (4, 8)

# Triton fails on these for every num_warps and num_stages: FP8 dots and the
# TMA descriptors have no sm_80 lowering (its pass manager fails: the daemon
# answers INVALID_ARGUMENT), and LLVM aborts on the persistent TMA matmul
# for gfx942.
UNSUPPORTED = {
    ("fp8_matmul.ttir", "cuda:80"),
    ("persistent_matmul_tma.ttir", "cuda:80"),
    ("persistent_matmul_tma.ttir", "hip:gfx942"),
}

_FUNC = re.compile(r"tt\.func public @([A-Za-z_][A-Za-z0-9_]*)\(")


class Variant:
    """One request: the TTIR text, the target and Triton's options."""

    def __init__(self, index, kernel, name, target, options, text):
        self.index = index
        self.kernel = kernel  # the corpus file it came from
        self.name = name  # its function's name, which the file is named after
        self.target = target
        self.options = dict(options)
        self.text = text

    @property
    def filename(self):
        return f"{self.name}.ttir"

    def option_args(self):
        """`kjit compile`'s arguments for the target and options."""
        out = ["-t", self.target]
        for key, value in sorted(self.options.items()):
            out += ["--triton-option", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
        return out

    def identity(self):
        """What makes it distinct: text, target, options."""
        return (self.text, self.target, tuple(sorted(self.options.items())))

    def write(self, directory):
        path = os.path.join(directory, self.filename)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.text)
        return path

    def describe(self):
        return {"index": self.index, "kernel": self.kernel, "name": self.name, "file": self.filename,
                "target": self.target, "options": self.options}

    def __repr__(self):
        return f"Variant({self.name}, {self.target}, {self.options})"


def corpus(data_dir=DATA_DIR):
    """{file name: (TTIR text, its corpus options)} of the corpus's kernels."""
    with open(os.path.join(data_dir, "corpus.json")) as f:
        kernels = json.load(f)["kernels"]
    out = {}
    for name in sorted(kernels):
        with open(os.path.join(data_dir, name), encoding="utf-8") as f:
            out[name] = (f.read(), dict(kernels[name]))
    return out


def function_name(text):
    names = _FUNC.findall(text)
    if len(names) != 1:
        raise ValueError(f"a corpus module must hold exactly one public function, not {names}")
    return names[0]


def rename(text, new_name):
    """The module with its one public function renamed: the name appears
    nowhere else in a module Triton exported (its call sites would be other
    functions, and there are none)."""
    old = function_name(text)
    if re.search(r"@" + re.escape(old) + r"\b", _FUNC.sub("", text)):
        raise ValueError(f"@{old} is referenced besides its definition; renaming it is not safe")
    return _FUNC.sub(f"tt.func public @{new_name}(", text, count=1)


def grid(kernels, targets=TARGETS):
    """Every (kernel, target, num_warps, num_stages) that compiles, in order."""
    out = []
    for kernel in sorted(kernels):
        for target in targets:
            if (kernel, target) in UNSUPPORTED:
                continue
            for warps in DOT_NUM_WARPS if "tt.dot" in kernels[kernel][0] else NUM_WARPS:
                for stages in NUM_STAGES:
                    out.append((kernel, target, warps, stages))
    return out


def stream(seed, targets=TARGETS, data_dir=DATA_DIR):
    """Variants without end, the same sequence for the same seed: the grid
    shuffled, walked round and round, each visit a new name (so all are
    distinct, however many are taken)."""
    kernels = corpus(data_dir)
    cells = grid(kernels, targets)
    if not cells:
        raise ValueError(f"no kernel of {data_dir} compiles for {targets}")
    rng = random.Random(seed)
    rng.shuffle(cells)
    bases = {kernel: function_name(text) for kernel, (text, _) in kernels.items()}
    i = 0
    while True:
        kernel, target, warps, stages = cells[i % len(cells)]
        text, options = kernels[kernel]
        name = f"{bases[kernel]}_s{seed}_v{i}"
        yield Variant(i, kernel, name, target, dict(options, num_warps=warps, num_stages=stages), rename(text, name))
        i += 1


def variants(seed, count=300, targets=TARGETS, data_dir=DATA_DIR):
    """The first `count` of stream(seed)."""
    out = list(itertools.islice(stream(seed, targets, data_dir), count))
    assert len({v.identity() for v in out}) == len(out)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated")
    parser.add_argument("--out", help="write the files and manifest.json here")
    args = parser.parse_args()
    listed = variants(args.seed, args.count, tuple(args.targets.split(",")))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for v in listed:
            v.write(args.out)
        with open(os.path.join(args.out, "manifest.json"), "w") as f:
            json.dump([v.describe() for v in listed], f, indent=1)
    by_target = {}
    for v in listed:
        by_target[v.target] = by_target.get(v.target, 0) + 1
    print(f"{len(listed)} distinct variants of {len({v.kernel for v in listed})} kernels: "
          + ", ".join(f"{t} {n}" for t, n in sorted(by_target.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
