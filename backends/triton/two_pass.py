"""Triton cLN in two reads of the input: statistics, a scan of tile aggregates, the output.

The single-pass kernels of ``kernels.py`` hold each tile (all C channels x BT frames) in
registers from its load until the prefix of the earlier tiles is known.  That keeps the DRAM
traffic at one read and one write, but fixes the tile's shape (every channel, so rows of only
32-128 B for 16-bit inputs) and makes every tile wait on the loads of the tiles before it.
This path trades bytes for independence: no program waits on another program of its launch.

Forward, three launches:
  1. ``_stats_kernel``, program (b, i): loops over the channels of frames ``[i*BT, (i+1)*BT)``
     in blocks, merges the blocks' exact per-frame (mean, M2) with the Chan rule, scans them
     over the tile's frames (``tl.associative_scan``), and writes the in-tile scan (two
     floats per frame) and the tile aggregate.  Reads x once, with an L2 evict_last policy.
  2. ``_tile_scan_kernel``, program b: the inclusive scan of the tile aggregates of sequence b
     (after the streaming state), in fixed chunks with a carry -> each tile's exclusive prefix;
     the state's M of the whole chunk (``m2_last``).
  3. ``_apply_kernel``, program (b, i, channel block), in reverse order of (1): combines the
     tile's prefix with the in-tile scan (mu_t, r_t of its frames), writes y (and, channel
     block 0, mean / rstd).  Reads x again; the programs run last-read-first, so the part of
     x the L2 still holds is what they read first.

Backward, the same three shapes: ``_bwd_sums_kernel`` (per-frame G1, G2 -> a, b, p and their
in-tile suffix sums, the dgamma / dbeta partials of the tile), ``_tile_suffix_kernel`` (the
suffix sums of the tile aggregates), ``_bwd_apply_kernel`` (dx), then ``colsum`` of the
partials.  Every sum has a fixed order: the output is bitwise reproducible and bitwise causal
(frame t depends on nothing after it), whatever the timing.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from backends.triton import kernels as K
from backends.triton.kernels import _add3, _chan, _gdc_launch_dependents, _gdc_wait, _last3
from common.kernel_api import ClnStateTuple

# --------------------------------------------------------------------------------------------
# Tunables (read at call time).
# --------------------------------------------------------------------------------------------
#: Bytes of one channel row of a tile (frames per tile = this / itemsize, within the grid
#: rule below).
TP_ROW_BYTES = 128
#: Frames per tile are halved (down to ``TP_MIN_ROW_BYTES`` rows) while the statistics grid
#: has fewer than this many programs per SM.
TP_MIN_PROGRAMS_PER_SM = 8
TP_MIN_ROW_BYTES = 64
#: Values of one channel block of the statistics loop (per tensor) / of one output program.
TP_STATS_BLOCK = 2048
TP_APPLY_BLOCK = 8192
#: Software-pipelining stages of the statistics loop over channel blocks.
TP_STAGES = 2
#: One warp per statistics program: the per-frame sums over a block's channels then stay
#: within the warp (registers and shuffles).  With 4 warps they were cross-warp reductions
#: through shared memory, and the statistics kernel alone took 31 us to read 33 MB at
#: (4, 256, 16000) bf16 (H200, bench/results/nvidia-h200-s30b-probe-two-pass-prof.log).
TP_STATS_WARPS = 1
TP_APPLY_WARPS = 4
#: L2 policies: the first read kept (evict_last), the second read and the output streamed.
TP_LD1_EV = "evict_last"
TP_LD2_EV = "evict_first"
TP_ST_EV = ""
#: The output programs in reverse order of the statistics programs (last read, first reused).
TP_REVERSE = True
#: Tile aggregates scanned per chunk by the one program of a sequence.
TP_SCAN_BLOCK = 1024
#: Sequences of at most this many tiles skip the scan launch: each output program reduces the
#: aggregates of the tiles before (forward) / after (backward) its own, in a fixed tree (at
#: most this many words from the L2, a few MB in all at the target shapes).  The scan launch
#: took 2-7 us at the bf16 targets (nvidia-h200-s30c-probe-two-pass-prof.log).  0: never.
TP_FUSED_PREFIX_MAX = 1024
#: The statistics kernel's per-frame sums shifted by the exact mean of the first channel block
#: (sums of d = x - K and d^2 over the channels, M2 = S2 - S1^2 / C once at the end) instead of
#: an exact two-pass (mean, M2) per channel block merged by the Chan rule: the merge's division
#: per frame and block, and the second pass over the block, cost more instructions per value
#: than the loads (the kernel was issue bound: 14.8 us for 33 MB at (4, 256, 16000) bf16).
#: The shift is within a block's spread of the frame's mean, so S1^2 / C stays a small part
#: of S2 (no cancellation at any DC offset); tiles still combine by the Chan rule.
TP_SHIFTED_SUMS = True


def _next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


# ============================================================================================
# Forward
# ============================================================================================
@triton.jit
def _stats_kernel(
    x_ptr,
    ws_ptr,
    C,
    T,
    NTB,
    BTT,
    NT,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
    STAGES: tl.constexpr,
    LD_EV: tl.constexpr,
    GDC: tl.constexpr,
    SHIFTED: tl.constexpr = True,
    EVEN_C: tl.constexpr = False,
):
    """Program (b, i): per-frame (mean, M2) over all channels of tile i of sequence b, their
    in-tile inclusive scan -> ws[0:BTT] (mean), ws[BTT:2BTT] (M2), and the tile aggregate ->
    ws[2BTT + tile], ws[2BTT + NT + tile]."""
    _gdc_wait(GDC)  # x may be the output of the launch before this one
    _gdc_launch_dependents(GDC)
    pid = tl.program_id(0)
    b = pid // NTB
    i = pid % NTB
    b64 = b.to(tl.int64)
    x_base = x_ptr + b64 * C * T
    offs_t = i * BT + tl.arange(0, BT)
    tmask = offs_t < T
    offs_c = tl.arange(0, BLOCK_C)
    if SHIFTED:
        cmask = offs_c < C
        mask = cmask[:, None] & tmask[None, :]
        xb = tl.load(
            x_base + offs_c[:, None] * T + offs_t[None, :], mask=mask, other=0.0,
            eviction_policy=LD_EV,
        ).to(tl.float32)  # fmt: skip
        kf = tl.sum(xb, axis=0) / tl.minimum(C, BLOCK_C).to(tl.float32)  # the shift
        d = xb - kf[None, :]
        if not EVEN_C:
            d = tl.where(cmask[:, None], d, 0.0)
        s1 = tl.sum(d, axis=0)
        s2 = tl.sum(d * d, axis=0)
        for c0 in tl.range(BLOCK_C, C, BLOCK_C, num_stages=STAGES):
            cc = c0 + offs_c
            xb = tl.load(
                x_base + cc[:, None] * T + offs_t[None, :], mask=(cc < C)[:, None] & tmask[None, :],
                other=0.0, eviction_policy=LD_EV,
            ).to(tl.float32)  # fmt: skip
            d = xb - kf[None, :]
            if not EVEN_C:
                d = tl.where((cc < C)[:, None], d, 0.0)
            s1 += tl.sum(d, axis=0)
            s2 += tl.sum(d * d, axis=0)
        fn = tl.zeros([BT], tl.float32) + C
        fm = kf + s1 / C
        fM = tl.maximum(s2 - s1 * (s1 / C), 0.0)
    else:
        fn = tl.zeros([BT], tl.float32)
        fm = tl.zeros([BT], tl.float32)
        fM = tl.zeros([BT], tl.float32)
        for c0 in tl.range(0, C, BLOCK_C, num_stages=STAGES):
            cc = c0 + offs_c
            mask = (cc < C)[:, None] & tmask[None, :]
            xb = tl.load(
                x_base + cc[:, None] * T + offs_t[None, :], mask=mask, other=0.0,
                eviction_policy=LD_EV,
            ).to(tl.float32)  # fmt: skip
            nc = tl.minimum(C - c0, BLOCK_C).to(tl.float32)
            bm = tl.sum(xb, axis=0) / nc
            d = tl.where(mask, xb - bm[None, :], 0.0)
            bM = tl.sum(d * d, axis=0)
            fn, fm, fM = _chan(fn, fm, fM, nc + tl.zeros([BT], tl.float32), bm, bM)
    # Padding frames are empty partitions: identities of the scan, so its last element is the
    # tile aggregate.
    fn = tl.where(tmask, fn, 0.0)
    fm = tl.where(tmask, fm, 0.0)
    fM = tl.where(tmask, fM, 0.0)
    sn, sm, sM = tl.associative_scan((fn, fm, fM), 0, _chan)
    st = b64 * T + offs_t
    tl.store(ws_ptr + st, sm, mask=tmask)
    tl.store(ws_ptr + BTT + st, sM, mask=tmask)
    an, am, aM = _last3(sn, sm, sM, BT)
    tl.store(ws_ptr + 2 * BTT + pid, am)
    tl.store(ws_ptr + 2 * BTT + NT + pid, aM)


@triton.jit
def _tile_scan_kernel(
    ws_ptr,
    cnt_ptr,
    m0_ptr,
    M0_ptr,
    m2_ptr,
    C,
    T,
    NTB,
    BTT,
    NT,
    HAS_STATE: tl.constexpr,
    BT: tl.constexpr,
    BLOCK: tl.constexpr,
    GDC: tl.constexpr,
):
    """Program b: the exclusive prefix (mean, M2) of every tile of sequence b (the state
    first) -> ws[P + b*(NTB+1) + i] and ws[P + B'*(NTB+1) + ...] with P = 2BTT + 2NT; the
    inclusive M2 of the whole sequence -> m2[b]."""
    _gdc_wait(GDC)
    _gdc_launch_dependents(GDC)
    b = tl.program_id(0)
    B = NT // NTB
    a_m = ws_ptr + 2 * BTT + b * NTB
    a_M = a_m + NT
    p_m = ws_ptr + 2 * BTT + 2 * NT + b * (NTB + 1)
    p_M = p_m + B * (NTB + 1)
    if HAS_STATE:
        pn = tl.load(cnt_ptr + b).to(tl.float32)
        pm = tl.load(m0_ptr + b)
        pM = tl.load(M0_ptr + b)
    else:
        pn = tl.zeros([], tl.float32)
        pm = tl.zeros([], tl.float32)
        pM = tl.zeros([], tl.float32)
    tl.store(p_m, pm)
    tl.store(p_M, pM)
    lane = tl.arange(0, BLOCK)
    for j0 in range(0, NTB, BLOCK):
        j = j0 + lane
        need = j < NTB
        am = tl.load(a_m + j, mask=need, other=0.0)
        aM = tl.load(a_M + j, mask=need, other=0.0)
        an = tl.where(need, C * tl.minimum(BT, T - j * BT), 0).to(tl.float32)
        sn, sm, sM = tl.associative_scan((an, am, aM), 0, _chan)
        qn, qm, qM = _chan(pn, pm, pM, sn, sm, sM)
        tl.store(p_m + 1 + j, qm, mask=need)
        tl.store(p_M + 1 + j, qM, mask=need)
        tn, tm, tM = _last3(sn, sm, sM, BLOCK)
        pn, pm, pM = _chan(pn, pm, pM, tn, tm, tM)
    tl.store(m2_ptr + b, pM)


@triton.jit
def _apply_kernel(
    x_ptr,
    y_ptr,
    gamma_ptr,
    beta_ptr,
    mean_ptr,
    rstd_ptr,
    ws_ptr,
    cnt_ptr,
    m0_ptr,
    M0_ptr,
    m2_ptr,
    C,
    T,
    NTB,
    NCB,
    BTT,
    NT,
    eps,
    HAS_STATE: tl.constexpr,
    HAS_GAMMA: tl.constexpr,
    HAS_BETA: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
    REVERSE: tl.constexpr,
    LD_EV: tl.constexpr,
    ST_EV: tl.constexpr,
    GDC: tl.constexpr,
    FUSED: tl.constexpr = False,
    NTBP: tl.constexpr = 2,
):
    """Program (b, i, cb): y of channel block cb of tile i of sequence b; channel block 0 also
    writes mean / rstd of the tile's frames."""
    k = tl.program_id(0)
    if REVERSE:
        k = tl.num_programs(0) - 1 - k
    cb = k % NCB
    r = k // NCB
    i = r % NTB
    b = r // NTB
    B = NT // NTB
    b64 = b.to(tl.int64)
    offs_t = i * BT + tl.arange(0, BT)
    tmask = offs_t < T
    cc = cb * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cc < C
    mask = cmask[:, None] & tmask[None, :]
    offs = b64 * C * T + cc[:, None] * T + offs_t[None, :]
    # x is no launch's output since the statistics kernel began: read before the wait.
    x = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy=LD_EV).to(tl.float32)
    if HAS_GAMMA:
        gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
    if HAS_BETA:
        bet = tl.load(beta_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
    if HAS_STATE:
        cnt0 = tl.load(cnt_ptr + b).to(tl.float32)
    else:
        cnt0 = tl.zeros([], tl.float32)
    _gdc_wait(GDC)
    st = b64 * T + offs_t
    sm = tl.load(ws_ptr + st, mask=tmask, other=0.0)
    sM = tl.load(ws_ptr + BTT + st, mask=tmask, other=0.0)
    if FUSED:
        # The exclusive prefix from the aggregates of the earlier tiles (all full tiles), in a
        # fixed tree, after the state; the last tile also writes the state's M2.
        ag = ws_ptr + 2 * BTT + b * NTB
        lane = tl.arange(0, NTBP)
        need = lane < i
        am = tl.load(ag + lane, mask=need, other=0.0)
        aM = tl.load(ag + NT + lane, mask=need, other=0.0)
        an = tl.where(need, C * BT, 0).to(tl.float32)
        pn, pm, pM = tl.reduce((an, am, aM), 0, _chan)
        if HAS_STATE:
            pn, pm, pM = _chan(cnt0, tl.load(m0_ptr + b), tl.load(M0_ptr + b), pn, pm, pM)
        qn, qm, qM = _chan(
            pn, pm, pM, (C * (T - i * BT)).to(tl.float32), tl.load(ag + i), tl.load(ag + NT + i)
        )
        tl.store(m2_ptr + b, qM, mask=(i * NCB + cb) == (NTB - 1) * NCB)
    else:
        p_m = ws_ptr + 2 * BTT + 2 * NT + b * (NTB + 1) + i
        pm = tl.load(p_m)
        pM = tl.load(p_m + B * (NTB + 1))
        pn = cnt0 + (C * BT * i).to(tl.float32)
    sn = (C * (offs_t - i * BT + 1)).to(tl.float32)
    n_t, m_t, M_t = _chan(pn, pm, pM, sn, sm, sM)
    r_t = 1.0 / tl.sqrt(M_t / tl.maximum(n_t, 1.0) + eps)
    smask = tmask & ((offs_t * 0 + cb) == 0)
    tl.store(mean_ptr + st, m_t, mask=smask)
    tl.store(rstd_ptr + st, r_t, mask=smask)
    out = (x - m_t[None, :]) * r_t[None, :]
    if HAS_GAMMA:
        out = out * gam[:, None]
    if HAS_BETA:
        out = out + bet[:, None]
    tl.store(y_ptr + offs, out.to(y_ptr.dtype.element_ty), mask=mask, eviction_policy=ST_EV)


# ============================================================================================
# Backward
# ============================================================================================
@triton.jit
def _bwd_sums_kernel(
    dy_ptr,
    x_ptr,
    gamma_ptr,
    mean_ptr,
    rstd_ptr,
    cnt_ptr,
    ws_ptr,
    dgp_ptr,
    dbp_ptr,
    C,
    T,
    NTB,
    BTT,
    NT,
    PW,
    HAS_COUNT: tl.constexpr,
    HAS_GAMMA: tl.constexpr,
    HAS_DG: tl.constexpr,
    HAS_DB: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
    STAGES: tl.constexpr,
    LD_EV: tl.constexpr,
    GDC: tl.constexpr,
):
    """Program (b, i): per-frame a, b, p (DESIGN.md) of tile i of sequence b, their in-tile
    suffix sums -> ws[0:3BTT], the tile's sums -> ws[3BTT + {0,1,2}NT + tile], and the tile's
    dgamma / dbeta partials (row ``tile`` of the partials)."""
    _gdc_wait(GDC)
    _gdc_launch_dependents(GDC)
    pid = tl.program_id(0)
    b = pid // NTB
    i = pid % NTB
    b64 = b.to(tl.int64)
    base = b64 * C * T
    offs_t = i * BT + tl.arange(0, BT)
    tmask = offs_t < T
    offs_c = tl.arange(0, BLOCK_C)
    st = b64 * T + offs_t
    mu = tl.load(mean_ptr + st, mask=tmask, other=0.0)
    r = tl.load(rstd_ptr + st, mask=tmask, other=0.0)  # r = 0 on padding: a = b = 0 there
    Kref = tl.load(mean_ptr + b64 * T)
    if HAS_COUNT:
        cnt0 = tl.load(cnt_ptr + b).to(tl.float32)
    else:
        cnt0 = tl.zeros([], tl.float32)
    n_t = cnt0 + (C * (offs_t + 1)).to(tl.float32)
    prow = pid.to(tl.int64) * PW
    G1 = tl.zeros([BT], tl.float32)
    G2 = tl.zeros([BT], tl.float32)
    for c0 in tl.range(0, C, BLOCK_C, num_stages=STAGES):
        cc = c0 + offs_c
        cmask = cc < C
        mask = cmask[:, None] & tmask[None, :]
        offs = base + cc[:, None] * T + offs_t[None, :]
        xb = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy=LD_EV).to(tl.float32)
        dyb = tl.load(dy_ptr + offs, mask=mask, other=0.0, eviction_policy=LD_EV).to(tl.float32)
        u = dyb * (xb - mu[None, :])
        if HAS_GAMMA:
            gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
            G1 += tl.sum(dyb * gam[:, None], axis=0)
            G2 += tl.sum(u * gam[:, None], axis=0)
        else:
            G1 += tl.sum(dyb, axis=0)
            G2 += tl.sum(u, axis=0)
        if HAS_DG:
            tl.store(dgp_ptr + prow + cc, tl.sum(u * r[None, :], axis=1), mask=cmask)
        if HAS_DB:
            tl.store(dbp_ptr + prow + cc, tl.sum(dyb, axis=1), mask=cmask)
    G2 = r * G2
    a = r * G1 / n_t
    bq = r * r * G2 / n_t
    pv = bq * (mu - Kref)
    Sa, Sb, P = tl.associative_scan((a, bq, pv), 0, _add3, reverse=True)
    tl.store(ws_ptr + st, Sa, mask=tmask)
    tl.store(ws_ptr + BTT + st, Sb, mask=tmask)
    tl.store(ws_ptr + 2 * BTT + st, P, mask=tmask)
    ta = tl.sum(a, axis=0)
    tb = tl.sum(bq, axis=0)
    tp = tl.sum(pv, axis=0)
    tl.store(ws_ptr + 3 * BTT + pid, ta)
    tl.store(ws_ptr + 3 * BTT + NT + pid, tb)
    tl.store(ws_ptr + 3 * BTT + 2 * NT + pid, tp)


