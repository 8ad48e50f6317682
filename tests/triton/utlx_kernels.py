"""TLX kernels for stock Triton 3.8 with the uTLX plugin (the triton-utlx
wheel: `triton.language.extra.tlx` is its `utlx_plugin`). Exported by
export_ttir.py --utlx into data/utlx/, one file per kernel and target.

All three are matmuls whose K loop is software-pipelined by hand through
NUM_STAGES shared-memory buffers per operand (tlx.local_alloc): the tiles of
the next NUM_STAGES - 1 steps are in flight as asynchronous copies
(tlx.async_load, one commit group per step) while step k waits for its own
group (tlx.async_load_wait_group) and multiplies.
- utlx_async_load_matmul reads the tiles into registers (tlx.local_load)
  for tl.dot: it compiles for NVIDIA and AMD.
- utlx_async_dot_matmul multiplies straight from shared memory with
  tlx.async_dot (Hopper's wgmma), keeping one dot in flight
  (tlx.async_dot_wait) so a buffer is refilled only once the dot that read
  it is done: sm_90 only.
- utlx_aliased_epilogue_matmul is utlx_async_load_matmul staging its output
  tile in the memory of A's buffers (tlx.local_alloc(reuse=...)): its TTIR
  keeps a tlx.local_alias op, which only a process with the plugin loaded
  can parse and only uTLX's llir stage lowers.
tlx_kernels.py's tlx_pipelined_matmul (synchronous loads, tlx.local_store)
compiles unchanged under uTLX and is exported with them.

The pointers, sizes and strides are declared divisible by 16 (the
attributes Triton gives a launch on torch tensors whose sizes are multiples
of 16): without them a row's copy (pointer, stride) or its mask (K) is not
known to be aligned, and an asynchronous copy of single fp16 elements is
refused ("cp.async does not support transfers smaller than 4 bytes").
"""
import importlib.util
import os

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def utlx_async_load_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]

    a_bufs = tlx.local_alloc((BLOCK_M, BLOCK_K), tl.float16, NUM_STAGES)
    b_bufs = tlx.local_alloc((BLOCK_K, BLOCK_N), tl.float16, NUM_STAGES)
    num_k = tl.cdiv(K, BLOCK_K)

    # Prologue: steps 0 .. NUM_STAGES - 2 in flight, a group each.
    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):
        token_a = tlx.async_load(a_ptrs, tlx.local_view(a_bufs, i), mask=offs_k[None, :] < K - i * BLOCK_K)
        token_b = tlx.async_load(b_ptrs, tlx.local_view(b_bufs, i), mask=offs_k[:, None] < K - i * BLOCK_K)
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk

    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    # num_stages=0: the loop is pipelined here, not by Triton.
    for k in tl.range(0, num_k, num_stages=0):
        buf = k % NUM_STAGES
        # Step k's group is done once at most NUM_STAGES - 2 are pending.
        tlx.async_load_wait_group(NUM_STAGES - 2)
        a = tlx.local_load(tlx.local_view(a_bufs, buf))
        b = tlx.local_load(tlx.local_view(b_bufs, buf))
        # Step k + NUM_STAGES - 1 into the buffer step k - 1 read (its
        # local_load is behind us); masked off past the end of K.
        i = k + NUM_STAGES - 1
        token_a = tlx.async_load(a_ptrs, tlx.local_view(a_bufs, i % NUM_STAGES),
                                 mask=offs_k[None, :] < K - i * BLOCK_K)
        token_b = tlx.async_load(b_ptrs, tlx.local_view(b_bufs, i % NUM_STAGES),
                                 mask=offs_k[:, None] < K - i * BLOCK_K)
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
        acc = tl.dot(a, b, acc)

    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def utlx_async_dot_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]

    a_bufs = tlx.local_alloc((BLOCK_M, BLOCK_K), tl.float16, NUM_STAGES)
    b_bufs = tlx.local_alloc((BLOCK_K, BLOCK_N), tl.float16, NUM_STAGES)
    num_k = tl.cdiv(K, BLOCK_K)

    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):
        token_a = tlx.async_load(a_ptrs, tlx.local_view(a_bufs, i), mask=offs_k[None, :] < K - i * BLOCK_K)
        token_b = tlx.async_load(b_ptrs, tlx.local_view(b_bufs, i), mask=offs_k[:, None] < K - i * BLOCK_K)
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk

    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in tl.range(0, num_k, num_stages=0):
        buf = k % NUM_STAGES
        tlx.async_load_wait_group(NUM_STAGES - 2)
        acc = tlx.async_dot(tlx.local_view(a_bufs, buf), tlx.local_view(b_bufs, buf), acc)
        # The dot of step k - 1 read the buffer refilled next: wait until
        # only this step's dot is in flight.
        acc = tlx.async_dot_wait(1, acc)
        i = k + NUM_STAGES - 1
        token_a = tlx.async_load(a_ptrs, tlx.local_view(a_bufs, i % NUM_STAGES),
                                 mask=offs_k[None, :] < K - i * BLOCK_K)
        token_b = tlx.async_load(b_ptrs, tlx.local_view(b_bufs, i % NUM_STAGES),
                                 mask=offs_k[:, None] < K - i * BLOCK_K)
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    acc = tlx.async_dot_wait(0, acc)

    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def utlx_aliased_epilogue_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                 NUM_STAGES: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]

    a_bufs = tlx.local_alloc((BLOCK_M, BLOCK_K), tl.float16, NUM_STAGES)
    b_bufs = tlx.local_alloc((BLOCK_K, BLOCK_N), tl.float16, NUM_STAGES)
    # The output tile is staged in the memory of A's buffers, free once the
    # loop is done (tlx.local_alias until uTLX's llir stage rewrites it).
    c_buf = tlx.local_alloc((BLOCK_M, BLOCK_N), tl.float16, 1, reuse=a_bufs)
    num_k = tl.cdiv(K, BLOCK_K)

    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):
        token_a = tlx.async_load(a_ptrs, tlx.local_view(a_bufs, i), mask=offs_k[None, :] < K - i * BLOCK_K)
        token_b = tlx.async_load(b_ptrs, tlx.local_view(b_bufs, i), mask=offs_k[:, None] < K - i * BLOCK_K)
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk

    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in tl.range(0, num_k, num_stages=0):
        buf = k % NUM_STAGES
        tlx.async_load_wait_group(NUM_STAGES - 2)
        a = tlx.local_load(tlx.local_view(a_bufs, buf))
        b = tlx.local_load(tlx.local_view(b_bufs, buf))
        i = k + NUM_STAGES - 1
        token_a = tlx.async_load(a_ptrs, tlx.local_view(a_bufs, i % NUM_STAGES),
                                 mask=offs_k[None, :] < K - i * BLOCK_K)
        token_b = tlx.async_load(b_ptrs, tlx.local_view(b_bufs, i % NUM_STAGES),
                                 mask=offs_k[:, None] < K - i * BLOCK_K)
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
        acc = tl.dot(a, b, acc)

    # The last groups (masked off) still write A's buffers: wait for all.
    tlx.async_load_wait_group(0)
    c_view = tlx.local_view(c_buf, 0)
    tlx.local_store(c_view, acc.to(tl.float16))
    c = tlx.local_load(c_view)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _tlx_kernels():
    # tlx_kernels.py beside this file, loaded under its own name (so its
    # TTIR's locations name it) without putting tests/triton on sys.path.
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tlx_kernels.py")
    spec = importlib.util.spec_from_file_location("tlx_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_MATMUL_SIGNATURE = {
    "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
    "stride_bk": "i32", "stride_cm": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"
}
# Every pointer and integer argument (0-8) divisible by 16, as Triton
# specializes a launch on torch tensors whose sizes are multiples of 16.
_ALIGNED = {(i, ): [["tt.divisibility", 16]] for i in range(9)}
_ALL_TARGETS = ["cuda:90", "cuda:100", "hip:gfx950"]

