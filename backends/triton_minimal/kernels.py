"""Cumulative layer norm in Triton at teaching size: how to carry running statistics across time.

cLN normalizes frame t of a sequence by the mean and variance of *every value up to t*: all C
channels of frames 0..t. Written as cumulative sums (``E[x^2] - E[x]^2``) it is one line and
wrong in float32 once the signal has a DC offset; written as one program per sequence it is
exact but leaves the GPU idle (B = 4 sequences, 132 SMs). This file is the smallest design
that is neither: tiles of all channels x ``BT`` frames, so every tile is a program, and the
statistics of the frames before a tile reach it as a *carry*. It is the readable version of
the ``triton`` backend (``backends/triton/kernels.py``), which does the same in one launch
and one read of ``x``; the benchmark puts the two side by side.

Every partial statistic is a triple (n, mean, M2), M2 the sum of squared deviations from the
mean, and two of them merge with Chan's parallel rule (``_chan``, DESIGN.md section 2). The
rule is associative, so ``tl.reduce`` and ``tl.associative_scan`` can fold triples in any
tree, and there is no cancellation: nothing ever subtracts two large sums.

Forward, three launches:

1. ``_tile_stats`` (one program per tile): each frame's mean and M2 over the C channels, in
   blocks of channels merged by the same rule; the tile's total, a reduction over its frames.
2. ``_carry`` (one program per sequence): walks the sequence's tile totals a block at a time,
   scans each block and adds the carry of all earlier blocks, so ``P[b, j]`` holds the
   statistics of everything before tile j (``P[b, 0]``: the streaming state, the history of
   earlier chunks).
3. ``_normalize`` (one program per tile): scans its own frames' statistics, starts the scan
   from ``P[b, j]``, and writes y; it reads x a second time (from the L2 cache when the tile
   is still there). The last frame's statistics are the new streaming state.

Backward (DESIGN.md's formulas), the same three steps run backwards in time:
``_bwd_frame_sums`` forms each frame's channel sums of ``g = dy * gamma`` and ``g * xhat``,
the three per-frame terms whose suffix sums dx needs, their tile totals, and the per-tile rows
of dgamma / dbeta; ``_suffix_carry`` carries the tile totals from the last tile backwards (plain
sums: no cancellation once the last term is shifted by the first frame's mean K); ``_bwd_dx``
scans its own frames in reverse, adds the tiles after it, and writes dx. dgamma / dbeta
are the partial rows summed in a fixed order (``torch.sum``): the same bits every run.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from common.kernel_api import ClnStateTuple

#: Frames per tile. 128 fp32 frames are 512 contiguous bytes per channel row.
TILE_T = 128
#: Channels per block inside a tile (the tile's channels are walked a block at a time, so
#: any C fits: a block of 32 x 128 values is 32 values per thread at 4 warps).
BLOCK_C_MAX = 32
#: Tile totals per step of the carry loop.
CARRY_BLOCK = 256
NUM_WARPS = 4


@triton.jit
def _chan(na, ma, Ma, nb, mb, Mb):
    """Chan's rule: (n, mean, M2) of a followed by b. A count of 0 is the identity (frames
    past T carry n = 0), so the weight divides by max(n, 1) instead of n."""
    n = na + nb
    w = nb / tl.maximum(n, 1.0)
    d = mb - ma
    return n, ma + d * w, Ma + Mb + d * d * na * w


@triton.jit
def _frames(j, T, BT: tl.constexpr):
    """Tile j's frames and which of them exist (the last tile may run past T)."""
    t = j * BT + tl.arange(0, BT)
    return t, t < T


@triton.jit
def _channel_block(c0, C, T, t, tmask, BLOCK_C: tl.constexpr):
    """Channels c0 .. c0 + BLOCK_C of the tile: their ids, masks and offsets in a sample."""
    c = c0 + tl.arange(0, BLOCK_C)
    cmask = c < C
    return c, cmask, cmask[:, None] & tmask[None, :], c[:, None] * T + t[None, :]


@triton.jit
def _column(ptr, c, cmask):
    """A per-channel parameter as a float32 column, to broadcast over the tile's frames."""
    return tl.load(ptr + c, mask=cmask, other=0.0).to(tl.float32)[:, None]