@triton.jit
def _tile_suffix_kernel(ws_ptr, NTB, BTT, NT, BLOCK: tl.constexpr, GDC: tl.constexpr):
    """Program b: the inclusive suffix sums of the tile sums of sequence b, from the last
    chunk of tiles backwards -> ws[E + {0,1,2}(NT+B) + b*(NTB+1) + tile] with E = 3BTT + 3NT,
    and 0 at tile NTB: tile i's exclusive suffix (the later tiles') is then entry i + 1."""
    _gdc_wait(GDC)
    _gdc_launch_dependents(GDC)
    b = tl.program_id(0)
    B = NT // NTB
    src = ws_ptr + 3 * BTT + b * NTB
    dst = ws_ptr + 3 * BTT + 3 * NT + b * (NTB + 1)
    dl = NT + B
    z = tl.zeros([], tl.float32)
    tl.store(dst + NTB, z)
    tl.store(dst + dl + NTB, z)
    tl.store(dst + 2 * dl + NTB, z)
    ea = z
    eb = z
    ep = z
    lane = tl.arange(0, BLOCK)
    nch = tl.cdiv(NTB, BLOCK)
    for q in range(0, nch):
        j = (nch - 1 - q) * BLOCK + lane
        need = j < NTB
        va = tl.load(src + j, mask=need, other=0.0)
        vb = tl.load(src + NT + j, mask=need, other=0.0)
        vp = tl.load(src + 2 * NT + j, mask=need, other=0.0)
        sa, sb, sp = tl.associative_scan((va, vb, vp), 0, _add3, reverse=True)
        tl.store(dst + j, sa + ea, mask=need)
        tl.store(dst + dl + j, sb + eb, mask=need)
        tl.store(dst + 2 * dl + j, sp + ep, mask=need)
        ta, tb, tp = tl.reduce((va, vb, vp), 0, _add3)
        ea += ta
        eb += tb
        ep += tp


