"""Triton kernels for cLN and RMSNorm (the raw-kernel contract of ``common.kernel_api``).

cLN forward: one pass over ``x`` with a decoupled look-back scan
----------------------------------------------------------------
Each program owns one tile ``x[b, :, t0:t0+BT]`` (all channels, ``BT`` frames) and keeps it
in registers.  It computes the per-frame mean and M2 exactly (two passes over registers),
scans them over the frames with the Chan combine (``tl.associative_scan``), publishes the tile
aggregate, looks back over the earlier tiles of the same sequence to get the exclusive prefix,
publishes its inclusive prefix, and then writes ``y``/``mean``/``rstd`` from the registers.
``x`` is read once and ``y`` written once, which is what the bandwidth target requires.

Why the tile id comes from a ticket (an atomic counter) rather than ``program_id``: a program
only ever waits on tiles with a smaller ticket, and a ticket is taken only by a program that
is already running, so every tile it waits on is resident and will finish (no deadlock however
the hardware schedules the grid).

Why self-validating 64-bit descriptors instead of "flag + payload": Triton has no acquire load,
and a tensor load whose elements are replicated across warps may be read at different times by
different warps, which would give non-uniform control flow around barriers.  So every published
word carries its own "ready" bit and is written once (0 -> final value) by a scalar 64-bit
atomic exchange; readers use *scalar* volatile loads (every thread loads the word itself; the
look-back loop contains no barrier, so threads may even take different paths safely: all of
them end with the same prefix, bit for bit; see below).  Forward words pack (mean, M2) with the
sign bit of M2 (always >= 0) as the ready bit; backward words pack one float and bit 0 = ready.

Bitwise determinism (and so bitwise causality: frames after t cannot change outputs up to t):
how far a look-back walks depends on timing, so the prefix must not depend on where it stopped.
It is defined by a chain, ``inc(-1) = state``, ``inc(j) = chan(inc(j-1), agg(j))``, with the
counts computed by one formula (``_fwd_counts``) and a merge with explicit ``fma`` (nothing for
the compiler to contract differently in different copies).  Every tile publishes its inc(i) by
that rule, and a look-back that stops at the inclusive word of tile j0 folds *left*:
``chan(...chan(inc(j0), agg(j0+1))..., agg(i-1))``, which is inc(i-1) bit for bit by induction,
whichever j0 it found.  The backward does the same with sums.  Within a tile the scan network is
fixed, so frame t's value depends only on the frames <= t of the tile.

cLN backward: the same machinery as a suffix scan (tickets from the last tile backwards)
------------------------------------------------------------------------------------------
Per frame: ``g = dy*gamma``, ``xhat = (x-mu)*r``, ``G1 = sum_c g``, ``G2 = sum_c g*xhat``,
``a = r*G1/n``, ``b = r^2*G2/n``; with ``K = mean[b, 0]``:
``dx = r*g - S_a - (x-K)*S_b + P`` where ``S_a, S_b, P`` are suffix sums of ``a, b, b*(mu-K)``
(exactly ``common.eager.cln_backward``).  ``x`` and ``dy`` are read once.  dgamma/dbeta are
per-tile partials in a float32 scratch, summed by torch in a fixed order (deterministic).

RMSNorm
-------
Forward: a row (or several short rows) per program, in registers; beyond
``RMS_FWD_MAX_BLOCK_N`` columns a row-statistics kernel plus a 2-D elementwise kernel.
Backward: persistent-style programs, each over a contiguous range of rows, accumulating its
dw partial in registers; a fixed-order ``torch.sum`` reduces the partials.  Beyond
``RMS_BWD_MAX_BLOCK_N`` columns a row-dot kernel first computes mean(g*xhat) per row and the
main kernel is split over column blocks.

Launch parameters come from rules in ``_cln_config`` / ``_rms_*_config`` (cached per shape
key).  The module-level constants below are the knobs; tests may lower the thresholds to reach
the looped paths with small shapes (the constants are part of the cache key).
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl
from torch import Tensor

from common.kernel_api import ClnStateTuple

# --------------------------------------------------------------------------------------------
# Tunables (read at call time; part of every config cache key).  The defaults come from
# compiling for sm_90 offline and reading registers/spills (ptxas): with the tile held in
# registers, bytes in flight per SM = resident CTAs x tile bytes, so registers decide speed.
# --------------------------------------------------------------------------------------------
#: Target elements of one cLN tile (BLOCK_C * BT).  8192 fp32 = 32 KiB.
CLN_FWD_TILE = 8192
CLN_BWD_TILE = 8192
#: Tile elements per thread (per tensor) -> num_warps.  Forward 64 with maxnreg 128: 4 CTAs of
#: 4 warps per SM (128 KiB of fp32 tiles) without spills at C = 128..512.  Backward holds x and
#: dy: 32 each.  When T % 16 != 0 the loads cannot be vectorized and every element carries its
#: own 64-bit address, so fewer elements per thread (the *_UNALIGNED values) are used.
CLN_FWD_EPT = 64
CLN_BWD_EPT = 32
CLN_EPT_UNALIGNED = 16
#: ``maxnreg`` for vectorized (T % 16 == 0) cLN launches; None lets ptxas choose.  ptxas
#: otherwise takes ~145 registers for the forward tile above (3 CTAs/SM instead of 4) although
#: 128 fit without spills.  Backward at 128: 4 CTAs/SM (fp32 C=128) or 2 (C=512) with ~60-90 B
#: of spills per thread for fp32 and ~250 B for bf16 (uncapped: 165-200 registers, 1-3 CTAs).
CLN_FWD_MAXNREG: int | None = 128
CLN_BWD_MAXNREG: int | None = 128
#: Unaligned T (no vector loads): the forward at 64 registers spills 24-56 B but doubles the
#: resident CTAs, which puts the (80, 64, 301) seed (400 tiles) in a single wave.
CLN_FWD_MAXNREG_UNALIGNED: int | None = 64
CLN_BWD_MAXNREG_UNALIGNED: int | None = None
#: Largest next_pow2(C) kept in registers; above it the tile is processed in channel blocks of
#: ``CLN_LOOP_BLOCK_C`` and re-read (from L2) in a second pass.
CLN_MAX_BLOCK_C = 4096
CLN_LOOP_BLOCK_C = 1024
#: Frames per tile are at least this many bytes per channel row: a row segment of a tile is a
#: contiguous run in memory, and runs shorter than 64 B waste DRAM bursts.
CLN_MIN_ROW_BYTES = 64
CLN_MAX_BT = 1024
#: Small problems: halve BT (down to the minimum above) until there are at least this many
#: tiles per SM, so that a latency-bound launch (e.g. the (80, 64, 301) seed) fills the GPU.
CLN_MIN_TILES_PER_SM = 2
#: How many neighbour tiles one look-back round reads at once (one L2 round trip).
CLN_FWD_LOOKBACK = 4
CLN_BWD_LOOKBACK = 2

#: RMSNorm: single-pass (row in registers) up to this many columns (next_pow2).
RMS_FWD_MAX_BLOCK_N = 32768
RMS_BWD_MAX_BLOCK_N = 16384
#: Column block of the looped (huge-N) paths.
RMS_LOOP_BLOCK_N = 4096
#: Target elements per program (rows * BLOCK_N) for short rows.
RMS_ROW_TILE = 4096
#: Backward: persistent grid of SMs x (this / num_warps) programs: the kernel takes ~92-128
#: registers, so about 16 warps (2 CTAs of 8) are resident per SM and the grid is one wave.
#: Each program owns at least ``RMS_BWD_MIN_ROWS_PER_PROG`` rows (the (programs, N) dw partials
#: stay small relative to the data when M is small).
RMS_BWD_RESIDENT_WARPS = 16
RMS_BWD_MIN_ROWS_PER_PROG = 4
#: Software pipelining of the backward row loop (cp.async prefetch of the next rows into
#: shared memory): 2 = one row ahead (32 KiB smem per CTA for fp32 N=4096).
RMS_BWD_STAGES = 2

#: Testing knob: when True, cLN tiles never publish inclusive prefixes, so every look-back walks
#: over aggregates back to the start of the sequence (exercises that path in the interpreter,
#: where programs run in order and would otherwise always find the neighbour's prefix).
_TEST_NO_INCLUSIVE = False
#: Testing knob: only tiles i with i % k == 0 publish inclusive prefixes, so the look-back stops
#: at varying distances (the outputs must not change by a bit: see ``_fwd_lookback``).
_TEST_INC_EVERY = 1

# Offset (in int64 words) of the descriptors after the ticket counter: its own 128-byte line.
_SCR_OFF = tl.constexpr(16)


def _next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def _clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


@functools.lru_cache(maxsize=16)
def _num_sms(device_type: str, index: int | None) -> int:
    if device_type == "cuda":
        return torch.cuda.get_device_properties(index or 0).multi_processor_count
    return 4  # the interpreter: the count only shapes the grid


# ============================================================================================
# Shared device helpers
# ============================================================================================
@triton.jit
def _chan(na, ma, Ma, nb, mb, Mb):
    """Chan/Welford merge of (count, mean, M2): a is the earlier partition.

    ``w`` divides by max(n, 1) so that two empty partitions (padding frames, n = 0) merge to
    an empty one instead of NaN; an empty partition is then an exact identity.  The two
    multiply-adds are explicit ``fma``s, so no fmul feeds an fadd and the compiler has nothing
    left to contract: every inlined copy of the merge gives the same bits for the same inputs,
    which the canonical cross-tile prefixes rely on (``_fwd_lookback``).
    """
    n = na + nb
    d = mb - ma
    w = nb / tl.maximum(n, 1.0)
    return n, tl.fma(d, w, ma), tl.fma(d * d * na, w, Ma + Mb)


@triton.jit
def _pack_fwd(m, M):
    # low 32 bits: mean; high 32 bits: M2 with its sign bit forced to 1 (M2 >= 0, so the bit is
    # free) -> a published word is negative as an int64, an unpublished one is 0.
    lo = m.to(tl.int32, bitcast=True).to(tl.uint32, bitcast=True).to(tl.int64)
    hi = (M.to(tl.int32, bitcast=True) | -2147483648).to(tl.int64)
    return (hi << 32) | lo


@triton.jit
def _unpack_fwd(w):
    m = w.to(tl.int32).to(tl.float32, bitcast=True)
    M = ((w >> 32).to(tl.int32) & 0x7FFFFFFF).to(tl.float32, bitcast=True)
    return m, M


@triton.jit
def _pack_bwd(v):
    # high 32 bits: the float; bit 0: ready.
    return (v.to(tl.int32, bitcast=True).to(tl.int64) << 32) | 1


@triton.jit
def _unpack_bwd(w):
    return (w >> 32).to(tl.int32).to(tl.float32, bitcast=True)


# ============================================================================================
# cLN forward
# ============================================================================================
@triton.jit
def _fwd_counts(j, C, T, cnt0, BT: tl.constexpr):
    """Float counts of tile ``j``: of everything before it (the stream history included) and of
    its own frames.  Every merge of tile j's aggregate into a prefix uses exactly these two
    values, in whichever program it happens (see ``_fwd_lookback``)."""
    start = j * BT
    end = tl.minimum(start + BT, T)
    return cnt0 + (C * start).to(tl.float32), (C * (end - start)).to(tl.float32)


@triton.jit
def _fwd_merge(m, M, w, j, take, C, T, cnt0, BT: tl.constexpr):
    """Where ``take``: the prefix (m, M) of tiles < j merged with tile j's aggregate word ``w``."""
    na, nb = _fwd_counts(j, C, T, cnt0, BT)
    wm, wM = _unpack_fwd(w)
    _, nm, nM = _chan(na, m, M, nb, wm, wM)
    return tl.where(take, nm, m), tl.where(take, nM, M)