@triton.jit
def _tile_stats(
    x_ptr, fm_ptr, fM_ptr, tot_ptr, C, T, NT, BLOCK_C: tl.constexpr, BT: tl.constexpr
):
    j = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    t, tmask = _frames(j, T, BT)
    x_b = x_ptr + b * C * T
    # Sums about K, the tile's first value, instead of about 0: with a DC offset D a float32
    # sum of values near D loses D * ulp(1) per value, and the offset cancels in x - K.
    K = tl.load(x_b + j * BT).to(tl.float32)
    n = tl.zeros([BT], tl.float32)
    m = tl.zeros([BT], tl.float32)
    M = tl.zeros([BT], tl.float32)
    for c0 in range(0, C, BLOCK_C):
        _, _, mask, offs = _channel_block(c0, C, T, t, tmask, BLOCK_C)
        v = tl.load(x_b + offs, mask=mask, other=0.0).to(tl.float32)
        v = tl.where(mask, v - K, 0.0)
        nc = tl.minimum(C - c0, BLOCK_C).to(tl.float32)
        mc = tl.sum(v, axis=0) / nc  # this block's mean of each frame: two passes, in registers
        dv = tl.where(mask, v - mc[None, :], 0.0)
        n, m, M = _chan(n, m, M, nc, mc, tl.sum(dv * dv, axis=0))
    m += K
    tl.store(fm_ptr + b * T + t, m, mask=tmask)
    tl.store(fM_ptr + b * T + t, M, mask=tmask)
    n = tl.where(tmask, n, 0.0)
    tn, tm, tM = tl.reduce((n, m, M), 0, _chan)  # the tile's total
    o = (b * NT + j) * 3
    tl.store(tot_ptr + o, tn)
    tl.store(tot_ptr + o + 1, tm)
    tl.store(tot_ptr + o + 2, tM)