@triton.jit
def _bwd_apply_kernel(
    dy_ptr,
    x_ptr,
    gamma_ptr,
    mean_ptr,
    rstd_ptr,
    ws_ptr,
    dx_ptr,
    C,
    T,
    NTB,
    NCB,
    BTT,
    NT,
    HAS_GAMMA: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
    REVERSE: tl.constexpr,
    LD_EV: tl.constexpr,
    ST_EV: tl.constexpr,
    GDC: tl.constexpr,
    FUSED: tl.constexpr = False,
    NTBP: tl.constexpr = 2,
):
    """Program (b, i, cb): dx = r*g - S_a - (x - K)*S_b + P of channel block cb of tile i."""
    k = tl.program_id(0)
    if REVERSE:
        k = tl.num_programs(0) - 1 - k
    cb = k % NCB
    rr = k // NCB
    i = rr % NTB
    b = rr // NTB
    b64 = b.to(tl.int64)
    offs_t = i * BT + tl.arange(0, BT)
    tmask = offs_t < T
    cc = cb * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cc < C
    mask = cmask[:, None] & tmask[None, :]
    offs = b64 * C * T + cc[:, None] * T + offs_t[None, :]
    # x and dy are no launch's output since the sums kernel began: read before the wait.
    xb = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy=LD_EV).to(tl.float32)
    dyb = tl.load(dy_ptr + offs, mask=mask, other=0.0, eviction_policy=LD_EV).to(tl.float32)
    st = b64 * T + offs_t
    r = tl.load(rstd_ptr + st, mask=tmask, other=0.0)
    Kref = tl.load(mean_ptr + b64 * T)
    if HAS_GAMMA:
        gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
        gb = dyb * gam[:, None]
    else:
        gb = dyb
    _gdc_wait(GDC)
    if FUSED:
        # The later tiles' sums, reduced in a fixed tree.
        src = ws_ptr + 3 * BTT + b * NTB
        lane = tl.arange(0, NTBP)
        need = (lane > i) & (lane < NTB)
        va = tl.load(src + lane, mask=need, other=0.0)
        vb = tl.load(src + NT + lane, mask=need, other=0.0)
        vp = tl.load(src + 2 * NT + lane, mask=need, other=0.0)
        ea, eb, ep = tl.reduce((va, vb, vp), 0, _add3)
    else:
        B = NT // NTB
        dl = NT + B
        e = ws_ptr + 3 * BTT + 3 * NT + b * (NTB + 1) + i + 1  # the later tiles' sums
        ea = tl.load(e)
        eb = tl.load(e + dl)
        ep = tl.load(e + 2 * dl)
    Sa = tl.load(ws_ptr + st, mask=tmask, other=0.0) + ea
    Sb = tl.load(ws_ptr + BTT + st, mask=tmask, other=0.0) + eb
    P = tl.load(ws_ptr + 2 * BTT + st, mask=tmask, other=0.0) + ep
    dx = r[None, :] * gb - Sa[None, :] - (xb - Kref) * Sb[None, :]
    dx = dx + P[None, :]
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask, eviction_policy=ST_EV)


