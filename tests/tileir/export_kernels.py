"""Exports three cuTile kernels as architecture-independent Tile IR bytecode.

Run with an interpreter that has cuda-tile (tests/tileir/run-tests.sh makes
one under build/): `python export_kernels.py OUT_DIR` writes
vector_add.tileirbc, matmul.tileirbc and hinted_matmul.tileirbc (a matmul
with occupancy and CTA-count hints per target, which the bytecode carries
for tileiras to apply). cuTile reads a kernel's source from
its file, so the kernels live here rather than in a string. No GPU needed.
"""

import sys
from pathlib import Path

import cuda.tile as ct
from cuda.tile.compilation import (ArrayConstraint, CallingConvention, KernelSignature, ScalarConstraint,
                                   export_kernel)

TILE = 128


@ct.kernel
def vector_add(a, b, c, tile: ct.Constant[int]):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(tile,))
    tb = ct.load(b, index=(bid,), shape=(tile,))
    ct.store(c, index=(bid,), tile=ta + tb)


@ct.kernel
def matmul(a, b, c, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    k_tiles = ct.num_tiles(a, axis=1, shape=(tm, tk))
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(k_tiles):
        ta = ct.load(a, index=(bm, k), shape=(tm, tk))
        tb = ct.load(b, index=(k, bn), shape=(tk, tn))
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=acc.astype(c.dtype))


# The same matmul with hints: the bytecode holds each target's values and
# tileiras applies the one for the sm it assembles for. Values chosen so that
# each of sm_90, 100, 107 (default) and 120 gets a cubin other than without
# hints: a hint that changed nothing would test nothing.
@ct.kernel(occupancy=ct.ByTarget(sm_90=8, sm_100=4, sm_120=16, default=8), num_ctas=ct.ByTarget(sm_100=2, default=1))
def hinted_matmul(a, b, c, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    k_tiles = ct.num_tiles(a, axis=1, shape=(tm, tk))
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(k_tiles):
        ta = ct.load(a, index=(bm, k), shape=(tm, tk))
        tb = ct.load(b, index=(k, bn), shape=(tk, tn))
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=acc.astype(c.dtype))


def array(dtype, ndim):
    return ArrayConstraint(dtype, ndim, index_dtype=ct.int32, stride_lower_bound_incl=0, alias_groups=(),
                           may_alias_internally=False)


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    conv = CallingConvention.cutile_python_v1()
    f32 = array(ct.float32, 1)
    export_kernel(vector_add, [KernelSignature([f32, f32, f32, TILE], conv, symbol="vector_add")],
                  str(out / "vector_add.tileirbc"), output_format="tileir_bytecode")
    f16 = array(ct.float16, 2)
    export_kernel(matmul, [KernelSignature([f16, f16, f16, 128, 128, 64], conv, symbol="matmul")],
                  str(out / "matmul.tileirbc"), output_format="tileir_bytecode")
    export_kernel(hinted_matmul, [KernelSignature([f16, f16, f16, 64, 64, 32], conv, symbol="hinted_matmul")],
                  str(out / "hinted_matmul.tileirbc"), output_format="tileir_bytecode")


if __name__ == "__main__":
    main(sys.argv[1])