@triton.jit
def _fwd_lb_step(wi, wa, j, live, found, adv):
    """Classify tile ``j`` (the next earlier one) in a look-back window.

    use_i: its inclusive word is ready (the walk stops there); use_a: only its aggregate is
    (the walk goes on).  ``live`` is false once an earlier step of the window stopped the walk
    (inclusive prefix found, not-ready tile, or past the start).
    """
    ok = live & (j >= 0)
    use_i = ok & (wi < 0)
    use_a = ok & (wi >= 0) & (wa < 0)
    found = tl.where(use_i, 1, found)
    adv = adv + (use_i | use_a).to(tl.int32)
    return use_a, use_i, found, adv


@triton.jit
def _fwd_lb_fold(wi, wa, j, use_i, use_a, m, M, C, T, cnt0, BT: tl.constexpr):
    """One tile of a window's left fold: restart from its inclusive word or merge its aggregate."""
    im, iM = _unpack_fwd(wi)
    m = tl.where(use_i, im, m)
    M = tl.where(use_i, iM, M)
    return _fwd_merge(m, M, wa, j, use_a, C, T, cnt0, BT)


@triton.jit
def _fwd_lookback(d_ptr, i, C, T, cnt0, m0, M0, BT: tl.constexpr, W: tl.constexpr):
    """Exclusive prefix (count, mean, M2) of tile ``i``: earlier tiles plus the stream state.

    ``d_ptr`` points at this sequence's descriptors: tile j has its aggregate word at
    ``d_ptr + 2*j`` and its inclusive word at ``d_ptr + 2*j + 1`` (adjacent, so one pointer and
    immediate offsets address a whole window: few registers while the tile is held).

    The value is canonical (bitwise independent of timing): it is the chain
    ``inc(-1) = state``, ``inc(j) = chan(inc(j-1), agg(j))`` (counts from ``_fwd_counts``) at
    j = i-1, which is also how every tile computes the inclusive word it publishes.
    1. Walk back from tile i-1, W tiles per round trip, to the nearest tile j0 whose inclusive
       word is ready, every tile in between having its aggregate ready; or past the start
       (j0 = -1, inc(-1) = the state).  A not-ready tile ends the round; the next round
       re-reads from it (the spin).
    2. Fold left: P = inc(j0), then P = chan(P, agg(j)) for j = j0+1, ..., i-1 in that order:
       the chain's own order, so P = inc(i-1) bit for bit by induction, whichever j0 the walk
       found.  (Merging right to left as the walk goes would round differently for different
       j0, and timing would leak into the outputs: neither deterministic nor bitwise causal.)
    The part of the fold inside the last round's window uses the words still in registers (so
    the usual case, j0 in the first window, costs nothing more); tiles walked over in earlier
    rounds are read again (a word is written once, then immutable, and sits in L2).
    Only scalar loads and no barrier: see the module docstring.
    """
    m = m0
    M = M0
    found = tl.zeros([], tl.int32)
    j = i - 1
    jtop = j
    while (j >= 0) & (found == 0):
        # Issue every load of the window before using any, so the window costs one latency.
        p = d_ptr + 2 * j
        wa0 = tl.load(p, volatile=True)
        wi0 = tl.load(p + 1, volatile=True)
        if W >= 2:
            wa1 = tl.load(p - 2, mask=j >= 1, other=0, volatile=True)
            wi1 = tl.load(p - 1, mask=j >= 1, other=0, volatile=True)
        if W >= 3:
            wa2 = tl.load(p - 4, mask=j >= 2, other=0, volatile=True)
            wi2 = tl.load(p - 3, mask=j >= 2, other=0, volatile=True)
        if W >= 4:
            wa3 = tl.load(p - 6, mask=j >= 3, other=0, volatile=True)
            wi3 = tl.load(p - 5, mask=j >= 3, other=0, volatile=True)
        adv = tl.zeros([], tl.int32)
        ua0, ui0, found, adv = _fwd_lb_step(wi0, wa0, j, j >= 0, found, adv)
        if W >= 2:
            ua1, ui1, found, adv = _fwd_lb_step(wi1, wa1, j - 1, ua0, found, adv)
        if W >= 3:
            ua2, ui2, found, adv = _fwd_lb_step(wi2, wa2, j - 2, ua1, found, adv)
        if W >= 4:
            ua3, ui3, found, adv = _fwd_lb_step(wi3, wa3, j - 3, ua2, found, adv)
        # Left fold of the window, oldest tile first, from the state (right if the walk passes
        # the start).  Only the last round's fold is kept: that round found j0 or the start.
        m = m0
        M = M0
        if W >= 4:
            m, M = _fwd_lb_fold(wi3, wa3, j - 3, ui3, ua3, m, M, C, T, cnt0, BT)
        if W >= 3:
            m, M = _fwd_lb_fold(wi2, wa2, j - 2, ui2, ua2, m, M, C, T, cnt0, BT)
        if W >= 2:
            m, M = _fwd_lb_fold(wi1, wa1, j - 1, ui1, ua1, m, M, C, T, cnt0, BT)
        m, M = _fwd_lb_fold(wi0, wa0, j, ui0, ua0, m, M, C, T, cnt0, BT)
        jtop = j
        j = j - adv
    # Tiles jtop+1 .. i-1 were walked over in earlier rounds (all their aggregates were seen
    # ready): merge them in, in increasing order.  The readiness test only guards the
    # invariant (a word seen ready stays ready); a round stops at a not-ready word and retries.
    j = jtop + 1
    while j < i:
        q = d_ptr + 2 * j
        v0 = tl.load(q, volatile=True)
        if W >= 2:
            v1 = tl.load(q + 2, mask=j + 1 < i, other=0, volatile=True)
        if W >= 3:
            v2 = tl.load(q + 4, mask=j + 2 < i, other=0, volatile=True)
        if W >= 4:
            v3 = tl.load(q + 6, mask=j + 3 < i, other=0, volatile=True)
        t = v0 < 0
        adv = t.to(tl.int32)
        m, M = _fwd_merge(m, M, v0, j, t, C, T, cnt0, BT)
        if W >= 2:
            t = t & (v1 < 0)
            adv = adv + t.to(tl.int32)
            m, M = _fwd_merge(m, M, v1, j + 1, t, C, T, cnt0, BT)
        if W >= 3:
            t = t & (v2 < 0)
            adv = adv + t.to(tl.int32)
            m, M = _fwd_merge(m, M, v2, j + 2, t, C, T, cnt0, BT)
        if W >= 4:
            t = t & (v3 < 0)
            adv = adv + t.to(tl.int32)
            m, M = _fwd_merge(m, M, v3, j + 3, t, C, T, cnt0, BT)
        j = j + adv
    pn, _ = _fwd_counts(i, C, T, cnt0, BT)
    return pn, m, M


