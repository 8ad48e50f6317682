"""Small Triton kernels of the shapes models use, for kjit's Triton IR corpus.

Each kernel is listed in CORPUS with the signature, constexprs and compile
options export_ttir.py lowers it with (to TTIR for cuda:90). They are written
for this corpus, small on purpose: what matters is that they exercise the
passes real kernels do (dots, reductions, loops with pipelining, tensor
descriptors, fp8, random numbers), not their speed.
"""
import triton
import triton.language as tl


@triton.jit
def layer_norm_fwd(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = diff * rstd * w + b
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, stride_s, seq_len, sm_scale, HEAD_DIM: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # One head, rows of length HEAD_DIM; online softmax over blocks of keys.
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_s + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, seq_len, BLOCK_N):
        cols = start_n + offs_n
        kv_mask = cols[:, None] < seq_len
        k = tl.load(k_ptr + cols[:, None] * stride_s + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + cols[:, None] * stride_s + offs_d[None, :], mask=kv_mask, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        qk = tl.where(cols[None, :] < seq_len, qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_s + offs_d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < seq_len)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * num_n)
    first_m = group * GROUP_M
    group_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_m)
    pid_n = (pid % (GROUP_M * num_n)) // group_m
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn, c, mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def fp8_matmul(a_ptr, b_ptr, c_ptr, scale_a, scale_b, M, N, K, stride_am, stride_bn, stride_cm,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # A row-major (M, K) fp8, B given as (N, K) fp8 (K-major, as fp8 tensor cores want), per-tensor scales.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k + offs_k)[None, :])
        b = tl.load(b_ptr + offs_n[:, None] * stride_bn + (k + offs_k)[None, :])
        acc = tl.dot(a, tl.trans(b), acc)
    acc = acc * (tl.load(scale_a) * tl.load(scale_b))
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.bfloat16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def persistent_matmul_tma(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr):
    # Persistent: NUM_SMS programs walk the tiles; loads and stores through device-side tensor descriptors.
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tl.cdiv(M, BLOCK_M) * num_n
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True):
        off_m = (tile // num_n) * BLOCK_M
        off_n = (tile % num_n) * BLOCK_N
        acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([off_n, k * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([off_m, off_n], acc.to(tl.float16))


@triton.jit
def dropout(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@triton.jit
def row_argmax_sum(x_ptr, idx_ptr, sum_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(idx_ptr + row, tl.argmax(x, axis=0))
    tl.store(sum_ptr + row, tl.sum(tl.where(cols < n_cols, x, 0.0), axis=0))


@triton.jit
def matmul_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    # Persistent with pointer loads (Triton's persistent-matmul tutorial's
    # shape): NUM_SMS programs walk grouped tiles.
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_n
    for tile in tl.range(tl.program_id(0), num_m * num_n, NUM_SMS, flatten=True):
        first_m = (tile // in_group) * GROUP_M
        group_m = min(num_m - first_m, GROUP_M)
        pid_m = first_m + (tile % group_m)
        pid_n = (tile % in_group) // group_m
        offs_m = tl.where(pid_m * BLOCK_M + tl.arange(0, BLOCK_M) < M, pid_m * BLOCK_M + tl.arange(0, BLOCK_M), 0)
        offs_n = tl.where(pid_n * BLOCK_N + tl.arange(0, BLOCK_N) < N, pid_n * BLOCK_N + tl.arange(0, BLOCK_N), 0)
        offs_m = tl.max_contiguous(tl.multiple_of(offs_m, BLOCK_M), BLOCK_M)
        offs_n = tl.max_contiguous(tl.multiple_of(offs_n, BLOCK_N), BLOCK_N)
        acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            offs_k = k * BLOCK_K + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :], mask=offs_k[None, :] < K, other=0.0)
            b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :], mask=offs_k[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc.to(tl.float16),
                 mask=(rows[:, None] < M) & (cols[None, :] < N))


# name -> (kernel, signature, constexprs, options). Options are what
# triton.compile takes; export_ttir.py writes them next to the TTIR.
CORPUS = {
    "layer_norm_fwd": (layer_norm_fwd, {
        "x_ptr": "*fp16", "y_ptr": "*fp16", "w_ptr": "*fp32", "b_ptr": "*fp32", "mean_ptr": "*fp32",
        "rstd_ptr": "*fp32", "stride": "i32", "n_cols": "i32", "eps": "fp32", "BLOCK": "constexpr"
    }, {"BLOCK": 1024}, {"num_warps": 8}),
    "softmax": (softmax, {
        "out_ptr": "*fp16", "in_ptr": "*fp16", "in_stride": "i32", "out_stride": "i32", "n_cols": "i32",
        "BLOCK": "constexpr"
    }, {"BLOCK": 2048}, {"num_warps": 8}),
    "attention_fwd": (attention_fwd, {
        "q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "stride_s": "i32",
        "seq_len": "i32", "sm_scale": "fp32", "HEAD_DIM": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"
    }, {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64}, {"num_warps": 4, "num_stages": 3}),
    "matmul": (matmul, {
        "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
        "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32", "stride_bn": "constexpr",
        "stride_cm": "i32", "stride_cn": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
        "BLOCK_K": "constexpr", "GROUP_M": "constexpr"
    }, {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8},
                {"num_warps": 8, "num_stages": 3}),
    "fp8_matmul": (fp8_matmul, {
        "a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*bf16", "scale_a": "*fp32", "scale_b": "*fp32",
        "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", "stride_bn": "i32", "stride_cm": "i32",
        "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"
    }, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, {"num_warps": 8, "num_stages": 3}),
    "persistent_matmul_tma": (persistent_matmul_tma, {
        "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
        "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "NUM_SMS": "constexpr"
    }, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_SMS": 132}, {"num_warps": 4, "num_stages": 3}),
    "dropout": (dropout, {
        "x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "p": "fp32", "seed": "i32", "BLOCK": "constexpr"
    }, {"BLOCK": 1024}, {"num_warps": 4}),
    "row_argmax_sum": (row_argmax_sum, {
        "x_ptr": "*fp32", "idx_ptr": "*i32", "sum_ptr": "*fp32", "stride": "i32", "n_cols": "i32",
        "BLOCK": "constexpr"
    }, {"BLOCK": 512}, {"num_warps": 4}),
    "matmul_persistent": (matmul_persistent, {
        "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
        "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
        "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "NUM_SMS": "constexpr"
    }, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "NUM_SMS": 132}, {"num_warps": 8,
                                                                                        "num_stages": 2}),
}
