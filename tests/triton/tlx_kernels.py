"""A TLX kernel for kjit's Triton IR corpus (needs a Triton build with TLX,
e.g. fbtriton: triton.language.extra.tlx). Exported by export_ttir.py --tlx.

A matmul whose K loop is software-pipelined by hand through shared memory:
NUM_BUFFERS buffers per operand (tlx.local_alloc); while the tile of step k
is read from its buffer (local_view + local_load), the tile of step k+1 is
loaded from global memory and written into the next buffer (local_store).
Triton's membar pass inserts the barriers the buffer reuse needs.
"""
import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def tlx_pipelined_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_BUFFERS: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]

    a_bufs = tlx.local_alloc((BLOCK_M, BLOCK_K), tl.float16, NUM_BUFFERS)
    b_bufs = tlx.local_alloc((BLOCK_K, BLOCK_N), tl.float16, NUM_BUFFERS)
    num_k = tl.cdiv(K, BLOCK_K)

    # Prologue: the first tile into buffer 0.
    tlx.local_store(tlx.local_view(a_bufs, 0), tl.load(a_ptrs, mask=offs_k[None, :] < K, other=0.0))
    tlx.local_store(tlx.local_view(b_bufs, 0), tl.load(b_ptrs, mask=offs_k[:, None] < K, other=0.0))

    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in range(0, num_k):
        buf = k % NUM_BUFFERS
        if k + 1 < num_k:
            nxt = (k + 1) % NUM_BUFFERS
            k_left = K - (k + 1) * BLOCK_K
            a_next = tl.load(a_ptrs + (k + 1) * BLOCK_K, mask=offs_k[None, :] < k_left, other=0.0)
            b_next = tl.load(b_ptrs + (k + 1) * BLOCK_K * stride_bk, mask=offs_k[:, None] < k_left, other=0.0)
            tlx.local_store(tlx.local_view(a_bufs, nxt), a_next)
            tlx.local_store(tlx.local_view(b_bufs, nxt), b_next)
        a = tlx.local_load(tlx.local_view(a_bufs, buf))
        b = tlx.local_load(tlx.local_view(b_bufs, buf))
        acc = tl.dot(a, b, acc)

    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


CORPUS = {
    "tlx_pipelined_matmul": (tlx_pipelined_matmul, {
        "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
        "stride_bk": "i32", "stride_cm": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
        "BLOCK_K": "constexpr", "NUM_BUFFERS": "constexpr"
    }, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "NUM_BUFFERS": 3}, {"num_warps": 4, "num_stages": 1}),
}
