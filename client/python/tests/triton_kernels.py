"""Three Triton kernels (one with tl.dot) that the Triton tests and the
fleet benchmark compile: one definition, so that both compile the same."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask), mask=mask)


@triton.jit
def softmax_kernel(x, out, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    values = tl.load(x + row * stride + cols, mask=cols < n, other=-float("inf"))
    values = tl.exp(values - tl.max(values, axis=0))
    tl.store(out + row * stride + cols, values / tl.sum(values, axis=0), mask=cols < n)


@triton.jit
def matmul_kernel(a, b, c, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tile_a = tl.load(a + r[:, None] * BLOCK + r[None, :])
    tile_b = tl.load(b + r[:, None] * BLOCK + r[None, :])
    tl.store(c + r[:, None] * BLOCK + r[None, :], tl.dot(tile_a, tile_b))