# name -> (function, signature, constexprs, options, attrs, targets)
CORPUS = {
    "utlx_async_load_matmul": (utlx_async_load_matmul, dict(_MATMUL_SIGNATURE, NUM_STAGES="constexpr"), {
        "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "NUM_STAGES": 3
    }, {"num_warps": 4, "num_stages": 1}, _ALIGNED, _ALL_TARGETS),
    "utlx_async_dot_matmul": (utlx_async_dot_matmul, dict(_MATMUL_SIGNATURE, NUM_STAGES="constexpr"), {
        "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_STAGES": 3
    }, {"num_warps": 4, "num_stages": 1}, _ALIGNED, ["cuda:90"]),
    # An alias has its source's size: 4 x 128 x 32 fp16 for one 128 x 128.
    "utlx_aliased_epilogue_matmul": (utlx_aliased_epilogue_matmul, dict(_MATMUL_SIGNATURE, NUM_STAGES="constexpr"), {
        "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "NUM_STAGES": 4
    }, {"num_warps": 4, "num_stages": 1}, _ALIGNED, _ALL_TARGETS),
}
for _name, (_fn, _signature, _constexprs, _options) in _tlx_kernels().CORPUS.items():
    CORPUS[_name] = (_fn, _signature, _constexprs, _options, _ALIGNED, _ALL_TARGETS)