# ============================================================================================
# Launch rules and wrappers
# ============================================================================================
class Plan:
    """Tile geometry of one two-pass call: ``bt`` frames per tile, ``ntb`` tiles per sequence,
    ``sc`` channels per block of the statistics (sums) loop, ``ac`` channels per output
    program, ``ncb`` output programs per tile.  The backward moves two tensors per value, so
    its blocks hold half the channels."""

    __slots__ = ("bt", "ntb", "nt", "sc", "ac", "ncb")

    def __init__(self, x: Tensor, forward: bool) -> None:
        B, C, T = x.shape
        item = x.element_size()
        sms = K._num_sms(x.device.type, x.device.index)
        bt = max(2, _next_pow2(max(1, TP_ROW_BYTES // item)))
        min_bt = max(2, _next_pow2(max(1, TP_MIN_ROW_BYTES // item)))
        bt = max(2, min(bt, _next_pow2(T)))
        while bt > min_bt and B * -(-T // bt) < TP_MIN_PROGRAMS_PER_SM * sms:
            bt //= 2
        cp2 = max(2, _next_pow2(C))
        div = 1 if forward else 2
        self.bt = bt
        self.ntb = -(-T // bt)
        self.nt = B * self.ntb
        self.sc = max(2, min(cp2, _next_pow2(max(1, TP_STATS_BLOCK // div // bt))))
        self.ac = max(2, min(cp2, _next_pow2(max(1, TP_APPLY_BLOCK // div // bt))))
        self.ncb = -(-C // self.ac)


def _pdl(x: Tensor) -> bool:
    return K._pdl(x)


def cln_forward(
    x: Tensor,
    gamma: Tensor | None,
    beta: Tensor | None,
    eps: float,
    state: ClnStateTuple | None,
    y: Tensor,
    mean: Tensor,
    rstd: Tensor,
    m2_last: Tensor,
) -> None:
    """The ``common.kernel_api`` forward in two reads of ``x`` (module docstring)."""
    B, C, T = x.shape
    K._check_cln_size(C, T)
    p = Plan(x, True)
    pdl = _pdl(x)
    kw = K._pdl_kw(pdl)
    btt = B * T
    ws = torch.empty(2 * btt + 2 * p.nt + 2 * B * (p.ntb + 1), dtype=torch.float32, device=x.device)
    if state is not None:
        cnt, m0, M0 = state
    else:
        cnt = m0 = M0 = mean  # never read (HAS_STATE=False)
    fused = p.ntb <= TP_FUSED_PREFIX_MAX
    _stats_kernel[(p.nt,)](
        x, ws, C, T, p.ntb, btt, p.nt,
        BLOCK_C=p.sc, BT=p.bt, STAGES=TP_STAGES, LD_EV=TP_LD1_EV, GDC=pdl,
        SHIFTED=TP_SHIFTED_SUMS, EVEN_C=C % p.sc == 0, num_warps=TP_STATS_WARPS,
        **K._pdl_kw(pdl and K.CLN_PDL_ZERO),
    )  # fmt: skip
    if not fused:
        _tile_scan_kernel[(B,)](
            ws, cnt, m0, M0, m2_last, C, T, p.ntb, btt, p.nt,
            HAS_STATE=state is not None, BT=p.bt,
            BLOCK=min(TP_SCAN_BLOCK, max(2, _next_pow2(p.ntb))), GDC=pdl, num_warps=4, **kw,
        )  # fmt: skip
    _apply_kernel[(p.nt * p.ncb,)](
        x, y, gamma if gamma is not None else x, beta if beta is not None else x, mean, rstd,
        ws, cnt, m0, M0, m2_last, C, T, p.ntb, p.ncb, btt, p.nt, float(eps),
        HAS_STATE=state is not None, HAS_GAMMA=gamma is not None, HAS_BETA=beta is not None,
        BLOCK_C=p.ac, BT=p.bt, REVERSE=TP_REVERSE, LD_EV=TP_LD2_EV, ST_EV=TP_ST_EV, GDC=pdl,
        FUSED=fused, NTBP=max(2, _next_pow2(p.ntb)), num_warps=TP_APPLY_WARPS, **kw,
    )  # fmt: skip


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
    """The ``common.kernel_api`` backward in two reads of ``x`` and ``dy`` (module docstring)."""
    B, C, T = x.shape
    K._check_cln_size(C, T)
    p = Plan(x, False)
    pdl = _pdl(x)
    kw = K._pdl_kw(pdl)
    btt = B * T
    ws = torch.empty(3 * btt + 3 * p.nt + 3 * (p.nt + B), dtype=torch.float32, device=x.device)
    pw = C * ((dgamma is not None) + (dbeta is not None))
    parts = torch.empty((p.nt, pw), dtype=torch.float32, device=x.device) if pw else ws
    dgp = parts if dgamma is not None else ws
    dbp = parts[:, C:] if dgamma is not None and dbeta is not None else parts
    _bwd_sums_kernel[(p.nt,)](
        dy, x, gamma if gamma is not None else x, mean, rstd,
        count if count is not None else mean, ws, dgp, dbp, C, T, p.ntb, btt, p.nt, pw,
        HAS_COUNT=count is not None, HAS_GAMMA=gamma is not None, HAS_DG=dgamma is not None,
        HAS_DB=dbeta is not None, BLOCK_C=p.sc, BT=p.bt,
        STAGES=TP_STAGES, LD_EV=TP_LD1_EV, GDC=pdl, num_warps=TP_STATS_WARPS,
        **K._pdl_kw(pdl and K.CLN_PDL_ZERO),
    )  # fmt: skip
    fused = p.ntb <= TP_FUSED_PREFIX_MAX
    if not fused:
        _tile_suffix_kernel[(B,)](
            ws, p.ntb, btt, p.nt, BLOCK=min(TP_SCAN_BLOCK, max(2, _next_pow2(p.ntb))), GDC=pdl,
            num_warps=4, **kw,
        )  # fmt: skip
    _bwd_apply_kernel[(p.nt * p.ncb,)](
        dy, x, gamma if gamma is not None else x, mean, rstd, ws, dx, C, T, p.ntb, p.ncb, btt,
        p.nt, HAS_GAMMA=gamma is not None, BLOCK_C=p.ac, BT=p.bt,
        REVERSE=TP_REVERSE, LD_EV=TP_LD2_EV, ST_EV=TP_ST_EV, GDC=pdl,
        FUSED=fused, NTBP=max(2, _next_pow2(p.ntb)), num_warps=TP_APPLY_WARPS, **kw,
    )  # fmt: skip
    if dgamma is not None:
        K.colsum(parts, dgamma, dbeta, pdl=pdl)
    elif dbeta is not None:
        K.colsum(parts, dbeta, pdl=pdl)
