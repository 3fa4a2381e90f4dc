"""Triton kernels for cLN and RMSNorm (the raw-kernel contract of ``common.kernel_api``).

cLN forward: one pass over ``x``, tile prefixes from the published tile aggregates
----------------------------------------------------------------------------------
Each program owns one tile ``x[b, :, t0:t0+BT]`` (all channels, ``BT`` frames) and keeps it
in registers.  It computes the per-frame mean and M2 exactly (two passes over registers),
scans them over the frames with the Chan combine (``tl.associative_scan``), publishes the tile
aggregate, gets the exclusive prefix of the earlier tiles of the same sequence (below), and
then writes ``y``/``mean``/``rstd`` from the registers.
``x`` is read once and ``y`` written once, which is what the bandwidth target requires.

Why the tile id comes from a ticket (an atomic counter) rather than ``program_id``: a program
only ever waits on tiles with a smaller ticket, and a ticket is taken only by a program that
is already running, so every tile it waits on is resident and will finish (no deadlock however
the hardware schedules the grid).

Exclusive prefixes without look-back (sequences of at most ``CLN_DIRECT_MAX_TILES`` tiles):
every tile publishes only its aggregate word, with no dependency on any other tile, and then
computes its exclusive prefix as a fixed-order reduction over the aggregates of *all* earlier
tiles of its sequence (``_fwd_direct_prefix``: chunks of ``CLN_DIRECT_CHUNK`` words reduced by
``tl.reduce``, chunk results folded left to right after the stream state).  The prefix of tile
i then depends only on the frames before it, combined in an order fixed by i alone: the output
is bitwise deterministic run to run and bitwise causal, whatever the timing.  A tile reads at
most NTB words (8 B each, from L2).  Longer sequences keep the decoupled look-back (walk back
over aggregates until an inclusive prefix is met): correct, but its rounding depends on where
the walk stopped, so bitwise determinism holds only for NTB <= ``CLN_DIRECT_MAX_TILES``.

Why self-validating 64-bit descriptors instead of "flag + payload": Triton has no acquire load,
and a tensor load whose elements are replicated across warps may be read at different times by
different warps, which would give non-uniform control flow around barriers.  So every published
word carries its own "ready" bit and is written once (0 -> final value) by a scalar 64-bit
atomic exchange; readers use *scalar* volatile loads (every thread loads the word itself; the
look-back loop contains no barrier, so threads may even take different paths safely: all of
them end with a correct prefix, equal up to rounding).  Forward words pack (mean, M2) with the
sign bit of M2 (always >= 0) as the ready bit; backward words pack one float and bit 0 = ready.

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
from typing import NamedTuple

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
#: Exclusive prefixes/suffixes by a fixed-order reduction over the aggregates of all earlier
#: (later) tiles of the sequence, read as vectors of ``CLN_DIRECT_CHUNK`` words, when a sequence
#: has at most ``CLN_DIRECT_MAX_TILES`` tiles: bitwise deterministic and causal.  Longer
#: sequences use the decoupled look-back below (correct up to rounding, but the rounding then
#: depends on timing: bitwise determinism holds for NTB <= CLN_DIRECT_MAX_TILES only).
#: The chunk is at least 32 * num_warps on the GPU (one word per thread: no replication across
#: warps).  256 keeps the forward free of spills at maxnreg 128 for the target shapes (sm_90,
#: ptxas); 1024 added 24-40 B of spills per thread (the chunk is live next to the tile).
CLN_DIRECT_MAX_TILES = 4096
CLN_DIRECT_CHUNK = 256
#: Split roles (see the module docstring) when the tensor(s) read by the kernel hold at least
#: this many bytes; smaller problems are latency bound and run one program per tile.
CLN_SPLIT_MIN_BYTES = 8 << 20
#: Bytes of tiles between a tile's STATS and NORMALIZE tickets (the window D, in tiles, is this
#: over the tile's bytes): the re-read must still be in L2 (50 MB on the H100/H200).
CLN_L2_WINDOW_BYTES = 16 << 20
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

# Offset (in int64 words) of the descriptors after the ticket counter: its own 128-byte line.
_SCR_OFF = 16


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
def _split_ticket(k, NT, D):
    """Ticket -> (is_stats, g) of the split-role schedule (see the module docstring).

    ``D`` STATS tickets first (tiles 0 .. D-1), then NORMALIZE(g) and STATS(g + D) alternate,
    then the last D NORMALIZE tickets.  Every STATS(g') with g' <= g has a smaller ticket than
    NORMALIZE(g), so a NORMALIZE program only waits on programs that already started.
    """
    m = tl.maximum(k - D, 0)
    pair = 2 * (NT - D)
    in_pair = m < pair
    odd = (m % 2) == 1
    is_stats = (k < D) | (in_pair & odd)
    g = tl.where(in_pair, tl.where(odd, D + m // 2, m // 2), NT - D + (m - pair))
    g = tl.where(k < D, k, g)
    return is_stats, g


@triton.jit
def _chan(na, ma, Ma, nb, mb, Mb):
    """Chan/Welford merge of (count, mean, M2): a is the earlier partition.

    ``w`` divides by max(n, 1) so that two empty partitions (padding frames, n = 0) merge to
    an empty one instead of NaN; an empty partition (n = 0, mean 0, M2 0) is then an exact
    identity on either side.
    """
    n = na + nb
    d = mb - ma
    w = nb / tl.maximum(n, 1.0)
    # Explicit fma: every inlined copy rounds the same way (no contraction choices left).
    # ``where``: an empty left partition is an exact identity even where nb / nb is not
    # exactly 1 (approximate division on the GPU); M is then 0 + Mb exactly (na = 0).
    m = tl.where(na == 0, mb, tl.fma(d, w, ma))
    return n, m, tl.fma(d * d * na, w, Ma + Mb)


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
def _fwd_lb_step(wi, wa, jk, live, found, adv, an, am, aM, C, T, cnt0, BT: tl.constexpr):
    """Consume tile ``jk`` (the next earlier one) into the running aggregate, if ready.

    ``live`` is false once a step used an inclusive prefix, met a not-ready tile, or ran past
    the start; later steps of the window then change nothing.
    """
    ok = live & (jk >= 0)
    use_i = ok & (wi < 0)
    use_a = ok & (wi >= 0) & (wa < 0)
    take = use_i | use_a
    rm, rM = _unpack_fwd(tl.where(use_i, wi, wa))
    end = tl.minimum((jk + 1) * BT, T)
    rn = tl.where(use_i, cnt0 + C * end, C * (end - jk * BT)).to(tl.float32)
    nn, nm, nM = _chan(rn, rm, rM, an, am, aM)
    an = tl.where(take, nn, an)
    am = tl.where(take, nm, am)
    aM = tl.where(take, nM, aM)
    found = tl.where(use_i, 1, found)
    adv = adv + take.to(tl.int32)
    return use_a, found, adv, an, am, aM


@triton.jit
def _fwd_lookback(d_ptr, i, C, T, cnt0, m0, M0, BT: tl.constexpr, W: tl.constexpr):
    """Exclusive prefix (count, mean, M2) of tile ``i``: earlier tiles plus the stream state.

    ``d_ptr`` points at this sequence's descriptors: tile j has its aggregate word at
    ``d_ptr + 2*j`` and its inclusive word at ``d_ptr + 2*j + 1`` (adjacent, so one pointer and
    immediate offsets address a whole window: few registers while the tile is held).
    Walks back from tile i-1, W tiles per round trip, combining aggregates until it meets an
    inclusive prefix (which already contains the state) or the start of the sequence (then
    the state is the initial prefix).  A not-ready tile ends the round; the next round
    re-reads from it (the spin).  Only scalar loads: see the module docstring.
    """
    an = tl.zeros([], tl.float32)
    am = tl.zeros([], tl.float32)
    aM = tl.zeros([], tl.float32)
    found = tl.zeros([], tl.int32)
    j = i - 1
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
        live = j >= 0
        adv = tl.zeros([], tl.int32)
        live, found, adv, an, am, aM = _fwd_lb_step(
            wi0, wa0, j, live, found, adv, an, am, aM, C, T, cnt0, BT
        )
        if W >= 2:
            live, found, adv, an, am, aM = _fwd_lb_step(
                wi1, wa1, j - 1, live, found, adv, an, am, aM, C, T, cnt0, BT
            )
        if W >= 3:
            live, found, adv, an, am, aM = _fwd_lb_step(
                wi2, wa2, j - 2, live, found, adv, an, am, aM, C, T, cnt0, BT
            )
        if W >= 4:
            live, found, adv, an, am, aM = _fwd_lb_step(
                wi3, wa3, j - 3, live, found, adv, an, am, aM, C, T, cnt0, BT
            )
        j = j - adv
    sn, sm, sM = _chan(cnt0, m0, M0, an, am, aM)
    hit = found != 0
    return tl.where(hit, an, sn), tl.where(hit, am, sm), tl.where(hit, aM, sM)


@triton.jit
def _fwd_direct_prefix(d_ptr, i, C, T, cnt0, m0, M0, BT: tl.constexpr, CHUNK: tl.constexpr):
    """Exclusive prefix of tile ``i`` as a fixed-order reduction (no look-back).

    ``d_ptr + j`` holds tile j's aggregate word.  The aggregates of tiles 0 .. i-1 are read in
    chunks of ``CHUNK`` (absolute positions, so the chunking depends on ``i`` only); each chunk
    is reduced by ``tl.reduce`` (a fixed tree for the constexpr shape; masked lanes are exact
    identities) and the chunk results are folded left to right after the stream state.  The
    result depends on the data of earlier tiles only, in a data-independent order: bitwise
    deterministic and causal however the tiles are scheduled.

    Spin: a chunk is re-loaded until *all* its needed words are ready; the loop condition is a
    full reduction (uniform over every thread), so the barriers inside the loop are safe, and
    the values used are those of the load that was found all-ready.
    """
    pn = cnt0
    pm = m0
    pM = M0
    lane = tl.arange(0, CHUNK)
    for c0 in range(0, i, CHUNK):
        j = c0 + lane
        need = j < i
        w = tl.load(d_ptr + j, mask=need, other=-1, volatile=True)
        rdy = tl.min((w < 0).to(tl.int32), axis=0)
        while rdy == 0:
            w = tl.load(d_ptr + j, mask=need, other=-1, volatile=True)
            rdy = tl.min((w < 0).to(tl.int32), axis=0)
        wm, wM = _unpack_fwd(w)
        end = tl.minimum((j + 1) * BT, T)
        wn = tl.where(need, C * (end - j * BT), 0).to(tl.float32)
        wm = tl.where(need, wm, 0.0)
        wM = tl.where(need, wM, 0.0)
        cn, cm, cM = tl.reduce((wn, wm, wM), 0, _chan)
        pn, pm, pM = _chan(pn, pm, pM, cn, cm, cM)
    return pn, pm, pM


@triton.jit
def _last3(sn, sm, sM, BT: tl.constexpr):
    """The last element of an inclusive scan (the tile aggregate: padding frames are
    identities)."""
    last = tl.arange(0, BT) == BT - 1
    an = tl.sum(tl.where(last, sn, 0.0), axis=0)
    am = tl.sum(tl.where(last, sm, 0.0), axis=0)
    aM = tl.sum(tl.where(last, sM, 0.0), axis=0)
    return an, am, aM


@triton.jit
def _fwd_emit(
    x,
    x_base,
    y_base,
    gamma_ptr,
    beta_ptr,
    mean_ptr,
    rstd_ptr,
    m2_ptr,
    b,
    i,
    C,
    T,
    NTB,
    eps,
    offs_c,
    offs_t,
    tmask,
    pn,
    pm,
    pM,
    an,
    am,
    aM,
    sn,
    sm,
    sM,
    HAS_GAMMA: tl.constexpr,
    HAS_BETA: tl.constexpr,
    BLOCK_C: tl.constexpr,
    NUM_CB: tl.constexpr,
):
    """Given the exclusive prefix (pn, pm, pM) of tile i: write mean, rstd, y (and m2_last)."""
    inn, inm, inM = _chan(pn, pm, pM, an, am, aM)
    tl.store(m2_ptr + b, inM, mask=i == NTB - 1)
    n_t, m_t, M_t = _chan(pn, pm, pM, sn, sm, sM)
    r_t = 1.0 / tl.sqrt(M_t / tl.maximum(n_t, 1.0) + eps)
    st_offs = b.to(tl.int64) * T + offs_t
    tl.store(mean_ptr + st_offs, m_t, mask=tmask)
    tl.store(rstd_ptr + st_offs, r_t, mask=tmask)
    for cb in range(NUM_CB):
        cc = cb * BLOCK_C + offs_c
        cmask = cc < C
        mask = cmask[:, None] & tmask[None, :]
        offs = cc[:, None] * T + offs_t[None, :]
        if NUM_CB == 1:
            xb = x  # the tile is still in registers
        else:
            xb = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
        out = (xb - m_t[None, :]) * r_t[None, :]
        if HAS_GAMMA:
            gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
            out = out * gam[:, None]
        if HAS_BETA:
            bet = tl.load(beta_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
            out = out + bet[:, None]
        tl.store(y_base + offs, out.to(y_base.dtype.element_ty), mask=mask)


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
    NTB,
    D,
    eps,
    HAS_STATE: tl.constexpr,
    HAS_GAMMA: tl.constexpr,
    HAS_BETA: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
    NUM_CB: tl.constexpr,
    LOOKBACK: tl.constexpr,
    PUBLISH_INC: tl.constexpr,
    SCR_OFF: tl.constexpr,
    DIRECT: tl.constexpr,
    SPLIT: tl.constexpr,
    CHUNK: tl.constexpr,
):
    # Ticket -> (role, tile g) -> (b, i).  Sequences are interleaved (b fastest) so that the
    # tiles in flight at one time are spread over the batch.
    k = tl.atomic_add(scr_ptr, 1).to(tl.int32)
    if SPLIT:
        is_stats, g = _split_ticket(k, B * NTB, D)
    else:
        is_stats = k >= 0  # every program publishes its aggregate and writes its tile
        g = k
    b = g % B
    i = g // B
    if DIRECT:
        d_ptr = scr_ptr + SCR_OFF + b * NTB  # one aggregate word per tile
    else:
        d_ptr = scr_ptr + SCR_OFF + 2 * (b * NTB)  # [AGG, INC] word pairs of this sequence

    b64 = b.to(tl.int64)
    x_base = x_ptr + b64 * C * T
    y_base = y_ptr + b64 * C * T
    offs_t = i * BT + tl.arange(0, BT)
    tmask = offs_t < T
    offs_c = tl.arange(0, BLOCK_C)

    if HAS_STATE:
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
        x = tl.zeros([BLOCK_C, BT], tl.float32)  # unused: _fwd_emit re-reads the blocks
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

    if SPLIT:
        if is_stats:
            # STATS: publish the tile aggregate (a fixed tree over the frames) and stop.
            an, am, aM = tl.reduce((fn, fm, fM), 0, _chan)
            tl.atomic_xchg(d_ptr + i, _pack_fwd(am, aM), sem="relaxed")
        else:
            # NORMALIZE: the tile was read by its STATS program D tickets ago (L2).
            sn, sm, sM = tl.associative_scan((fn, fm, fM), 0, _chan)
            an, am, aM = _last3(sn, sm, sM, BT)
            pn, pm, pM = _fwd_direct_prefix(d_ptr, i, C, T, cnt0, m0, M0, BT, CHUNK)
            _fwd_emit(x, x_base, y_base, gamma_ptr, beta_ptr, mean_ptr, rstd_ptr, m2_ptr,
                      b, i, C, T, NTB, eps, offs_c, offs_t, tmask, pn, pm, pM, an, am, aM,
                      sn, sm, sM, HAS_GAMMA, HAS_BETA, BLOCK_C, NUM_CB)
    else:
        # In-tile inclusive scan over frames; padding frames (n = 0) are identities, so the
        # last element is the tile aggregate.
        sn, sm, sM = tl.associative_scan((fn, fm, fM), 0, _chan)
        an, am, aM = _last3(sn, sm, sM, BT)
        # Publish the aggregate, get the prefix (for tile 0 the aggregate is never read;
        # publishing it anyway keeps the code branchless).
        if DIRECT:
            tl.atomic_xchg(d_ptr + i, _pack_fwd(am, aM), sem="relaxed")
            pn, pm, pM = _fwd_direct_prefix(d_ptr, i, C, T, cnt0, m0, M0, BT, CHUNK)
        else:
            tl.atomic_xchg(d_ptr + 2 * i, _pack_fwd(am, aM), sem="relaxed")
            pn, pm, pM = _fwd_lookback(d_ptr, i, C, T, cnt0, m0, M0, BT, LOOKBACK)
            if PUBLISH_INC:
                inn, inm, inM = _chan(pn, pm, pM, an, am, aM)
                tl.atomic_xchg(d_ptr + 2 * i + 1, _pack_fwd(inm, inM), sem="relaxed")
        _fwd_emit(x, x_base, y_base, gamma_ptr, beta_ptr, mean_ptr, rstd_ptr, m2_ptr,
                  b, i, C, T, NTB, eps, offs_c, offs_t, tmask, pn, pm, pM, an, am, aM,
                  sn, sm, sM, HAS_GAMMA, HAS_BETA, BLOCK_C, NUM_CB)


# ============================================================================================
# cLN backward
# ============================================================================================
@triton.jit
def _bwd_lb_step(i0, i1, i2, a0, a1, a2, ok, live, found, adv, ea, eb, ep):
    ok = live & ok
    vi = ((i0 & i1 & i2) & 1) != 0
    va = ((a0 & a1 & a2) & 1) != 0
    use_i = ok & vi
    use_a = ok & va & (vi == 0)
    take = use_i | use_a
    ea = tl.where(take, ea + _unpack_bwd(tl.where(use_i, i0, a0)), ea)
    eb = tl.where(take, eb + _unpack_bwd(tl.where(use_i, i1, a1)), eb)
    ep = tl.where(take, ep + _unpack_bwd(tl.where(use_i, i2, a2)), ep)
    found = tl.where(use_i, 1, found)
    adv = adv + take.to(tl.int32)
    return use_a, found, adv, ea, eb, ep


@triton.jit
def _bwd_lookback(d_ptr, i, NTB, W: tl.constexpr):
    """Exclusive suffix sums (S_a, S_b, P) over the later tiles i+1 .. NTB-1.

    Tile j's six words are adjacent at ``d_ptr + 6*j``: aggregate (a, b, p) then inclusive
    (a, b, p).  Same scheme as ``_fwd_lookback``.
    """
    ea = tl.zeros([], tl.float32)
    eb = tl.zeros([], tl.float32)
    ep = tl.zeros([], tl.float32)
    found = tl.zeros([], tl.int32)
    j = i + 1
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
        live, found, adv, ea, eb, ep = _bwd_lb_step(
            i00, i01, i02, a00, a01, a02, live, live, found, adv, ea, eb, ep
        )
        if W >= 2:
            live, found, adv, ea, eb, ep = _bwd_lb_step(
                i10, i11, i12, a10, a11, a12, m1, live, found, adv, ea, eb, ep
            )
        j = j + adv
    return ea, eb, ep


@triton.jit
def _bwd_direct_suffix(d_ptr, i, NTB, CHUNK: tl.constexpr):
    """Exclusive suffix sums (S_a, S_b, P) over tiles i+1 .. NTB-1, fixed order (no look-back).

    Words of tile j: ``d_ptr + j`` (a), ``d_ptr + NTB + j`` (b), ``d_ptr + 2*NTB + j`` (p).
    Chunks at absolute positions, from the last one down to the one holding tile i+1; each is
    summed by ``tl.sum`` (fixed tree) and added in front of the running sum.  Same spin rule as
    ``_fwd_direct_prefix``.
    """
    ea = tl.zeros([], tl.float32)
    eb = tl.zeros([], tl.float32)
    ep = tl.zeros([], tl.float32)
    lane = tl.arange(0, CHUNK)
    nch = tl.cdiv(NTB, CHUNK)
    for q in range(0, nch - (i + 1) // CHUNK):
        j = (nch - 1 - q) * CHUNK + lane
        need = (j > i) & (j < NTB)
        wa = tl.load(d_ptr + j, mask=need, other=1, volatile=True)
        wb = tl.load(d_ptr + NTB + j, mask=need, other=1, volatile=True)
        wp = tl.load(d_ptr + 2 * NTB + j, mask=need, other=1, volatile=True)
        rdy = tl.min((wa & wb & wp & 1).to(tl.int32), axis=0)
        while rdy == 0:
            wa = tl.load(d_ptr + j, mask=need, other=1, volatile=True)
            wb = tl.load(d_ptr + NTB + j, mask=need, other=1, volatile=True)
            wp = tl.load(d_ptr + 2 * NTB + j, mask=need, other=1, volatile=True)
            rdy = tl.min((wa & wb & wp & 1).to(tl.int32), axis=0)
        ea = tl.sum(tl.where(need, _unpack_bwd(wa), 0.0), axis=0) + ea
        eb = tl.sum(tl.where(need, _unpack_bwd(wb), 0.0), axis=0) + eb
        ep = tl.sum(tl.where(need, _unpack_bwd(wp), 0.0), axis=0) + ep
    return ea, eb, ep


@triton.jit
def _bwd_emit(
    x,
    dy,
    x_base,
    dy_base,
    dx_base,
    gamma_ptr,
    C,
    T,
    offs_c,
    offs_t,
    tmask,
    r,
    K,
    Sa,
    Sb,
    P,
    HAS_GAMMA: tl.constexpr,
    BLOCK_C: tl.constexpr,
    NUM_CB: tl.constexpr,
):
    """dx = r*g - S_a - (x-K)*S_b + P for the tile (inclusive suffixes per frame)."""
    for cb in range(NUM_CB):
        cc = cb * BLOCK_C + offs_c
        cmask = cc < C
        mask = cmask[:, None] & tmask[None, :]
        offs = cc[:, None] * T + offs_t[None, :]
        if NUM_CB == 1:
            xb = x  # still in registers
            dyb = dy
        else:
            xb = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
            dyb = tl.load(dy_base + offs, mask=mask, other=0.0).to(tl.float32)
        if HAS_GAMMA:
            gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
            gb = dyb * gam[:, None]
        else:
            gb = dyb
        dx = r[None, :] * gb - Sa[None, :] - (xb - K) * Sb[None, :]
        dx = dx + P[None, :]
        tl.store(dx_base + offs, dx.to(dx_base.dtype.element_ty), mask=mask)


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
    NTB,
    D,
    HAS_COUNT: tl.constexpr,
    HAS_GAMMA: tl.constexpr,
    HAS_DG: tl.constexpr,
    HAS_DB: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
    NUM_CB: tl.constexpr,
    LOOKBACK: tl.constexpr,
    PUBLISH_INC: tl.constexpr,
    SCR_OFF: tl.constexpr,
    DIRECT: tl.constexpr,
    SPLIT: tl.constexpr,
    CHUNK: tl.constexpr,
):
    # Tickets from the last tile backwards: a tile waits only on later tiles (smaller tickets).
    k = tl.atomic_add(scr_ptr, 1).to(tl.int32)
    if SPLIT:
        is_stats, g = _split_ticket(k, B * NTB, D)
    else:
        is_stats = k >= 0  # every program publishes its aggregate and writes its tile
        g = k
    b = g % B
    i = NTB - 1 - g // B
    tile = b * NTB + i
    if DIRECT:
        d_ptr = scr_ptr + SCR_OFF + 3 * (b * NTB)  # a, b, p aggregate words: 3 arrays of NTB
    else:
        d_ptr = scr_ptr + SCR_OFF + 6 * (b * NTB)  # 6 words per tile: aggregate, inclusive

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
    if HAS_COUNT:
        cnt0 = tl.load(cnt_ptr + b).to(tl.float32)
    else:
        cnt0 = tl.zeros([], tl.float32)
    n_t = cnt0 + (C * (offs_t + 1)).to(tl.float32)

    # ---- per-frame G1 = sum_c g, G2 = sum_c g*xhat (+ dgamma/dbeta partials) -----------
    # The partials are written by the program that publishes the tile's aggregate (all of
    # them without SPLIT, the STATS role with it).
    if NUM_CB == 1:
        cmask = offs_c < C
        mask = cmask[:, None] & tmask[None, :]
        offs = offs_c[:, None] * T + offs_t[None, :]
        x = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_base + offs, mask=mask, other=0.0).to(tl.float32)
        # One tile-sized temporary u = dy*(x-mu): G2 = r*sum_c gamma*u and the dgamma partial
        # sum_t u*r both come from it, so only x, dy and u are live at the peak (registers).
        u = dy * (x - mu[None, :])
        if HAS_GAMMA:
            gam = tl.load(gamma_ptr + offs_c, mask=cmask, other=0.0).to(tl.float32)
            G1 = tl.sum(dy * gam[:, None], axis=0)
            G2 = r * tl.sum(u * gam[:, None], axis=0)
        else:
            G1 = tl.sum(dy, axis=0)
            G2 = r * tl.sum(u, axis=0)
        if is_stats:
            if HAS_DG:
                tl.store(dgp_ptr + tile * C + offs_c, tl.sum(u * r[None, :], axis=1), mask=cmask)
            if HAS_DB:
                tl.store(dbp_ptr + tile * C + offs_c, tl.sum(dy, axis=1), mask=cmask)
    else:
        x = tl.zeros([BLOCK_C, BT], tl.float32)  # unused: _bwd_emit re-reads the blocks
        dy = x
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
            if HAS_GAMMA:
                gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
                G1 += tl.sum(dyb * gam[:, None], axis=0)
                G2 += tl.sum(ub * gam[:, None], axis=0)
            else:
                G1 += tl.sum(dyb, axis=0)
                G2 += tl.sum(ub, axis=0)
            pmask = cmask & is_stats
            if HAS_DG:
                tl.store(dgp_ptr + tile * C + cc, tl.sum(ub * r[None, :], axis=1), mask=pmask)
            if HAS_DB:
                tl.store(dbp_ptr + tile * C + cc, tl.sum(dyb, axis=1), mask=pmask)
        G2 = r * G2

    a = r * G1 / n_t
    bq = r * r * G2 / n_t
    pv = bq * (mu - K)

    if SPLIT:
        if is_stats:
            # STATS: publish the tile's sums and stop.
            tl.atomic_xchg(d_ptr + i, _pack_bwd(tl.sum(a, axis=0)), sem="relaxed")
            tl.atomic_xchg(d_ptr + NTB + i, _pack_bwd(tl.sum(bq, axis=0)), sem="relaxed")
            tl.atomic_xchg(d_ptr + 2 * NTB + i, _pack_bwd(tl.sum(pv, axis=0)), sem="relaxed")
        else:
            # NORMALIZE: x and dy were read by the STATS program D tickets ago (L2).
            ea, eb, ep = _bwd_direct_suffix(d_ptr, i, NTB, CHUNK)
            Sa = tl.cumsum(a, axis=0, reverse=True) + ea
            Sb = tl.cumsum(bq, axis=0, reverse=True) + eb
            P = tl.cumsum(pv, axis=0, reverse=True) + ep
            _bwd_emit(x, dy, x_base, dy_base, dx_base, gamma_ptr, C, T, offs_c, offs_t, tmask,
                      r, K, Sa, Sb, P, HAS_GAMMA, BLOCK_C, NUM_CB)
    else:
        Sa = tl.cumsum(a, axis=0, reverse=True)
        Sb = tl.cumsum(bq, axis=0, reverse=True)
        P = tl.cumsum(pv, axis=0, reverse=True)
        ta = tl.sum(a, axis=0)
        tb = tl.sum(bq, axis=0)
        tp = tl.sum(pv, axis=0)
        # Publish the aggregate, get the exclusive suffix over the later tiles.
        if DIRECT:
            tl.atomic_xchg(d_ptr + i, _pack_bwd(ta), sem="relaxed")
            tl.atomic_xchg(d_ptr + NTB + i, _pack_bwd(tb), sem="relaxed")
            tl.atomic_xchg(d_ptr + 2 * NTB + i, _pack_bwd(tp), sem="relaxed")
            ea, eb, ep = _bwd_direct_suffix(d_ptr, i, NTB, CHUNK)
        else:
            dp = d_ptr + 6 * i
            tl.atomic_xchg(dp, _pack_bwd(ta), sem="relaxed")
            tl.atomic_xchg(dp + 1, _pack_bwd(tb), sem="relaxed")
            tl.atomic_xchg(dp + 2, _pack_bwd(tp), sem="relaxed")
            ea, eb, ep = _bwd_lookback(d_ptr, i, NTB, LOOKBACK)
            if PUBLISH_INC:
                tl.atomic_xchg(dp + 3, _pack_bwd(ta + ea), sem="relaxed")
                tl.atomic_xchg(dp + 4, _pack_bwd(tb + eb), sem="relaxed")
                tl.atomic_xchg(dp + 5, _pack_bwd(tp + ep), sem="relaxed")
        _bwd_emit(x, dy, x_base, dy_base, dx_base, gamma_ptr, C, T, offs_c, offs_t, tmask,
                  r, K, Sa + ea, Sb + eb, P + ep, HAS_GAMMA, BLOCK_C, NUM_CB)


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


def _direct_chunk(x: Tensor, num_warps: int) -> int:
    # On the GPU at least one word per thread: a 1-D layout of CHUNK elements then has no
    # replication across warps (every word is loaded by exactly one thread).
    chunk = _next_pow2(max(1, CLN_DIRECT_CHUNK))
    if x.device.type == "cuda":
        chunk = max(chunk, 32 * num_warps)
    return chunk


def _check_cln_size(C: int, T: int) -> None:
    # Offsets inside one sample (c * T + t) and frame counts are int32 in the kernels.
    if C * T >= 2**31:
        raise ValueError(
            f"triton cLN: C * T = {C * T} values per sample exceeds the kernels' int32 offsets"
        )


class _ClnPlan(NamedTuple):
    """Launch plan of one cLN kernel call (see ``_cln_config``)."""

    block_c: int
    bt: int
    num_cb: int
    num_warps: int
    maxnreg: int | None
    ntb: int  # tiles per sequence
    nt: int  # tiles in all
    direct: bool  # fixed-order prefix over all aggregates (else the look-back path)
    split: bool  # STATS and NORMALIZE programs per tile (direct only)
    window: int  # D: tiles between a tile's STATS and NORMALIZE tickets
    chunk: int

    @property
    def grid(self) -> tuple[int]:
        return (2 * self.nt if self.split else self.nt,)


def _cln_plan(x: Tensor, forward: bool) -> _ClnPlan:
    """The forward's or the backward's launch plan for ``x`` (one rule, two sets of knobs)."""
    B, C, T = x.shape
    _check_cln_size(C, T)
    block_c, bt, num_cb, num_warps, maxnreg = _cln_config(
        B,
        C,
        T,
        x.element_size(),
        _num_sms(x.device.type, x.device.index),
        CLN_FWD_TILE if forward else CLN_BWD_TILE,
        CLN_FWD_EPT if forward else CLN_BWD_EPT,
        CLN_EPT_UNALIGNED,
        CLN_FWD_MAXNREG if forward else CLN_BWD_MAXNREG,
        CLN_FWD_MAXNREG_UNALIGNED if forward else CLN_BWD_MAXNREG_UNALIGNED,
        CLN_MAX_BLOCK_C,
        CLN_LOOP_BLOCK_C,
        CLN_MIN_ROW_BYTES,
        CLN_MAX_BT,
        CLN_MIN_TILES_PER_SM,
    )
    ntb = triton.cdiv(T, bt)
    direct = ntb <= CLN_DIRECT_MAX_TILES
    tensors = 1 if forward else 2  # the forward reads x; the backward x and dy
    split = direct and tensors * x.numel() * x.element_size() >= CLN_SPLIT_MIN_BYTES
    tile_bytes = tensors * block_c * num_cb * bt * x.element_size()
    window = _clamp(CLN_L2_WINDOW_BYTES // tile_bytes, 1, B * ntb)
    return _ClnPlan(
        block_c,
        bt,
        num_cb,
        num_warps,
        maxnreg,
        ntb,
        B * ntb,
        direct,
        split,
        window,
        _direct_chunk(x, num_warps),
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
    plan = _cln_plan(x, forward=True)
    # Ticket counter + the tiles' words (direct: aggregate; look-back: aggregate and
    # inclusive); zeroed = "not published".
    scr = torch.zeros(
        _SCR_OFF + (1 if plan.direct else 2) * plan.nt, dtype=torch.int64, device=x.device
    )
    if state is not None:
        cnt, m0, M0 = state
    else:
        cnt = m0 = M0 = mean  # dummies, never read (HAS_STATE=False)
    _cln_fwd_kernel[plan.grid](
        x,
        y,
        gamma if gamma is not None else x,
        beta if beta is not None else x,
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
        plan.ntb,
        plan.window,
        float(eps),
        HAS_STATE=state is not None,
        HAS_GAMMA=gamma is not None,
        HAS_BETA=beta is not None,
        BLOCK_C=plan.block_c,
        BT=plan.bt,
        NUM_CB=plan.num_cb,
        LOOKBACK=CLN_FWD_LOOKBACK,
        PUBLISH_INC=not _TEST_NO_INCLUSIVE,
        SCR_OFF=_SCR_OFF,
        DIRECT=plan.direct,
        SPLIT=plan.split,
        CHUNK=plan.chunk,
        num_warps=plan.num_warps,
        maxnreg=plan.maxnreg,
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
    plan = _cln_plan(x, forward=False)
    scr = torch.zeros(
        _SCR_OFF + (3 if plan.direct else 6) * plan.nt, dtype=torch.int64, device=x.device
    )
    # Per-tile partials of dgamma/dbeta, indexed by tile (not ticket): the fixed-order sum
    # below is then deterministic.
    dgp = (
        torch.empty((plan.nt, C), dtype=torch.float32, device=x.device)
        if dgamma is not None
        else dx
    )
    dbp = (
        torch.empty((plan.nt, C), dtype=torch.float32, device=x.device) if dbeta is not None else dx
    )
    _cln_bwd_kernel[plan.grid](
        dy,
        x,
        gamma if gamma is not None else x,
        mean,
        rstd,
        count if count is not None else mean,
        dx,
        dgp,
        dbp,
        scr,
        B,
        C,
        T,
        plan.ntb,
        plan.window,
        HAS_COUNT=count is not None,
        HAS_GAMMA=gamma is not None,
        HAS_DG=dgamma is not None,
        HAS_DB=dbeta is not None,
        BLOCK_C=plan.block_c,
        BT=plan.bt,
        NUM_CB=plan.num_cb,
        LOOKBACK=CLN_BWD_LOOKBACK,
        PUBLISH_INC=not _TEST_NO_INCLUSIVE,
        SCR_OFF=_SCR_OFF,
        DIRECT=plan.direct,
        SPLIT=plan.split,
        CHUNK=plan.chunk,
        num_warps=plan.num_warps,
        maxnreg=plan.maxnreg,
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
    HAS_W: tl.constexpr,
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
    if HAS_W:
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
    BWD: tl.constexpr,
    HAS_W: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Looped row statistics for huge N.

    Forward (BWD=False): out = rstd = 1/sqrt(mean(x^2) + eps).
    Backward (BWD=True): out = c = mean(g * xhat) = rstd * sum(dy * w * x) / N.
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
        if BWD:
            dy = tl.load(dy_ptr + rows64[:, None] * N + cols[None, :], mask=mask, other=0.0)
            g = dy.to(tl.float32)
            if HAS_W:
                w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
                g = g * w[None, :]
            acc += g * x
        else:
            acc += x * x
    s = tl.sum(acc, axis=1)
    if BWD:
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
    HAS_W: tl.constexpr,
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
    if HAS_W:
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
    HAS_W: tl.constexpr,
    HAS_DW: tl.constexpr,
    HAS_C: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    """Program (p, q): rows [p*rows_per_prog, ...) x column block q.

    dx = rstd * (g - xhat * c) with c = mean(g * xhat) computed here from the whole row
    (HAS_C=False, one column block) or precomputed by ``_rms_rowdot_kernel`` (HAS_C=True).
    The dw partial of the program stays in registers and is written once to row p of the
    (programs, N) partials.
    """
    pid = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    row_start = pid * rows_per_prog
    row_end = tl.minimum(row_start + rows_per_prog, M)
    if HAS_W:
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
        if HAS_W:
            g = dy * w[None, :]
        else:
            g = dy
        xhat = x * r[:, None]
        if HAS_C:
            c = tl.load(c_ptr + rows, mask=rmask, other=0.0)
        else:
            c = tl.sum(g * xhat, axis=1) / N
        dx = r[:, None] * (g - xhat * c[:, None])
        dx_ptrs = dx_ptr + rows64[:, None] * N + cols[None, :]
        tl.store(dx_ptrs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        if HAS_DW:
            acc += dy * xhat
    if HAS_DW:
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
    w = weight if weight is not None else x
    if not looped:
        _rms_fwd_kernel[(triton.cdiv(M, rows),)](
            x,
            w,
            y,
            rstd,
            M,
            N,
            x.stride(0),
            float(eps),
            HAS_W=weight is not None,
            ROWS=rows,
            BLOCK_N=block_n,
            num_warps=num_warps,
        )
        return
    _rms_rowdot_kernel[(M,)](
        x,
        x,
        w,
        rstd,
        rstd,
        M,
        N,
        x.stride(0),
        float(eps),
        BWD=False,
        HAS_W=False,
        ROWS=1,
        BLOCK_N=block_n,
        num_warps=num_warps,
    )
    _rms_scale_kernel[(M, triton.cdiv(N, block_n))](
        x,
        w,
        rstd,
        y,
        M,
        N,
        x.stride(0),
        HAS_W=weight is not None,
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
    w = weight if weight is not None else x
    dwp = torch.empty((progs, N), dtype=torch.float32, device=x.device) if dw is not None else dx
    if looped:
        c = torch.empty(M, dtype=torch.float32, device=x.device)
        _rms_rowdot_kernel[(M,)](
            x,
            dy,
            w,
            rstd,
            c,
            M,
            N,
            x.stride(0),
            0.0,
            BWD=True,
            HAS_W=weight is not None,
            ROWS=1,
            BLOCK_N=block_n,
            num_warps=num_warps,
        )
    else:
        c = rstd  # dummy, never read (HAS_C=False)
    _rms_bwd_kernel[(progs, triton.cdiv(N, block_n))](
        dy,
        x,
        w,
        rstd,
        c,
        dx,
        dwp,
        M,
        N,
        x.stride(0),
        rows_per_prog,
        HAS_W=weight is not None,
        HAS_DW=dw is not None,
        HAS_C=looped,
        ROWS=rows,
        BLOCK_N=block_n,
        NUM_STAGES=RMS_BWD_STAGES,
        num_warps=num_warps,
    )
    if dw is not None:
        torch.sum(dwp, dim=0, out=dw)