@triton.jit
def _cln_fwd_kernel(
    x_ptr,
    y_ptr,
    gamma_ptr,
    beta_ptr,
    mean_ptr,
    rstd_ptr,
    m2_ptr,
    cnt_ptr,
    m0_ptr,
    M0_ptr,
    scr_ptr,
    B,
    C,
    T,
    eps,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
    NUM_CB: tl.constexpr,
    LOOKBACK: tl.constexpr,
    INC_EVERY: tl.constexpr,
):
    # gamma/beta/state pointers may be None (a compile-time constant: the code is left out).
    # Ticket -> (b, i).  Sequences are interleaved (b fastest) so that the tiles in flight at
    # one time are spread over the batch: shorter look-back chains per sequence.
    k = tl.atomic_add(scr_ptr, 1).to(tl.int32)
    NTB = tl.cdiv(T, BT)
    b = k % B
    i = k // B
    d_ptr = scr_ptr + _SCR_OFF + 2 * (b * NTB)  # [AGG, INC] word pairs of this sequence

    b64 = b.to(tl.int64)
    x_base = x_ptr + b64 * C * T
    y_base = y_ptr + b64 * C * T
    offs_t = i * BT + tl.arange(0, BT)
    tmask = offs_t < T
    offs_c = tl.arange(0, BLOCK_C)

    if cnt_ptr is not None:
        cnt0 = tl.load(cnt_ptr + b).to(tl.float32)
        m0 = tl.load(m0_ptr + b)
        M0 = tl.load(M0_ptr + b)
    else:
        cnt0 = tl.zeros([], tl.float32)
        m0 = tl.zeros([], tl.float32)
        M0 = tl.zeros([], tl.float32)

    # ---- per-frame statistics (n, mean, M2) of this tile ------------------------------
    if NUM_CB == 1:
        cmask = offs_c < C
        mask = cmask[:, None] & tmask[None, :]
        offs = offs_c[:, None] * T + offs_t[None, :]
        x = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
        fm = tl.sum(x, axis=0) / C
        xc = tl.where(mask, x - fm[None, :], 0.0)
        fM = tl.sum(xc * xc, axis=0)
        fn = tl.where(tmask, C, 0).to(tl.float32)
    else:
        # Channel blocks merged per frame with the same Chan rule (exact two-pass per block).
        fn = tl.zeros([BT], tl.float32)
        fm = tl.zeros([BT], tl.float32)
        fM = tl.zeros([BT], tl.float32)
        for cb in range(NUM_CB):
            cc = cb * BLOCK_C + offs_c
            cmask = cc < C
            mask = cmask[:, None] & tmask[None, :]
            xb = tl.load(x_base + cc[:, None] * T + offs_t[None, :], mask=mask, other=0.0)
            xb = xb.to(tl.float32)
            nc = tl.minimum(C - cb * BLOCK_C, BLOCK_C)
            bm = tl.sum(xb, axis=0) / nc
            bxc = tl.where(mask, xb - bm[None, :], 0.0)
            bM = tl.sum(bxc * bxc, axis=0)
            bn = tl.where(tmask, nc, 0).to(tl.float32)
            fn, fm, fM = _chan(fn, fm, fM, bn, bm, bM)

    # In-tile inclusive scan over frames.  Frame t's value depends only on frames <= t of the
    # tile (the scan network is fixed, whatever the data): later frames, padding included,
    # cannot change its bits.  Padding frames (n = 0) are identities, so the last element is
    # the tile aggregate.
    sn, sm, sM = tl.associative_scan((fn, fm, fM), 0, _chan)
    last = tl.arange(0, BT) == BT - 1
    am = tl.sum(tl.where(last, sm, 0.0), axis=0)
    aM = tl.sum(tl.where(last, sM, 0.0), axis=0)

    # ---- publish the aggregate, look back, publish the inclusive prefix ----------------
    # (For tile 0 the aggregate is never read; publishing it anyway keeps the code branchless.)
    aw = _pack_fwd(am, aM)
    tl.atomic_xchg(d_ptr + 2 * i, aw, sem="relaxed")
    pn, pm, pM = _fwd_lookback(d_ptr, i, C, T, cnt0, m0, M0, BT, LOOKBACK)
    # inc(i) = chan(P(i), agg(i)) from exactly the bits a later tile would merge (the word,
    # its counts): the chain of ``_fwd_lookback``.
    _, an = _fwd_counts(i, C, T, cnt0, BT)
    am, aM = _unpack_fwd(aw)
    _, inm, inM = _chan(pn, pm, pM, an, am, aM)
    if INC_EVERY == 1:
        tl.atomic_xchg(d_ptr + 2 * i + 1, _pack_fwd(inm, inM), sem="relaxed")
    elif INC_EVERY > 1:  # testing: only every INC_EVERY-th tile publishes
        iw = _pack_fwd(inm, inM)
        tl.atomic_xchg(d_ptr + 2 * i + 1, iw, mask=i % INC_EVERY == 0, sem="relaxed")
    tl.store(m2_ptr + b, inM, mask=i == NTB - 1)

    # ---- per-frame final statistics and the output ----------------------------------
    n_t, m_t, M_t = _chan(pn, pm, pM, sn, sm, sM)
    r_t = 1.0 / tl.sqrt(M_t / tl.maximum(n_t, 1.0) + eps)
    st_offs = b64 * T + offs_t
    tl.store(mean_ptr + st_offs, m_t, mask=tmask)
    tl.store(rstd_ptr + st_offs, r_t, mask=tmask)

    if NUM_CB == 1:
        out = (x - m_t[None, :]) * r_t[None, :]
        if gamma_ptr is not None:
            gam = tl.load(gamma_ptr + offs_c, mask=cmask, other=0.0).to(tl.float32)
            out = out * gam[:, None]
        if beta_ptr is not None:
            bet = tl.load(beta_ptr + offs_c, mask=cmask, other=0.0).to(tl.float32)
            out = out + bet[:, None]
        tl.store(y_base + offs, out.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        for cb in range(NUM_CB):
            cc = cb * BLOCK_C + offs_c
            cmask = cc < C
            mask = cmask[:, None] & tmask[None, :]
            offs = cc[:, None] * T + offs_t[None, :]
            xb = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
            out = (xb - m_t[None, :]) * r_t[None, :]
            if gamma_ptr is not None:
                gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
                out = out * gam[:, None]
            if beta_ptr is not None:
                bet = tl.load(beta_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
                out = out + bet[:, None]
            tl.store(y_base + offs, out.to(y_ptr.dtype.element_ty), mask=mask)


# ============================================================================================
# cLN backward
# ============================================================================================
@triton.jit
def _bwd_lb_step(i0, i1, i2, a0, a1, a2, ok, live, found, adv):
    """Classify one tile of a backward look-back window (see ``_fwd_lb_step``)."""
    ok = live & ok
    vi = ((i0 & i1 & i2) & 1) != 0
    va = ((a0 & a1 & a2) & 1) != 0
    use_i = ok & vi
    use_a = ok & va & (vi == 0)
    found = tl.where(use_i, 1, found)
    adv = adv + (use_i | use_a).to(tl.int32)
    return use_a, use_i, found, adv


@triton.jit
def _bwd_lb_fold(i0, i1, i2, a0, a1, a2, use_i, use_a, ea, eb, ep):
    """One tile of a window's fold: restart from its inclusive sums or add its aggregate."""
    ea = tl.where(use_i, _unpack_bwd(i0), ea)
    eb = tl.where(use_i, _unpack_bwd(i1), eb)
    ep = tl.where(use_i, _unpack_bwd(i2), ep)
    ea = tl.where(use_a, ea + _unpack_bwd(a0), ea)
    eb = tl.where(use_a, eb + _unpack_bwd(a1), eb)
    ep = tl.where(use_a, ep + _unpack_bwd(a2), ep)
    return ea, eb, ep


@triton.jit
def _bwd_lookback(d_ptr, i, NTB, W: tl.constexpr):
    """Exclusive suffix sums (S_a, S_b, P) over the later tiles i+1 .. NTB-1.

    Tile j's six words are adjacent at ``d_ptr + 6*j``: aggregate (a, b, p) then inclusive
    (a, b, p).  Same scheme as ``_fwd_lookback``, mirrored: the canonical value is the chain
    ``inc(NTB) = 0``, ``inc(j) = inc(j+1) + agg(j)``; the walk finds the nearest later tile j0
    with its inclusive words ready (or j0 = NTB), and the fold adds agg(j0-1), ..., agg(i+1)
    to inc(j0) in that order, so the result is inc(i+1) bit for bit whichever j0 was found.
    """
    ea = tl.zeros([], tl.float32)
    eb = tl.zeros([], tl.float32)
    ep = tl.zeros([], tl.float32)
    found = tl.zeros([], tl.int32)
    j = i + 1
    jbot = j
    while (j < NTB) & (found == 0):
        p = d_ptr + 6 * j
        a00 = tl.load(p, volatile=True)
        a01 = tl.load(p + 1, volatile=True)
        a02 = tl.load(p + 2, volatile=True)
        i00 = tl.load(p + 3, volatile=True)
        i01 = tl.load(p + 4, volatile=True)
        i02 = tl.load(p + 5, volatile=True)
        if W >= 2:
            m1 = j + 1 < NTB
            a10 = tl.load(p + 6, mask=m1, other=0, volatile=True)
            a11 = tl.load(p + 7, mask=m1, other=0, volatile=True)
            a12 = tl.load(p + 8, mask=m1, other=0, volatile=True)
            i10 = tl.load(p + 9, mask=m1, other=0, volatile=True)
            i11 = tl.load(p + 10, mask=m1, other=0, volatile=True)
            i12 = tl.load(p + 11, mask=m1, other=0, volatile=True)
        live = j < NTB
        adv = tl.zeros([], tl.int32)
        ua0, ui0, found, adv = _bwd_lb_step(i00, i01, i02, a00, a01, a02, live, live, found, adv)
        if W >= 2:
            ua1, ui1, found, adv = _bwd_lb_step(i10, i11, i12, a10, a11, a12, m1, ua0, found, adv)
        # Fold of the window, latest tile first, from 0 (right if the walk passes the end);
        # only the last round's fold is kept.
        ea = tl.zeros([], tl.float32)
        eb = tl.zeros([], tl.float32)
        ep = tl.zeros([], tl.float32)
        if W >= 2:
            ea, eb, ep = _bwd_lb_fold(i10, i11, i12, a10, a11, a12, ui1, ua1, ea, eb, ep)
        ea, eb, ep = _bwd_lb_fold(i00, i01, i02, a00, a01, a02, ui0, ua0, ea, eb, ep)
        jbot = j
        j = j + adv
    # Tiles jbot-1 .. i+1 were walked over in earlier rounds: add them, in decreasing order.
    j = jbot - 1
    while j > i:
        q = d_ptr + 6 * j
        v00 = tl.load(q, volatile=True)
        v01 = tl.load(q + 1, volatile=True)
        v02 = tl.load(q + 2, volatile=True)
        if W >= 2:
            n1 = j - 1 > i
            v10 = tl.load(q - 6, mask=n1, other=0, volatile=True)
            v11 = tl.load(q - 5, mask=n1, other=0, volatile=True)
            v12 = tl.load(q - 4, mask=n1, other=0, volatile=True)
        t = ((v00 & v01 & v02) & 1) != 0
        adv = t.to(tl.int32)
        ea = tl.where(t, ea + _unpack_bwd(v00), ea)
        eb = tl.where(t, eb + _unpack_bwd(v01), eb)
        ep = tl.where(t, ep + _unpack_bwd(v02), ep)
        if W >= 2:
            t = t & n1 & (((v10 & v11 & v12) & 1) != 0)
            adv = adv + t.to(tl.int32)
            ea = tl.where(t, ea + _unpack_bwd(v10), ea)
            eb = tl.where(t, eb + _unpack_bwd(v11), eb)
            ep = tl.where(t, ep + _unpack_bwd(v12), ep)
        j = j - adv
    return ea, eb, ep


@triton.jit
def _cln_bwd_kernel(
    dy_ptr,
    x_ptr,
    gamma_ptr,
    mean_ptr,
    rstd_ptr,
    cnt_ptr,
    dx_ptr,
    dgp_ptr,
    dbp_ptr,
    scr_ptr,
    B,
    C,
    T,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
    NUM_CB: tl.constexpr,
    LOOKBACK: tl.constexpr,
    INC_EVERY: tl.constexpr,
):
    # gamma/count/dgamma/dbeta pointers may be None (compile-time: the code is left out).
    # Tickets from the last tile backwards: a tile waits only on later tiles (smaller tickets).
    k = tl.atomic_add(scr_ptr, 1).to(tl.int32)
    NTB = tl.cdiv(T, BT)
    b = k % B
    i = NTB - 1 - k // B
    tile = b * NTB + i
    d_ptr = scr_ptr + _SCR_OFF + 6 * (b * NTB)  # 6 words per tile: aggregate, inclusive

    b64 = b.to(tl.int64)
    x_base = x_ptr + b64 * C * T
    dy_base = dy_ptr + b64 * C * T
    dx_base = dx_ptr + b64 * C * T
    offs_t = i * BT + tl.arange(0, BT)
    tmask = offs_t < T
    offs_c = tl.arange(0, BLOCK_C)

    st_offs = b64 * T + offs_t
    mu = tl.load(mean_ptr + st_offs, mask=tmask, other=0.0)
    r = tl.load(rstd_ptr + st_offs, mask=tmask, other=0.0)  # r = 0 on padding: a = b = 0
    K = tl.load(mean_ptr + b64 * T)
    if cnt_ptr is not None:
        cnt0 = tl.load(cnt_ptr + b).to(tl.float32)
    else:
        cnt0 = tl.zeros([], tl.float32)
    n_t = cnt0 + (C * (offs_t + 1)).to(tl.float32)

    # ---- per-frame G1 = sum_c g, G2 = sum_c g*xhat (+ dgamma/dbeta partials) -----------
    if NUM_CB == 1:
        cmask = offs_c < C
        mask = cmask[:, None] & tmask[None, :]
        offs = offs_c[:, None] * T + offs_t[None, :]
        x = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_base + offs, mask=mask, other=0.0).to(tl.float32)
        # One tile-sized temporary u = dy*(x-mu): G2 = r*sum_c gamma*u and the dgamma partial
        # sum_t u*r both come from it, so only x, dy and u are live at the peak (registers).
        u = dy * (x - mu[None, :])
        if gamma_ptr is not None:
            gam = tl.load(gamma_ptr + offs_c, mask=cmask, other=0.0).to(tl.float32)
            G1 = tl.sum(dy * gam[:, None], axis=0)
            G2 = r * tl.sum(u * gam[:, None], axis=0)
        else:
            G1 = tl.sum(dy, axis=0)
            G2 = r * tl.sum(u, axis=0)
        if dgp_ptr is not None:
            tl.store(dgp_ptr + tile * C + offs_c, tl.sum(u * r[None, :], axis=1), mask=cmask)
        if dbp_ptr is not None:
            tl.store(dbp_ptr + tile * C + offs_c, tl.sum(dy, axis=1), mask=cmask)
    else:
        G1 = tl.zeros([BT], tl.float32)
        G2 = tl.zeros([BT], tl.float32)
        for cb in range(NUM_CB):
            cc = cb * BLOCK_C + offs_c
            cmask = cc < C
            mask = cmask[:, None] & tmask[None, :]
            offs = cc[:, None] * T + offs_t[None, :]
            xb = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
            dyb = tl.load(dy_base + offs, mask=mask, other=0.0).to(tl.float32)
            ub = dyb * (xb - mu[None, :])
            if gamma_ptr is not None:
                gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
                G1 += tl.sum(dyb * gam[:, None], axis=0)
                G2 += tl.sum(ub * gam[:, None], axis=0)
            else:
                G1 += tl.sum(dyb, axis=0)
                G2 += tl.sum(ub, axis=0)
            if dgp_ptr is not None:
                tl.store(dgp_ptr + tile * C + cc, tl.sum(ub * r[None, :], axis=1), mask=cmask)
            if dbp_ptr is not None:
                tl.store(dbp_ptr + tile * C + cc, tl.sum(dyb, axis=1), mask=cmask)

    if NUM_CB != 1:
        G2 = r * G2
    a = r * G1 / n_t
    bq = r * r * G2 / n_t
    pv = bq * (mu - K)
    Sa = tl.cumsum(a, axis=0, reverse=True)
    Sb = tl.cumsum(bq, axis=0, reverse=True)
    P = tl.cumsum(pv, axis=0, reverse=True)
    ta = tl.sum(a, axis=0)
    tb = tl.sum(bq, axis=0)
    tp = tl.sum(pv, axis=0)

    # ---- publish aggregate, look back over later tiles, publish inclusive suffix --------
    dp = d_ptr + 6 * i
    tl.atomic_xchg(dp, _pack_bwd(ta), sem="relaxed")
    tl.atomic_xchg(dp + 1, _pack_bwd(tb), sem="relaxed")
    tl.atomic_xchg(dp + 2, _pack_bwd(tp), sem="relaxed")
    ea, eb, ep = _bwd_lookback(d_ptr, i, NTB, LOOKBACK)
    # inc(i) = inc(i+1) + agg(i): the chain of ``_bwd_lookback`` (IEEE addition commutes).
    if INC_EVERY == 1:
        tl.atomic_xchg(dp + 3, _pack_bwd(ea + ta), sem="relaxed")
        tl.atomic_xchg(dp + 4, _pack_bwd(eb + tb), sem="relaxed")
        tl.atomic_xchg(dp + 5, _pack_bwd(ep + tp), sem="relaxed")
    elif INC_EVERY > 1:  # testing: only every INC_EVERY-th tile publishes
        pub = i % INC_EVERY == 0
        tl.atomic_xchg(dp + 3, _pack_bwd(ea + ta), mask=pub, sem="relaxed")
        tl.atomic_xchg(dp + 4, _pack_bwd(eb + tb), mask=pub, sem="relaxed")
        tl.atomic_xchg(dp + 5, _pack_bwd(ep + tp), mask=pub, sem="relaxed")
    Sa = Sa + ea
    Sb = Sb + eb
    P = P + ep

    # ---- dx = r*g - S_a - (x-K)*S_b + P ------------------------------------------------
    if NUM_CB == 1:
        if gamma_ptr is not None:
            g = dy * gam[:, None]
        else:
            g = dy
        dx = r[None, :] * g - Sa[None, :] - (x - K) * Sb[None, :]
        dx = dx + P[None, :]
        tl.store(dx_base + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    else:
        for cb in range(NUM_CB):
            cc = cb * BLOCK_C + offs_c
            cmask = cc < C
            mask = cmask[:, None] & tmask[None, :]
            offs = cc[:, None] * T + offs_t[None, :]
            xb = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
            dyb = tl.load(dy_base + offs, mask=mask, other=0.0).to(tl.float32)
            if gamma_ptr is not None:
                gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
                gb = dyb * gam[:, None]
            else:
                gb = dyb
            dx = r[None, :] * gb - Sa[None, :] - (xb - K) * Sb[None, :]
            dx = dx + P[None, :]
            tl.store(dx_base + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


# ============================================================================================
# cLN launch rules and wrappers
# ============================================================================================
@functools.lru_cache(maxsize=256)
def _cln_config(
    B: int,
    C: int,
    T: int,
    itemsize: int,
    num_sms: int,
    tile: int,
    ept: int,
    ept_unaligned: int,
    maxnreg: int | None,
    maxnreg_unaligned: int | None,
    max_block_c: int,
    loop_block_c: int,
    min_row_bytes: int,
    max_bt: int,
    min_tiles_per_sm: int,
) -> tuple[int, int, int, int, int | None]:
    """(BLOCK_C, BT, NUM_CB, num_warps, maxnreg) for a cLN tile.

    BLOCK_C = next_pow2(C) when it fits in registers, else channel blocks.  BT fills the tile
    budget, is at least ``min_row_bytes`` per channel row (DRAM efficiency) and at most
    next_pow2(T); it is halved while the grid would have fewer than ``min_tiles_per_sm`` tiles
    per SM.  num_warps = elements / (32 * ept), within [2, 16].
    """
    block_c = max(_next_pow2(C), 2)
    num_cb = 1
    if block_c > max_block_c:
        block_c = _next_pow2(min(loop_block_c, max_block_c))
        num_cb = -(-C // block_c)
    min_bt = max(2, _next_pow2(max(1, min_row_bytes // itemsize)))
    bt = _clamp(_next_pow2(max(tile // block_c, min_bt)), 2, max_bt)
    bt = max(2, min(bt, _next_pow2(T)))
    while bt > min_bt and B * (-(-T // bt)) < min_tiles_per_sm * num_sms:
        bt //= 2
    # Triton vectorizes the row loads only when it can prove 16-element alignment of T.
    aligned = T % 16 == 0
    e = ept if aligned else ept_unaligned
    num_warps = _clamp(_next_pow2(max(1, block_c * bt // (32 * e))), 2, 16)
    return block_c, bt, num_cb, num_warps, (maxnreg if aligned else maxnreg_unaligned)


def _check_cln_size(C: int, T: int) -> None:
    # Offsets inside one sample (c * T + t) and frame counts are int32 in the kernels.
    if C * T >= 2**31:
        raise ValueError(
            f"triton cLN: C * T = {C * T} values per sample exceeds the kernels' int32 offsets"
        )


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
    B, C, T = x.shape
    _check_cln_size(C, T)
    block_c, bt, num_cb, num_warps, maxnreg = _cln_config(
        B,
        C,
        T,
        x.element_size(),
        _num_sms(x.device.type, x.device.index),
        CLN_FWD_TILE,
        CLN_FWD_EPT,
        CLN_EPT_UNALIGNED,
        CLN_FWD_MAXNREG,
        CLN_FWD_MAXNREG_UNALIGNED,
        CLN_MAX_BLOCK_C,
        CLN_LOOP_BLOCK_C,
        CLN_MIN_ROW_BYTES,
        CLN_MAX_BT,
        CLN_MIN_TILES_PER_SM,
    )
    nt = B * triton.cdiv(T, bt)
    # Ticket counter + aggregate and inclusive words of every tile; zeroed = "not published".
    scr = torch.zeros(_SCR_OFF.value + 2 * nt, dtype=torch.int64, device=x.device)
    cnt, m0, M0 = state if state is not None else (None, None, None)
    # Absent optional tensors are passed as None: Triton specializes them as constants (the
    # kernel tests ``is not None`` at compile time), which is cheaper per launch than a dummy
    # tensor plus a flag.
    _cln_fwd_kernel[(nt,)](
        x,
        y,
        gamma,
        beta,
        mean,
        rstd,
        m2_last,
        cnt,
        m0,
        M0,
        scr,
        B,
        C,
        T,
        float(eps),
        BLOCK_C=block_c,
        BT=bt,
        NUM_CB=num_cb,
        LOOKBACK=CLN_FWD_LOOKBACK,
        INC_EVERY=0 if _TEST_NO_INCLUSIVE else _TEST_INC_EVERY,
        num_warps=num_warps,
        maxnreg=maxnreg,
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
    _check_cln_size(C, T)
    block_c, bt, num_cb, num_warps, maxnreg = _cln_config(
        B,
        C,
        T,
        x.element_size(),
        _num_sms(x.device.type, x.device.index),
        CLN_BWD_TILE,
        CLN_BWD_EPT,
        CLN_EPT_UNALIGNED,
        CLN_BWD_MAXNREG,
        CLN_BWD_MAXNREG_UNALIGNED,
        CLN_MAX_BLOCK_C,
        CLN_LOOP_BLOCK_C,
        CLN_MIN_ROW_BYTES,
        CLN_MAX_BT,
        CLN_MIN_TILES_PER_SM,
    )
    nt = B * triton.cdiv(T, bt)
    scr = torch.zeros(_SCR_OFF.value + 6 * nt, dtype=torch.int64, device=x.device)
    # Per-tile partials of dgamma/dbeta, indexed by tile (not ticket): the fixed-order sum
    # below is then deterministic.
    dgp = torch.empty((nt, C), dtype=torch.float32, device=x.device) if dgamma is not None else None
    dbp = torch.empty((nt, C), dtype=torch.float32, device=x.device) if dbeta is not None else None
    _cln_bwd_kernel[(nt,)](
        dy,
        x,
        gamma,
        mean,
        rstd,
        count,
        dx,
        dgp,
        dbp,
        scr,
        B,
        C,
        T,
        BLOCK_C=block_c,
        BT=bt,
        NUM_CB=num_cb,
        LOOKBACK=CLN_BWD_LOOKBACK,
        INC_EVERY=0 if _TEST_NO_INCLUSIVE else _TEST_INC_EVERY,
        num_warps=num_warps,
        maxnreg=maxnreg,
    )
    if dgamma is not None:
        torch.sum(dgp, dim=0, out=dgamma)
    if dbeta is not None:
        torch.sum(dbp, dim=0, out=dbeta)


# ============================================================================================
# RMSNorm kernels
# ============================================================================================
@triton.jit
def _rms_fwd_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    rstd_ptr,
    M,
    N,
    stride_x,
    eps,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    mask = rmask[:, None] & cmask[None, :]
    rows64 = rows.to(tl.int64)
    x = tl.load(x_ptr + rows64[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    x = x.to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + eps)
    y = x * r[:, None]
    if w_ptr is not None:
        w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
        y = y * w[None, :]
    tl.store(y_ptr + rows64[:, None] * N + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(rstd_ptr + rows, r, mask=rmask)


@triton.jit
def _rms_rowdot_kernel(
    x_ptr,
    dy_ptr,
    w_ptr,
    rstd_ptr,
    out_ptr,
    M,
    N,
    stride_x,
    eps,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Looped row statistics for huge N.

    Forward (``dy_ptr`` None): out = rstd = 1/sqrt(mean(x^2) + eps).
    Backward: out = c = mean(g * xhat) = rstd * sum(dy * w * x) / N.
    """
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    rows64 = rows.to(tl.int64)
    acc = tl.zeros([ROWS, BLOCK_N], tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        cmask = cols < N
        mask = rmask[:, None] & cmask[None, :]
        x = tl.load(x_ptr + rows64[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
        x = x.to(tl.float32)
        if dy_ptr is not None:
            dy = tl.load(dy_ptr + rows64[:, None] * N + cols[None, :], mask=mask, other=0.0)
            g = dy.to(tl.float32)
            if w_ptr is not None:
                w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
                g = g * w[None, :]
            acc += g * x
        else:
            acc += x * x
    s = tl.sum(acc, axis=1)
    if dy_ptr is not None:
        r = tl.load(rstd_ptr + rows, mask=rmask, other=0.0)
        out = r * s / N
    else:
        out = 1.0 / tl.sqrt(s / N + eps)
    tl.store(out_ptr + rows, out, mask=rmask)


@triton.jit
def _rms_scale_kernel(
    x_ptr,
    w_ptr,
    rstd_ptr,
    y_ptr,
    M,
    N,
    stride_x,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """y = x * rstd[row] * w over a 2-D grid (row blocks, column blocks); huge-N forward."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < M
    cmask = cols < N
    mask = rmask[:, None] & cmask[None, :]
    rows64 = rows.to(tl.int64)
    x = tl.load(x_ptr + rows64[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    r = tl.load(rstd_ptr + rows, mask=rmask, other=0.0)
    y = x.to(tl.float32) * r[:, None]
    if w_ptr is not None:
        w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
        y = y * w[None, :]
    tl.store(y_ptr + rows64[:, None] * N + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rms_bwd_kernel(
    dy_ptr,
    x_ptr,
    w_ptr,
    rstd_ptr,
    c_ptr,
    dx_ptr,
    dwp_ptr,
    M,
    N,
    stride_x,
    rows_per_prog,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    """Program (p, q): rows [p*rows_per_prog, ...) x column block q.

    dx = rstd * (g - xhat * c) with c = mean(g * xhat) computed here from the whole row
    (``c_ptr`` None, one column block) or precomputed by ``_rms_rowdot_kernel``.
    The dw partial of the program stays in registers and is written once to row p of the
    (programs, N) partials.
    """
    pid = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    row_start = pid * rows_per_prog
    row_end = tl.minimum(row_start + rows_per_prog, M)
    if w_ptr is not None:
        w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    acc = tl.zeros([ROWS, BLOCK_N], tl.float32)
    # num_stages > 1: Triton's pipeliner prefetches the next rows (cp.async into shared
    # memory) while this one is reduced, so a program has more than one row in flight.
    for r0 in tl.range(row_start, row_end, ROWS, num_stages=NUM_STAGES):
        rows = r0 + tl.arange(0, ROWS)
        rmask = rows < row_end
        mask = rmask[:, None] & cmask[None, :]
        rows64 = rows.to(tl.int64)
        x = tl.load(x_ptr + rows64[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
        x = x.to(tl.float32)
        dy = tl.load(dy_ptr + rows64[:, None] * N + cols[None, :], mask=mask, other=0.0)
        dy = dy.to(tl.float32)
        r = tl.load(rstd_ptr + rows, mask=rmask, other=0.0)
        if w_ptr is not None:
            g = dy * w[None, :]
        else:
            g = dy
        xhat = x * r[:, None]
        if c_ptr is not None:
            c = tl.load(c_ptr + rows, mask=rmask, other=0.0)
        else:
            c = tl.sum(g * xhat, axis=1) / N
        dx = r[:, None] * (g - xhat * c[:, None])
        dx_ptrs = dx_ptr + rows64[:, None] * N + cols[None, :]
        tl.store(dx_ptrs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        if dwp_ptr is not None:
            acc += dy * xhat
    if dwp_ptr is not None:
        tl.store(dwp_ptr + pid.to(tl.int64) * N + cols, tl.sum(acc, axis=0), mask=cmask)


# ============================================================================================
# RMSNorm launch rules and wrappers
# ============================================================================================
def _warps_for(elems: int, per_thread: int) -> int:
    return _clamp(_next_pow2(max(1, elems // (32 * per_thread))), 4, 16)


@functools.lru_cache(maxsize=256)
def _rms_fwd_config(
    M: int, N: int, max_block_n: int, loop_block_n: int, row_tile: int
) -> tuple[bool, int, int, int]:
    """(looped, ROWS, BLOCK_N, num_warps).

    Whole rows in registers up to ``max_block_n`` columns; short rows are batched so that a
    program still moves about ``row_tile`` elements (launch and reduction overheads amortized).
    num_warps gives ~16 elements per thread (one or two 16-byte vectors per thread per row).
    """
    block_n = _next_pow2(N)
    if block_n <= max_block_n:
        rows = _clamp(row_tile // block_n, 1, _next_pow2(M))
        return False, rows, block_n, _warps_for(rows * block_n, 16)
    block_n = _next_pow2(loop_block_n)
    return True, 1, block_n, _warps_for(block_n, 16)


@functools.lru_cache(maxsize=256)
def _rms_bwd_config(
    M: int,
    N: int,
    num_sms: int,
    max_block_n: int,
    loop_block_n: int,
    row_tile: int,
    resident_warps: int,
    min_rows: int,
) -> tuple[bool, int, int, int, int, int]:
    """(looped, ROWS, BLOCK_N, num_warps, programs, rows_per_prog) for the backward.

    About one wave of programs (``num_sms * resident_warps / num_warps``, persistent style), each
    owning a contiguous range of at least ``min_rows`` rows, so the dw partials stay small.
    """
    block_n = _next_pow2(N)
    looped = block_n > max_block_n
    if looped:
        block_n = _next_pow2(loop_block_n)
        rows = 1
    else:
        rows = _clamp(row_tile // block_n, 1, _next_pow2(M))
    num_warps = _warps_for(rows * block_n, 16)
    progs_per_sm = max(1, resident_warps // num_warps)
    progs = max(1, min(num_sms * progs_per_sm, -(-M // max(min_rows, rows))))
    rows_per_prog = -(-M // progs)
    rows_per_prog = -(-rows_per_prog // rows) * rows  # whole ROWS chunks per program
    progs = -(-M // rows_per_prog)
    return looped, rows, block_n, num_warps, progs, rows_per_prog


def rmsnorm_forward(x: Tensor, weight: Tensor | None, eps: float, y: Tensor, rstd: Tensor) -> None:
    M, N = x.shape
    looped, rows, block_n, num_warps = _rms_fwd_config(
        M, N, RMS_FWD_MAX_BLOCK_N, RMS_LOOP_BLOCK_N, RMS_ROW_TILE
    )
    if not looped:
        _rms_fwd_kernel[(triton.cdiv(M, rows),)](
            x,
            weight,
            y,
            rstd,
            M,
            N,
            x.stride(0),
            float(eps),
            ROWS=rows,
            BLOCK_N=block_n,
            num_warps=num_warps,
        )
        return
    _rms_rowdot_kernel[(M,)](
        x,
        None,  # no dy: the forward statistic
        None,
        None,
        rstd,
        M,
        N,
        x.stride(0),
        float(eps),
        ROWS=1,
        BLOCK_N=block_n,
        num_warps=num_warps,
    )
    _rms_scale_kernel[(M, triton.cdiv(N, block_n))](
        x,
        weight,
        rstd,
        y,
        M,
        N,
        x.stride(0),
        ROWS=1,
        BLOCK_N=block_n,
        num_warps=num_warps,
    )


def rmsnorm_backward(
    dy: Tensor, x: Tensor, weight: Tensor | None, rstd: Tensor, dx: Tensor, dw: Tensor | None
) -> None:
    M, N = x.shape
    looped, rows, block_n, num_warps, progs, rows_per_prog = _rms_bwd_config(
        M,
        N,
        _num_sms(x.device.type, x.device.index),
        RMS_BWD_MAX_BLOCK_N,
        RMS_LOOP_BLOCK_N,
        RMS_ROW_TILE,
        RMS_BWD_RESIDENT_WARPS,
        RMS_BWD_MIN_ROWS_PER_PROG,
    )
    dwp = torch.empty((progs, N), dtype=torch.float32, device=x.device) if dw is not None else None
    if looped:
        c = torch.empty(M, dtype=torch.float32, device=x.device)
        _rms_rowdot_kernel[(M,)](
            x,
            dy,
            weight,
            rstd,
            c,
            M,
            N,
            x.stride(0),
            0.0,
            ROWS=1,
            BLOCK_N=block_n,
            num_warps=num_warps,
        )
    else:
        c = None  # computed in the kernel
    _rms_bwd_kernel[(progs, triton.cdiv(N, block_n))](
        dy,
        x,
        weight,
        rstd,
        c,
        dx,
        dwp,
        M,
        N,
        x.stride(0),
        rows_per_prog,
        ROWS=rows,
        BLOCK_N=block_n,
        NUM_STAGES=RMS_BWD_STAGES,
        num_warps=num_warps,
    )
    if dw is not None:
        torch.sum(dwp, dim=0, out=dw)