@triton.jit
def _carry(
    tot_ptr,
    pre_ptr,
    s_n_ptr,
    s_m_ptr,
    s_M_ptr,
    NT,
    HAS_STATE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    if HAS_STATE:  # the history of earlier chunks starts the carry
        cn = tl.load(s_n_ptr + b)
        cm = tl.load(s_m_ptr + b)
        cM = tl.load(s_M_ptr + b)
    else:
        cn = tl.zeros([], tl.float32)
        cm = tl.zeros([], tl.float32)
        cM = tl.zeros([], tl.float32)
    pre_b = pre_ptr + b * (NT + 1) * 3
    tl.store(pre_b, cn)
    tl.store(pre_b + 1, cm)
    tl.store(pre_b + 2, cM)
    for j0 in range(0, NT, BLOCK):
        j = j0 + tl.arange(0, BLOCK)
        jmask = j < NT
        o = (b * NT + j) * 3
        n = tl.load(tot_ptr + o, mask=jmask, other=0.0)
        m = tl.load(tot_ptr + o + 1, mask=jmask, other=0.0)
        M = tl.load(tot_ptr + o + 2, mask=jmask, other=0.0)
        sn, sm, sM = tl.associative_scan((n, m, M), 0, _chan)  # within the block
        pn, pm, pM = _chan(cn, cm, cM, sn, sm, sM)  # ... after everything before it
        po = pre_b + (j + 1) * 3  # P[b, j + 1]: everything up to and including tile j
        tl.store(po, pn, mask=jmask)
        tl.store(po + 1, pm, mask=jmask)
        tl.store(po + 2, pM, mask=jmask)
        bn, bm, bM = tl.reduce((n, m, M), 0, _chan)
        cn, cm, cM = _chan(cn, cm, cM, bn, bm, bM)  # the carry into the next block


@triton.jit
def _normalize(
    x_ptr,
    y_ptr,
    gamma_ptr,
    beta_ptr,
    fm_ptr,
    fM_ptr,
    pre_ptr,
    mean_ptr,
    rstd_ptr,
    mean_last_ptr,
    m2_last_ptr,
    C,
    T,
    NT,
    eps,
    HAS_GAMMA: tl.constexpr,
    HAS_BETA: tl.constexpr,
    STATS: tl.constexpr,
    HAS_MLAST: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
):
    j = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    t, tmask = _frames(j, T, BT)
    fn = tl.where(tmask, C, 0).to(tl.float32)
    fm = tl.load(fm_ptr + b * T + t, mask=tmask, other=0.0)
    fM = tl.load(fM_ptr + b * T + t, mask=tmask, other=0.0)
    sn, sm, sM = tl.associative_scan((fn, fm, fM), 0, _chan)  # frames of this tile so far
    po = pre_ptr + (b * (NT + 1) + j) * 3  # P[b, j]: everything before this tile
    n, mu, M = _chan(tl.load(po), tl.load(po + 1), tl.load(po + 2), sn, sm, sM)
    rstd = 1.0 / tl.sqrt(M / tl.maximum(n, 1.0) + eps)
    if STATS:  # mu_t and r_t, for the backward
        tl.store(mean_ptr + b * T + t, mu, mask=tmask)
        tl.store(rstd_ptr + b * T + t, rstd, mask=tmask)
    # The new streaming state is the last frame's (its count is C * T more): written from the
    # same mu and M as that frame's output, so a forward alone and one that keeps the
    # statistics (whose state mean is mean[:, -1]) give bitwise the same state.
    last = t == T - 1
    tl.store(m2_last_ptr + b + 0 * t, M, mask=last)
    if HAS_MLAST:
        tl.store(mean_last_ptr + b + 0 * t, mu, mask=last)
    x_b = x_ptr + b * C * T
    y_b = y_ptr + b * C * T
    for c0 in range(0, C, BLOCK_C):
        c, cmask, mask, offs = _channel_block(c0, C, T, t, tmask, BLOCK_C)
        v = tl.load(x_b + offs, mask=mask, other=0.0).to(tl.float32)
        y = (v - mu[None, :]) * rstd[None, :]
        if HAS_GAMMA:
            y *= _column(gamma_ptr, c, cmask)
        if HAS_BETA:
            y += _column(beta_ptr, c, cmask)
        tl.store(y_b + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _bwd_frame_sums(
    dy_ptr,
    x_ptr,
    gamma_ptr,
    mean_ptr,
    rstd_ptr,
    count_ptr,
    abc_ptr,
    ttot_ptr,
    dgp_ptr,
    dbp_ptr,
    BT_ALL,
    C,
    T,
    NT,
    HAS_GAMMA: tl.constexpr,
    HAS_COUNT: tl.constexpr,
    HAS_DG: tl.constexpr,
    HAS_DB: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
):
    j = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    t, tmask = _frames(j, T, BT)
    mu = tl.load(mean_ptr + b * T + t, mask=tmask, other=0.0)
    r = tl.load(rstd_ptr + b * T + t, mask=tmask, other=0.0)
    x_b = x_ptr + b * C * T
    dy_b = dy_ptr + b * C * T
    G1 = tl.zeros([BT], tl.float32)
    G2 = tl.zeros([BT], tl.float32)
    row = (b * NT + j) * C  # this tile's row of dgamma / dbeta partials
    for c0 in range(0, C, BLOCK_C):
        c, cmask, mask, offs = _channel_block(c0, C, T, t, tmask, BLOCK_C)
        v = tl.load(x_b + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_b + offs, mask=mask, other=0.0).to(tl.float32)
        xhat = (v - mu[None, :]) * r[None, :]
        g = dy
        if HAS_GAMMA:
            g = dy * _column(gamma_ptr, c, cmask)
        G1 += tl.sum(g, axis=0)
        G2 += tl.sum(g * xhat, axis=0)
        if HAS_DG:
            tl.store(dgp_ptr + row + c, tl.sum(dy * xhat, axis=1), mask=cmask)
        if HAS_DB:
            tl.store(dbp_ptr + row + c, tl.sum(dy, axis=1), mask=cmask)
    n = (t + 1).to(tl.float32) * C
    if HAS_COUNT:
        n += tl.load(count_ptr + b)
    a = r * G1 / n
    bb = r * r * G2 / n
    K = tl.load(mean_ptr + b * T)  # the first frame's mean: the shift of the last term
    o = b * T + t
    cc = bb * (mu - K)  # frames past T: r = 0, so a = bb = cc = 0 there
    tl.store(abc_ptr + o, a, mask=tmask)
    tl.store(abc_ptr + BT_ALL + o, bb, mask=tmask)  # plane 1 (pointer steps: no int32 product)
    tl.store(abc_ptr + BT_ALL + BT_ALL + o, cc, mask=tmask)
    ot = (b * NT + j) * 3  # the tile's totals, for the suffix carry
    tl.store(ttot_ptr + ot, tl.sum(a, axis=0))
    tl.store(ttot_ptr + ot + 1, tl.sum(bb, axis=0))
    tl.store(ttot_ptr + ot + 2, tl.sum(cc, axis=0))


@triton.jit
def _suffix_carry(ttot_ptr, suf_ptr, NT, BLOCK: tl.constexpr):
    """The forward's carry run backwards, for plain sums: ``R[b, j]`` = the totals of tiles j
    and later (``R[b, NT]`` = 0), walking the tiles a block at a time from the last."""
    b = tl.program_id(0).to(tl.int64)
    suf_b = suf_ptr + b * (NT + 1) * 3
    ca = tl.zeros([], tl.float32)
    cb = tl.zeros([], tl.float32)
    cc = tl.zeros([], tl.float32)
    tl.store(suf_b + NT * 3, ca)
    tl.store(suf_b + NT * 3 + 1, cb)
    tl.store(suf_b + NT * 3 + 2, cc)
    nblocks = tl.cdiv(NT, BLOCK)
    for i in range(0, nblocks):
        j = (nblocks - 1 - i) * BLOCK + tl.arange(0, BLOCK)
        jmask = j < NT
        o = (b * NT + j) * 3
        ta = tl.load(ttot_ptr + o, mask=jmask, other=0.0)
        tb = tl.load(ttot_ptr + o + 1, mask=jmask, other=0.0)
        tc = tl.load(ttot_ptr + o + 2, mask=jmask, other=0.0)
        tl.store(suf_b + j * 3, tl.cumsum(ta, 0, reverse=True) + ca, mask=jmask)
        tl.store(suf_b + j * 3 + 1, tl.cumsum(tb, 0, reverse=True) + cb, mask=jmask)
        tl.store(suf_b + j * 3 + 2, tl.cumsum(tc, 0, reverse=True) + cc, mask=jmask)
        ca += tl.sum(ta, axis=0)  # the carry into the block before
        cb += tl.sum(tb, axis=0)
        cc += tl.sum(tc, axis=0)


@triton.jit
def _bwd_dx(
    dy_ptr,
    x_ptr,
    gamma_ptr,
    mean_ptr,
    rstd_ptr,
    abc_ptr,
    suf_ptr,
    dx_ptr,
    BT_ALL,
    C,
    T,
    NT,
    HAS_GAMMA: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
):
    j = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    t, tmask = _frames(j, T, BT)
    o = b * T + t
    r = tl.load(rstd_ptr + o, mask=tmask, other=0.0)
    # Suffix sums over frames: within the tile a reverse scan, then the tiles after it.
    ro = suf_ptr + (b * (NT + 1) + j + 1) * 3
    a = tl.load(abc_ptr + o, mask=tmask, other=0.0)
    Sa = tl.cumsum(a, 0, reverse=True) + tl.load(ro)
    bb = tl.load(abc_ptr + BT_ALL + o, mask=tmask, other=0.0)
    Sb = tl.cumsum(bb, 0, reverse=True) + tl.load(ro + 1)
    cc = tl.load(abc_ptr + BT_ALL + BT_ALL + o, mask=tmask, other=0.0)
    Sc = tl.cumsum(cc, 0, reverse=True) + tl.load(ro + 2)
    K = tl.load(mean_ptr + b * T)
    x_b = x_ptr + b * C * T
    for c0 in range(0, C, BLOCK_C):
        c, cmask, mask, offs = _channel_block(c0, C, T, t, tmask, BLOCK_C)
        v = tl.load(x_b + offs, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(dy_ptr + b * C * T + offs, mask=mask, other=0.0).to(tl.float32)
        if HAS_GAMMA:
            g *= _column(gamma_ptr, c, cmask)
        # dx = r g - sum_{t'>=t} a - sum_{t'>=t} b (x - mu_t'), the last sum shifted by K:
        # (x - K) S_b - sum b (mu_t' - K), so that a DC offset cancels in both differences.
        dx = r[None, :] * g - Sa[None, :] - (v - K) * Sb[None, :] + Sc[None, :]
        tl.store(dx_ptr + b * C * T + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


def _plan(C: int, T: int) -> tuple[int, int, int]:
    """(BLOCK_C, BT, NT): channels per block, frames per tile, tiles per sequence."""
    if C * T >= 2**31:
        raise ValueError(f"triton_minimal cLN: C * T = {C * T} exceeds the kernels' int32 offsets")
    block_c = min(triton.next_power_of_2(C), BLOCK_C_MAX)
    bt = min(triton.next_power_of_2(T), TILE_T)
    return block_c, bt, triton.cdiv(T, bt)


def cln_forward(
    x: Tensor,
    gamma: Tensor | None,
    beta: Tensor | None,
    eps: float,
    state: ClnStateTuple | None,
    y: Tensor,
    mean: Tensor | None,
    rstd: Tensor | None,
    m2_last: Tensor,
    mean_last: Tensor | None = None,
) -> None:
    B, C, T = x.shape
    block_c, bt, nt = _plan(C, T)
    f32 = dict(dtype=torch.float32, device=x.device)
    fm = torch.empty((B, T), **f32)
    fM = torch.empty((B, T), **f32)
    tot = torch.empty((B, nt, 3), **f32)
    pre = torch.empty((B, nt + 1, 3), **f32)
    if state is not None:
        s_n, s_m, s_M = state[0].to(torch.float32), state[1], state[2]
    else:
        s_n = s_m = s_M = m2_last  # never read (HAS_STATE=False)
    tiles = (nt, B)
    _tile_stats[tiles](x, fm, fM, tot, C, T, nt, BLOCK_C=block_c, BT=bt, num_warps=NUM_WARPS)
    _carry[(B,)](
        tot,
        pre,
        s_n,
        s_m,
        s_M,
        nt,
        HAS_STATE=state is not None,
        BLOCK=CARRY_BLOCK,
        num_warps=NUM_WARPS,
    )
    stats = mean is not None and rstd is not None
    _normalize[tiles](
        x,
        y,
        gamma if gamma is not None else x,
        beta if beta is not None else x,
        fm,
        fM,
        pre,
        mean if stats else fm,
        rstd if stats else fm,
        mean_last if mean_last is not None else fm,
        m2_last,
        C,
        T,
        nt,
        float(eps),
        HAS_GAMMA=gamma is not None,
        HAS_BETA=beta is not None,
        STATS=stats,
        HAS_MLAST=mean_last is not None,
        BLOCK_C=block_c,
        BT=bt,
        num_warps=NUM_WARPS,
    )


def cln_backward(
    dy: Tensor,
    x: Tensor,
    gamma: Tensor | None,
    mean: Tensor,
    rstd: Tensor,
    count: Tensor | None,
    dx: Tensor,
    dgamma: Tensor | None,
    dbeta: Tensor | None,
) -> None:
    B, C, T = x.shape
    block_c, bt, nt = _plan(C, T)
    f32 = dict(dtype=torch.float32, device=x.device)
    abc = torch.empty((3, B, T), **f32)
    ttot = torch.empty((B, nt, 3), **f32)
    suf = torch.empty((B, nt + 1, 3), **f32)
    dgp = torch.empty((B * nt, C), **f32) if dgamma is not None else abc
    dbp = torch.empty((B * nt, C), **f32) if dbeta is not None else abc
    tiles = (nt, B)
    _bwd_frame_sums[tiles](
        dy,
        x,
        gamma if gamma is not None else x,
        mean,
        rstd,
        count.to(torch.float32) if count is not None else mean,
        abc,
        ttot,
        dgp,
        dbp,
        B * T,  # the stride of the (3, B, T) planes (Triton passes it as int64 past 2**31)
        C,
        T,
        nt,
        HAS_GAMMA=gamma is not None,
        HAS_COUNT=count is not None,
        HAS_DG=dgamma is not None,
        HAS_DB=dbeta is not None,
        BLOCK_C=block_c,
        BT=bt,
        num_warps=NUM_WARPS,
    )
    _suffix_carry[(B,)](ttot, suf, nt, BLOCK=CARRY_BLOCK, num_warps=NUM_WARPS)
    _bwd_dx[tiles](
        dy,
        x,
        gamma if gamma is not None else x,
        mean,
        rstd,
        abc,
        suf,
        dx,
        B * T,
        C,
        T,
        nt,
        HAS_GAMMA=gamma is not None,
        BLOCK_C=block_c,
        BT=bt,
        num_warps=NUM_WARPS,
    )
    if dgamma is not None:
        torch.sum(dgp, 0, out=dgamma)
    if dbeta is not None:
        torch.sum(dbp, 0, out=dbeta)
