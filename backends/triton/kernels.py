"""Triton kernels for cLN and RMSNorm (the raw-kernel contract of ``common.kernel_api``).

cLN forward: one pass over ``x``, tile prefixes from published aggregates
-------------------------------------------------------------------------
Each program owns one tile ``x[b, :, t0:t0+BT]`` (all channels, ``BT`` frames) and keeps it
in registers.  It computes the per-frame mean and M2 exactly (two passes over registers),
scans them over the frames with the Chan combine (``tl.associative_scan``), publishes the tile
aggregate, gets the exclusive prefix of the earlier tiles of the same sequence (below), and
then writes ``y``/``mean``/``rstd`` from the registers.
``x`` is read once and ``y`` written once, which is what the bandwidth target requires.
16-bit tiles stay in registers as int32 words of two frames, unpacked at each use
(``CLN_FWD_PAIRS``): these kernels are bound by the tile bytes resident per SM, and a float32
copy of a bf16 tile holds half the bytes per register.

Why the tile id comes from a ticket (an atomic counter) rather than ``program_id``: a program
only ever waits on tiles with a smaller ticket, and a ticket is taken only by a program that
is already running, so every tile it waits on is resident and will finish (no deadlock however
the hardware schedules the grid).

Exclusive prefixes: a fixed-order reduction over published aggregates, in two levels
    * every tile publishes its aggregate word as soon as its statistics are known, with no
      dependency on any other tile;
    * the tile closing a group of ``G`` tiles (``i % G == G-1``) also waits for the other
      G-1 aggregates of its group (earlier tickets), reduces them in a fixed tree and publishes
      the group's word;
    * tile i's exclusive prefix = the stream state, then the words of the groups before its
      own (read ``CHUNK`` at a time at absolute positions, each chunk reduced by ``tl.reduce``,
      chunks folded left to right), then the aggregates of the tiles of its own group before
      it (one vector of G words); where G == CHUNK the last chunk and that vector are one
      vector of 2 G words, waited for and reduced at once (``CLN_FWD_PREFIX_MERGED``).
The order depends on i alone, so the output is bitwise deterministic run to run and bitwise
causal, whatever the timing; a tile reads at most G + NTB/G words (one round of each up to
G * CHUNK tiles per sequence), and nothing waits in a chain.

Measured on the H200 (bench/results/NOTES.md): a one-level reduction over all earlier
aggregates cost 0.14 of copy bandwidth at (2, 128, 64000) fp32 (1000 tiles: 4 sequential
rounds), and the decoupled look-back it replaced was slower still (its walk is serial L2
latency) and not deterministic.  Two variants were measured and dropped: split STATS/NORMALIZE
programs re-reading the tile from L2 (0.48-0.60 against 0.60-0.68: most re-reads missed L2),
and larger tiles with longer row segments (the load-store skeleton gains, the reductions lose);
and persistent programs (a cooperative grid of the programs that fit, each looping over its tiles
with ``tl.range(num_stages=...)`` prefetching the next tiles into shared memory, the next tile's
aggregate published before the current tile's wait): forward 0.45-0.49 fp32 / 0.23-0.33 bf16
for the best of eight variants per case, against 0.62-0.65 / 0.41-0.46 by ticket, the backward
slower too.  A tile loop that Triton
pipelines holds two tiles plus the prefetch addresses in registers (188-255 per thread at 32
elements per tensor), so only one or two programs of 4-16 warps fit on an SM, and every warp
runs every phase in turn; the ticket kernel keeps 4 independent programs per SM (NOTES 14.1).

Why self-validating 64-bit words instead of "flag + payload": Triton has no acquire load, and a
payload written by one thread of another program could be seen before its flag.  So every
published word carries its own "ready" bit and is written once (0 -> final value) by a scalar
64-bit atomic exchange; readers re-load a whole vector of words until every needed word is
ready (the loop condition is a full reduction, uniform over the threads, so the barriers
inside are safe).  Forward words pack (mean, M2) with the sign bit of M2 (always >= 0) as the
ready bit (counts are implied by the tile geometry); backward words pack one float, bit 0 =
ready.

cLN backward: the same machinery as a suffix scan (tickets from the last tile backwards)
------------------------------------------------------------------------------------------
Per frame: ``g = dy*gamma``, ``xhat = (x-mu)*r``, ``G1 = sum_c g``, ``G2 = sum_c g*xhat``,
``a = r*G1/n``, ``b = r^2*G2/n``; with ``K = mean[b, 0]``:
``dx = r*g - S_a - (x-K)*S_b + P`` where ``S_a, S_b, P`` are suffix sums of ``a, b, b*(mu-K)``
(exactly ``common.eager.cln_backward``).  ``x`` and ``dy`` are read once.  dgamma/dbeta are
per-tile partials in one float32 scratch, summed by ``colsum`` in a fixed order
(deterministic).
Groups are counted in processing order (j = NTB-1-i).

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
import operator
from collections.abc import Callable
from typing import NamedTuple

import torch
import triton
import triton.language as tl
from torch import Tensor

from backends.triton.launch import Bound, Kernel
from common.kernel_api import ClnStateTuple

# --------------------------------------------------------------------------------------------
# Tunables (read at call time; part of every config cache key).  The defaults come from
# compiling for sm_90 offline and reading registers/spills (ptxas): with the tile held in
# registers, bytes in flight per SM = resident CTAs x tile bytes, so registers decide speed.
# --------------------------------------------------------------------------------------------
#: Target elements of one cLN tile (BLOCK_C * BT).  8192 fp32 = 32 KiB.
CLN_FWD_TILE = 8192
CLN_BWD_TILE = 8192
#: The forward's tile for 2-byte inputs (None: ``CLN_FWD_TILE``).  16384 (rows of 128 B at
#: C = 256, 256 B at C = 128) lost at both shapes it changes, over 4 warps or over 2 at 256
#: values per thread: bf16 forward 25.2-25.3 -> 28.5-30.3 us at (4, 256, 16000), 24.6-24.9 ->
#: 32.0-34.7 at (2, 128, 64000); the loads and stores alone 0.75 -> 0.75-0.77 and 0.86 ->
#: 0.72-0.74 of copy, the per-frame statistics 1-7 us dearer (H200, two rounds,
#: bench/results/nvidia-h200-s50{,b}-*.log, NOTES 51.1).
CLN_FWD_TILE_16BIT: int | None = None
#: Fewest warps per cLN program (the tile's elements / (32 x elements per thread) is rounded
#: up to it).  A program of one warp reduces each frame over its channels within the warp
#: (shuffles only); from two warps up, those sums cross warps through shared memory and a
#: barrier.  One warp needs a tile of 32 x elements per thread, half the default's at the
#: target shapes, and lost wherever it applied (H200, two rounds in one call, us, default ->
#: one warp): bf16 forward (2, 128, 64000), 4096-value tiles, 29.0-29.1 -> 33.7-34.5 (the same
#: tile over 2 warps: 36.2); with 32-byte rows (4, 256, 16000) 28.7-28.8 -> 31.7 (2 warps:
#: 37.9-38.0); fp32 forward (2, 128, 64000), 2048 values, 42.1 -> 61.7; the bf16 backward
#: there fwd+bwd 85.0-85.2 -> 110.0-119.2, fp32 109.6-109.9 -> 137.5-145.9
#: (bench/results/nvidia-h200-s32-tune-warps32-{1,2}.log, NOTES 33).
CLN_FWD_MIN_WARPS = 2
CLN_BWD_MIN_WARPS = 2
#: The 16-bit backward's tile where its channel rows are still at least
#: ``CLN_BWD_TILE_16BIT_MIN_ROW_BYTES`` long (None: ``CLN_BWD_TILE`` everywhere).  At the
#: defaults, C <= 128: bf16 (2, 128, 64000) 32 frames over 2 warps instead of 64 over 4, fwd+bwd
#: 98.8 / 98.9 -> 95.6 / 96.1 us (0.39 -> 0.40 of copy bandwidth), two rounds in one call; at
#: C = 256 (rows of 32 B) it lost, 92.8-93.2 -> 103.2-103.3 us at (4, 256, 16000)
#: (bench/results/nvidia-h200-s20c-tune-bwd16-tile-*.log).
CLN_BWD_TILE_16BIT: int | None = 4096
CLN_BWD_TILE_16BIT_MIN_ROW_BYTES = 64
#: The same for 4-byte inputs, where the rows stay ``CLN_BWD_TILE_32BIT_MIN_ROW_BYTES`` long
#: (at the defaults C <= 128: 32 frames of 128 B instead of 64).  fp32 (2, 128, 64000), fwd+bwd
#: 112.1-112.7 -> 109.9-110.1 us (0.68-0.69 -> 0.70 of copy bandwidth), two rounds in one call;
#: at C = 256 and 512 the tile is unchanged (the rows' 128 B minimum keeps 32 frames)
#: (bench/results/nvidia-h200-s28-tune-affine28-{1,2}.log, "bwd tile4096").
CLN_BWD_TILE_32BIT: int | None = 4096
CLN_BWD_TILE_32BIT_MIN_ROW_BYTES = 128
#: Tile elements per thread (per tensor) -> num_warps.  Forward 64 with maxnreg 128: 4 CTAs of
#: 4 warps per SM (128 KiB of fp32 tiles) at C = 128..256, with 2 B spilled (the loaded
#: kernels' own count on the H200, ptxas 12.8 and 13.0 alike: NOTES 22).  When T % 16 != 0
#: the loads cannot be vectorized and every element carries its own 64-bit address, so fewer
#: elements per thread (the *_UNALIGNED values) are used.
CLN_FWD_EPT = 64
#: 16-bit inputs: 128 elements per thread, no register cap (fwd 0.38 -> 0.42 of copy bandwidth
#: at (2, 128, 64000) bf16, 0.45 -> 0.46 at (16, 512, 4000); fp32 gained nothing).
CLN_FWD_EPT_16BIT = 128
CLN_FWD_MAXNREG_16BIT: int | None = None
#: 16-bit tiles held as int32 words of two frames (``PAIRS``; T % 16 == 0, one channel block)
#: and unpacked at each use by inline PTX that the compiler cannot merge, so that no float32
#: copy of the tile stays live across the prefix wait: the forward's program of 2 warps (128
#: values per thread) then needs 168 registers without spills (ptxas, sm_90) instead of 208,
#: 6 programs per SM instead of 4.  H200, bf16 forward, fraction of copy bandwidth: 0.46 ->
#: 0.53 at (16, 512, 4000), 0.42 -> 0.45 at (4, 256, 16000), 0.42 -> 0.44 at (2, 128, 64000);
#: uncapped (ptxas takes 255) 0.41-0.46 (bench/results/nvidia-h200-s13-tune-pairs.log).
#: Below 168 (more programs per SM, ptxas spilling a few words), forward, H200, two rounds in
#: one call, us, 168 -> 144 / 128 / 112: 48.7-48.8 -> 48.1 / 51.2 / 58.5-58.6 at
#: (16, 512, 4000), 28.7-28.9 -> 29.3-29.4 / 29.4-29.5 / 32.5-32.7 at (4, 256, 16000),
#: 28.9 -> 31.2-31.3 / 32.7-32.8 / 35.3-35.5 at (2, 128, 64000): more resident tiles do not
#: shorten the long-T forward (bench/results/nvidia-h200-s33b-tune-fwd16caps33-{1,2}.log).
CLN_FWD_PAIRS = True
CLN_FWD_MAXNREG_PAIRS: int | None = 168
#: Backward (x and dy per thread): 64 elements each with no register cap (1-2 CTAs per SM)
#: against 32 capped at 128 registers (spilling 60-250 B): fwd+bwd 0.45 -> 0.51 of copy
#: bandwidth at (2, 128, 64000) fp32, 0.25 -> 0.30 bf16 (H200, bench/tune.py "ept128").
CLN_BWD_EPT = 64
#: The backward's elements per thread for 16-bit inputs (None: ``CLN_BWD_EPT``).  32 (8 warps
#: per tile) lost at every bf16 target shape: capped at 128 registers (no spills, 16 warps per
#: SM) fwd+bwd 190.3 -> 195.7 us at (16, 512, 4000), 101.9 -> 120.8 at (2, 128, 64000); at
#: 80 (412 B spilled, 24 warps) 331.4 / 144.1 us (H200,
#: bench/results/nvidia-h200-s17-tune-bf16.log).
CLN_BWD_EPT_16BIT: int | None = None
CLN_EPT_UNALIGNED = 16
#: ``maxnreg`` for vectorized (T % 16 == 0) cLN launches; None lets ptxas choose.  ptxas
#: otherwise takes ~145 registers for the forward tile above (3 CTAs/SM instead of 4) although
#: 128 fit with 2 B spilled.  Lower caps (5 / 6 programs per SM, 52-56 / 76-84 B spilled) lost
#: at both long-T shapes: 42.2-42.3 -> 54.5-54.7 / 69.7 us at (2, 128, 64000), 40.3-40.9 ->
#: 55.0-55.1 / 69.4 at (4, 256, 16000) (H200, 96 / 80, two rounds in one call,
#: bench/results/nvidia-h200-s33b-tune-fwd32caps33-{1,2}.log).
CLN_FWD_MAXNREG: int | None = 128
#: The fp32 backward uncapped (253 registers for 256 x 32 over 4 warps: 2 programs per SM).
#: Capped at 168 (3 programs, 472 B spilled) / 128 (4, 680 B), fwd+bwd, H200, two rounds:
#: 203.3 -> 253.6-254.0 / 361.9-362.0 us at (16, 512, 4000), 109.6-109.9 -> 141.5-141.6 /
#: 183.6 at (4, 256, 16000), 113.0-113.4 -> 139.1-139.4 / 171.4-171.6 at (2, 128, 64000)
#: (bench/results/nvidia-h200-s25g-tune-bwd25g-{1,2}.log).  Since the 2-warp tiles at C <= 128
#: (``CLN_BWD_TILE_32BIT``): 204 (5 programs of 2 warps instead of 4 there, 52 B spilled) lost
#: 8.6-9.7 us at (2, 128, 64000), 14-22 us at C = 256 and 512
#: (bench/results/nvidia-h200-s32b-tune-caps32-{1,2}.log).
CLN_BWD_MAXNREG: int | None = None
#: The backward's x and dy as packed words (see ``CLN_FWD_PAIRS``): 184 registers without
#: spills (2 programs of 4 warps per SM, as the float32 tiles' 254), or 168 with 80 B spilled
#: (3 programs).  bf16 fwd+bwd with the packed forward, no pairs / 168 / 184: 0.35 / 0.34 /
#: 0.36 at (16, 512, 4000), 0.29 / 0.30 / 0.29 at (4, 256, 16000), 0.28 / 0.31 / 0.29 at
#: (2, 128, 64000) (same log).  Session 32 (two rounds in one call, fwd+bwd, bf16): 144 (8 B
#: spilled; 7 programs of 2 warps at C = 128 instead of 6) lost 2.6-6.4 us at the three target
#: shapes; 128 (28 B; 8 programs, and 4 of 4 warps instead of 3 at C = 256 and 512) gained
#: 1.2-1.3 us at (4, 256, 16000) and lost 3.8-4.2 / 9.4-9.8 us at (2, 128, 64000) /
#: (16, 512, 4000) (bench/results/nvidia-h200-s32b-tune-caps32-{1,2}.log).
CLN_BWD_PAIRS = True
CLN_BWD_MAXNREG_PAIRS: int | None = 168
#: Unaligned T (no vector loads): the forward at 64 registers spills 24-56 B but doubles the
#: resident CTAs, which puts the (80, 64, 301) seed (400 tiles) in a single wave.
CLN_FWD_MAXNREG_UNALIGNED: int | None = 64
CLN_BWD_MAXNREG_UNALIGNED: int | None = None
#: Largest next_pow2(C) kept in registers; above it the tile is processed in channel blocks of
#: ``CLN_LOOP_BLOCK_C`` and re-read (from L2) in a second pass.
CLN_MAX_BLOCK_C = 4096
CLN_LOOP_BLOCK_C = 1024
#: The backward's own ``CLN_MAX_BLOCK_C`` (None: the same).  Below C it holds no tile across
#: the suffix wait (the channel blocks are re-read for dx) and takes more frames per tile.
#: Slower wherever it changed the kernel: caps of 256 / 128 / 64 at the six target cases
#: (H200, fwd+bwd) cost up to 10.6 / 35.4 / 38.2 us, e.g. (16, 512, 4000) fp32 231.7 ->
#: 242.3 / 267.1 / 269.9 us (bench/results/nvidia-h200-s20b-tune-bwd-loop.log).
CLN_BWD_MAX_BLOCK_C: int | None = None
#: Frames per tile are at least this many bytes per channel row: a row segment of a tile is a
#: contiguous run in memory, and runs shorter than 64 B waste DRAM bursts.  (128 and 256 made
#: the load-store skeleton faster, 0.71 -> 0.79 at (16, 512, 4000) fp32, but the whole kernel
#: no faster or slower: the per-frame reductions then span 8-16 warps.)
CLN_MIN_ROW_BYTES = 64
#: The forward's 4-byte tiles whose rows would be shorter than ``CLN_FWD_WIDE_ROW_BYTES``
#: (T % 16 == 0, one channel block): rows of that length instead, when the tile then stays
#: within ``CLN_FWD_WIDE_TILE`` values (C = 257..512 at the defaults: 32 frames instead of 16),
#: over the same warps (``CLN_FWD_WIDE_EPT`` values per thread, ``CLN_FWD_WIDE_MAXNREG``;
#: ptxas, sm_90: 252 registers without spills, 2 programs per SM instead of 4 with the same
#: bytes in flight).  The per-frame reductions stay over 4 warps, which is what lost when the
#: rows grew by more warps (NOTES 6.2).  H200, (16, 512, 4000) fp32 forward, two rounds in one
#: call: 93.6 / 93.8 -> 89.2 / 88.4 us (0.66 -> 0.69 / 0.70 of copy bandwidth); the same
#: knobs at C = 128 and 256, where the rows are 128 B already, lost 1.2-4.3 us, hence the rule
#: (bench/results/nvidia-h200-s18b-tune-rows128-*.log).  0: off.  The same rule for the packed
#: 16-bit forward lost at every shape it changed (two rounds, bf16): 128 B rows at C = 256
#: (4 warps, 168 registers, no spills) 34.0 -> 36.1-36.3 us at (4, 256, 16000); 256 B at
#: C = 128 34.3 -> 41.2-41.3 us at (2, 128, 64000); 512 x 64 over 8 warps at C = 512
#: 59.7 -> 78.9 us (bench/results/nvidia-h200-s19-tune-fwd16-rows.log, code at de25671).
#: Rows of 256 B at C = 256 (64 frames, 16384-value tiles; the loads and stores alone reach 0.82
#: of copy there against 0.87 at C = 128, whose rows are 256 B) lost on the current code too:
#: H200, three rounds in one call, forward us, 128 -> 256 B over 4 warps uncapped (250-254
#: registers, no spills) / 8 warps at 128 (2-4 B spilled): 38.4-38.6 -> 43.2-46.7 / 48.0-49.6
#: at (4, 256, 16000), fwd+bwd 104.5-105.1 -> 110.9-111.6 / 116.0-116.1
#: (bench/results/nvidia-h200-s49d-tune-wide49-{1,2,3}.log, NOTES 50.4).
CLN_FWD_WIDE_ROW_BYTES = 128
CLN_FWD_WIDE_TILE = 16384
CLN_FWD_WIDE_EPT = 128
CLN_FWD_WIDE_MAXNREG: int | None = None
#: The backward's own minimum (None: ``CLN_MIN_ROW_BYTES``), for 4-byte and 2-byte inputs.
#: Both change only C = 512 among the target shapes.  fp32 128 B: 32 frames, one program of 8
#: warps per SM instead of two of 4, fwd+bwd 252.7 -> 237.1 us at (16, 512, 4000); 16-bit
#: 32 B: 16 frames, three programs of 4 warps per SM instead of one of 8, bf16 207.3 -> 188.6
#: us (H200, bench/results/nvidia-h200-s16c-tune-minrow-1.log).
CLN_BWD_MIN_ROW_BYTES: int | None = 128
CLN_BWD_MIN_ROW_BYTES_16BIT: int | None = 32
CLN_MAX_BT = 1024
#: Small problems: halve BT (down to the minimum above) until there are at least this many
#: tiles per SM, so that a latency-bound launch (e.g. the (80, 64, 301) seed) fills the GPU.
CLN_MIN_TILES_PER_SM = 2
#: Prefix words per group (G) and per vector round (CHUNK) of the two-level prefix.  At least
#: 32 * num_warps on the GPU (one word per thread: no replication across warps); 128 keeps the
#: forward free of spills at maxnreg 128 (the vector is live next to the tile).
CLN_GROUP = 128
CLN_CHUNK = 128
#: The forward's prefix in one wait and one fold where a sequence has several groups: the last
#: round of group words and the own group's tile words as one vector of 2 G words (one load,
#: one readiness reduction, one tree) instead of a wait and a fold for each (where G == CHUNK).
#: The sums are grouped differently, so the bits differ from the two folds' (still fixed by the
#: tile index alone: deterministic and causal).  Why: one more wait and fold on the prefix path
#: (session 38's direct groups, dropped) cost 0.3-1.1 us in the forward even where its words
#: were all masked off, so each step on that path is expensive.  H200, bench.tune, two rounds
#: in one call, forward us, off -> on: fp32 (2, 128, 64000) 41.8-42.0 -> 40.8-41.0,
#: (4, 256, 16000) 40.6-40.7 -> 40.3; bf16 26.5 -> 25.4-25.5 and 27.0 -> 26.7; fwd+bwd fp32
#: (2, 128, 64000) 110.4 -> 108.6-108.7; (16, 512, 4000), one group per sequence, unchanged
#: (bench/results/nvidia-h200-s38b-tune-merged38-{1,2}.log).  The backward's suffix the same
#: way lost (fwd+bwd +0.4-3.1 us at four target cases, equal at (2, 128, 64000) fp32) and was
#: removed (code at d1d0f23; NOTES 39).  False: the two folds.
CLN_FWD_PREFIX_MERGED = True
#: The backward's suffix words loaded together and waited for at once (the own group's tile
#: words issued before the group words' wait, the three kinds a, b, p in one load each
#: round): one L2 round trip per tile where the words are ready, instead of six one after
#: another.  fwd+bwd +0.01-0.02 of copy bandwidth at all six target cases, twice in one call
#: (H200, bench/results/nvidia-h200-s13b-ab-overlap-*.log).  False: the sequential order.
CLN_PREFIX_OVERLAP = True
#: The backward's independent sums and scans over one axis as one tuple ``tl.reduce`` /
#: ``tl.associative_scan`` each (its three tile sums, its three suffix scans, the folds of its
#: three kinds of words): one cross-warp exchange and its barriers instead of three (SASS,
#: bf16 packed target tile: 76 -> 54 barriers, registers and spills unchanged).  The
#: per-operand order of the additions is the same.  H200, two rounds in one call, fwd+bwd:
#: 0.3-2.8 us faster at all six target cases in both rounds but one (fp32 (4, 256, 16000):
#: 144.1 / 143.1 against 143.8 / 144.0 us), e.g. (2, 128, 64000) bf16 119.7-119.8 ->
#: 118.1-118.2 us (bench/results/nvidia-h200-s14c-ab-fused-*.log).  False: three each.
CLN_FUSED_SUMS = True
#: Where the backward forms and stores a tile's dgamma / dbeta partials (one channel block):
#: 0 before the tile publishes its sums (up to session 16), 1 after, 2 also after the tile
#: closes its group, right before it waits for the later tiles' words.  Before the publication
#: they lengthen the look-back's chain (each tile's publication is what the next one waits
#: for).  H200, fwd+bwd, 0 -> 2, two rounds in one call: bf16 187.8-188.9 -> 173.1-173.6 us
#: at (16, 512, 4000), 104.5-104.6 -> 94.5-94.6 at (4, 256, 16000), 101.6-102.6 -> 100.6-100.7
#: at (2, 128, 64000); fp32 even (within 0.4 us) or up to 2.8 us faster; 1 mostly between
#: (bench/results/nvidia-h200-s17c-tune-late-*.log).
#: The packed 16-bit backward also stops spilling (76-80 B at C = 128-256; ptxas, sm_90).
CLN_BWD_LATE_PARTIALS = 2
#: Tickets in runs of this many consecutive tiles of one sequence (1: batch-interleaved).
#: Neighbouring tiles continue each other's row segments in memory, so runs help DRAM: the
#: load-store skeleton of (16, 512, 4000) fp32 went 0.72 -> 0.83 of copy bandwidth in pure time
#: order, but the kernel did not (each tile then waits on the tile just started before it).
CLN_TICKET_RUN = 1
#: Sequences in flight at once (None: all B, batch-interleaved): with tickets one tile per run,
#: the sequences go in groups of this many, each group's tiles interleaved over its sequences,
#: group after group (``_ticket``).  Why: the forward's loads and stores alone (ablation level 3)
#: went 0.73 -> 0.85 of copy at (16, 512, 4000) bf16 and 0.83 -> 0.91 fp32 with one sequence
#: after another instead of all 16 interleaved, and runs of 2-16 tiles (all sequences still in
#: flight) did not move them (bench/results/nvidia-h200-s50{c,e}-*.log, NOTES 51.2, 51.4).
#: The order changes no result: every sum's order is fixed by the tile index alone.
CLN_FWD_SEQ_GROUP: int | None = None
CLN_BWD_SEQ_GROUP: int | None = None
#: ``CLN_FWD_SEQ_GROUP`` of the paced forward (``_pace_ps``: float32, no backward to follow,
#: tiles by program id) where that knob is None.  H200, one round, forward us, all interleaved
#: -> groups of 2 / 4 / 8: fp32 74.6 -> 70.5 / 71.6 / 73.3 at (16, 512, 4000) (0.82 -> 0.87 of
#: copy), 38.4 -> 38.5 / 38.4 / 38.4 at (4, 256, 16000).  Not elsewhere: the forward with
#: statistics ("fwd seqg4", fwd+bwd 200.2 -> 199.6 us), the bf16 forward (44.6 -> 46.0 / 44.5 /
#: 44.7) and the backward (fwd+bwd fp32 200.2 -> 215.9 / 213.9 / 212.7) gained nothing or lost:
#: there each tile's wait grows with the tiles of its sequence in flight
#: (bench/results/nvidia-h200-s50f-tune-seqg50-1.log).  Two more rounds on the final code, all
#: interleaved -> 2 / 1 / 3: 74.6-74.7 -> 70.7 / 72.6-72.8 / 71.3-71.5 us at (16, 512, 4000),
#: 38.5-38.7 -> 38.5 / 39.9 / 38.7-38.8 at (4, 256, 16000)
#: (bench/results/nvidia-h200-s50g-tune-paced50-{1,2}.log, NOTES 51.5).
CLN_FWD_PACED_SEQ_GROUP: int | None = 2
#: Tickets from an atomic counter (each program's first act, and its loads wait for it) or, False,
#: the program id, as CUB's single-pass scan takes its tile ("blocks are launched in increasing
#: order, so just assign one tile per block": cub/agent/agent_scan.cuh, ConsumeRange): the
#: look-back's forward progress then rests on the hardware dispatching blocks in that order.
#: Why: the counter's round trip is 1.1-1.5 us of a forward tile's 9.4-10.7 us life and 1.0-1.3
#: us of a backward tile's 7.9-9.3 (medians; 1.6-3.4 us at the load-store level), all of it
#: before the tile's loads are issued (H200, bench/timeline_cln.py,
#: nvidia-h200-s22b-timeline-cln.log, nvidia-h200-s23c-timeline-cln-bwd.log); by program id it
#: is 0.10-0.19 us.  H200, two rounds in one call, us, counter -> program id: forward fp32
#: 84.9 / 88.7 -> 78.6 / 78.5 at (16, 512, 4000), 45.4 / 45.7 -> 42.4 / 42.5 at (4, 256, 16000),
#: 46.0 / 46.1 -> 43.8 / 43.8 at (2, 128, 64000); bf16 55.0 / 55.6 -> 50.0 / 49.8, 32.2 / 32.2 ->
#: 30.3 / 30.3, 34.1 / 34.2 -> 30.3 / 30.3; fwd+bwd fp32 229.3 / 228.7 -> 210.4 / 209.8,
#: 123.0 / 122.6 -> 121.7 / 121.1, 123.6 / 123.7 -> 115.8 / 115.8; bf16 169.9 / 168.6 ->
#: 158.2 / 158.1, 92.8 / 92.5 -> 89.0 / 89.3, 96.0 / 95.9 -> 86.9 / 87.1
#: (nvidia-h200-s23d-tune-tickets-{1,2}.log).
CLN_TICKET_ATOMIC = False
#: ...but by program id only in grids of at least this many tiles per SM (the atomic counter
#: below).  At the (80, 64, 301) seed (400 forward tiles, 3 per SM: one wave) the program id
#: was the slower: forward 11.1 us with the counter, 15.2 us by program id, fwd+bwd 34.6 ->
#: 39.6 us (H200, bench/results/nvidia-h200-s23-final-cln-peers.md against -s23e-final-; two
#: runs).  The target shapes have 15-30 tiles per SM; between 3 and 15 it was not measured.
CLN_PID_MIN_TILES_PER_SM = 8
#: The first wave of a cLN launch (the W programs resident at once, from the compiled kernel's
#: registers: ``_note_first_wave``) spread over this many ns: the program with ticket k < W
#: waits until k * ns / W after its start before it loads its tile.  0: off.  Why: launched
#: together, the first wave queues all its loads at once (bf16 (4, 256, 16000): 792 tiles,
#: 12.7 MB); each then takes 4-5 us, nothing is written for the first 8 us, and the tiles
#: finish in bursts from then on (H200, per-tile %globaltimer stamps, bench/timeline_cln.py,
#: nvidia-h200-s22b-timeline-cln.log).  Forward, H200, two rounds in one call, us, off -> 3000:
#: fp32 90.1 / 89.9 -> 84.6 / 84.5 at (16, 512, 4000), 49.2 / 49.0 -> 45.4 / 46.0 at
#: (4, 256, 16000), 48.7 / 48.8 -> 46.6 / 46.6 at (2, 128, 64000); bf16 58.6 / 59.3 -> 54.8 /
#: 55.6, 34.0 / 34.0 -> 32.2 / 32.4, 34.7 / 34.6 -> 34.4 / 34.4; 1000 and 2000 gained less
#: (nvidia-h200-s22d-tune-stagger-{1,2}.log).  With tiles by program id (above) 2000-5000 ns
#: stayed within 0.6 us of 3000 at five of the six forward cases, 5000 gaining 1.2 us at
#: (2, 128, 64000) fp32 (nvidia-h200-s24-tune-fwd-{1,2}.log): kept.
#: The backward: with the atomic counter, 2000 and 4000 ns cost its (16, 512, 4000) fp32 case
#: 8-10 us (nvidia-h200-s22d-tune-stagger-*); by program id 4000 ns gained at all six fwd+bwd
#: cases, us, two rounds each in two calls, 0 -> 4000: fp32 210.0 / 209.8 -> 206.8 / 207.2 at
#: (16, 512, 4000), 121.5 / 122.0 -> 110.8 / 111.9 at (4, 256, 16000), 115.4 / 115.6 -> 113.7
#: / 114.0 at (2, 128, 64000); bf16 158.2 -> 155.9-156.2, 88.9 / 89.0 -> 86.4 / 86.7, 87.1 /
#: 87.2 -> 86.3 / 86.9.  2000 lost 2.7 us at (2, 128, 64000) fp32; 6000 gained 0.3-0.4 us more
#: at three cases and lost 3.5 us there; 8000 and 12000 lost more
#: (nvidia-h200-s24-tune-bwd-{1,2}.log, nvidia-h200-s24b-tune-bwd-{1,2}.log).
CLN_FWD_STAGGER_NS = 3000
CLN_BWD_STAGGER_NS = 4000
#: Only grids of at least this many first waves are staggered or paced (a grid of one wave has no
#: convoy to break, and the spread would delay all of it: the (80, 64, 301) seed's 400 tiles
#: are one wave on the H200).
CLN_STAGGER_MIN_WAVES = 2
#: Pace every forward program's loads to this many GB/s (read + write bytes of its tile),
#: counted from one start time common to the launch: the zero kernel stores its %globaltimer
#: once the launch before it has finished, and program k waits, after its own wait for the zero
#: kernel, until that time + k x (tile bytes / rate).  0: off (the first-wave stagger above).
#: Only with tiles by program id behind a zero kernel that lets the forward launch early
#: (``CLN_PDL_EARLY``).  Why it was tried: at the long-T shapes a tile waits 2.2-3.4 us of its
#: 8.6-9.5 us life for the slowest load among its predecessors in flight, and the loads arrive
#: in bursts (H200, bench/timeline_cln.py, bench/results/nvidia-h200-s31-timeline-cln.log).
#: Measured, two rounds in one call, us, stagger (default) -> 6000 / 4000 GB/s: forward fp32
#: 42.1-42.2 -> 40.7 / 41.6-41.8 at (2, 128, 64000), 40.6-40.9 -> 40.0-40.2 / 40.9 at
#: (4, 256, 16000), even at (16, 512, 4000); bf16 48.7 -> 50.0 / 49.3 at (16, 512, 4000),
#: -0.5 to +0.2 us at the long-T shapes.  fwd+bwd: fp32 -0.6 to +0.5 us at 6000 and up to 2.5
#: us slower at 4000, bf16 0.4-2.0 us slower at both; 3500 lost everywhere.  So a pace acts as
#: a longer first-wave spread (as 4-6 us of stagger did, NOTES 32.1), not on the wait
#: (nvidia-h200-s31c-tune-pace31-{1,2}.log).  Off for every dtype; see the next knob.
CLN_FWD_PACE_GBPS = 0.0
#: The pace of 4-byte inputs where ``CLN_FWD_PACE_GBPS`` is 0 (0 or None: none, the stagger).
#: Measured again on the merged prefix and the per-thread polls (NOTES 43), float32, bench.tune,
#: us, stagger 3 us -> pace 5000 / 6000 / 7000 GB/s.  A first call, two rounds: forward
#: 40.1 / 40.1 -> 38.9-39.0 / 38.7 / 39.2-39.4 at (2, 128, 64000), 40.0 / 40.2 -> 39.1-39.4 /
#: 39.0-39.3 / 39.5-40.1 at (4, 256, 16000), 75.7 / 75.8 -> 75.0-75.4 / 75.5 / 76.2 at
#: (16, 512, 4000); fwd+bwd 107.5 / 108.0 -> 108.6-108.8 / 108.2 / 107.6-108.4, 107.2 / 107.5 ->
#: 108.6-108.8 / 107.8-108.1 / 107.7-108.0, 203.6 / 203.7 -> 203.9-204.3 / 203.4-203.6 /
#: 203.4-203.5 (nvidia-h200-s42b-tune-pace42-{1,2}.log; a 5-us stagger alike).  A second call
#: with 6000 as the default, two rounds: forward 40.2 / 40.3 -> 39.0 / 38.9, 40.0 / 39.8 ->
#: 39.4 / 39.2, 75.7 / 75.6 -> 75.0 / 75.0; fwd+bwd 108.0 / 108.5 -> 109.6 / 108.9 (0.699 of
#: copy in the first round, the 0.70 target's line), 107.7 / 107.4 -> 108.3 / 108.4, 203.6 /
#: 203.2 -> 203.3 / 203.0 (nvidia-h200-s42c-tune-pace42c-{1,2}.log).  So the forward alone
#: gains 0.6-1.4 us (0.77 -> 0.79 at long T, still short of 0.80) and fwd+bwd loses 0.4-1.6 us
#: at long T: off by default (the forward cannot tell whether a backward follows).  For
#: forward-only work at long T (inference) 6000 is the setting to take.  16-bit inputs, same
#: call, no pace -> 5000 / 7000: forward -0.6 to +1.2 us (faster only at (4, 256, 16000), 25.5
#: -> 24.9-25.0 at 5000), fwd+bwd 0.8-3.3 us slower everywhere.
CLN_FWD_PACE_GBPS_32BIT: float | None = None
#: The pace of 4-byte forwards that no backward follows (``cln_forward`` given no ``mean`` /
#: ``rstd``: ``common.cln`` under ``torch.no_grad`` or with no input needing a gradient), where
#: neither knob above is set; 0 or None: the stagger.  The knob above found the pace to help a
#: forward alone and to cost the backward right behind it; this takes it only where none follows.
#: Measured (H200, bench.tune, two rounds in one call, forward us, statistics left out, stagger
#: -> paced at 6000): 40.2 / 40.1 -> 38.5 / 38.6 at (2, 128, 64000), 39.6 / 39.9 -> 38.4 / 38.5
#: at (4, 256, 16000), 75.6 / 75.7 -> 75.1 / 75.1 at (16, 512, 4000); 5000 GB/s 38.5-38.6 /
#: 39.0-39.4 / 75.5, and in a second call 5500 38.2-38.4 / 38.8 / 75.0, 6500 38.7 / 39.0-39.1 /
#: 75.5-75.6 against 38.4-38.5 / 38.4 / 75.1 at 6000 (nvidia-h200-s43-tune-alone43-*.log,
#: nvidia-h200-s43b-tune-alone43b-*.log).  Every program waits for its time, not only the
#: first waves: pacing only the programs of the first 1 / 2 / 4 waves (the later ones then skip
#: the stamp's load) was slower or even at both long-T shapes, us, two rounds, default -> 1 / 2 / 4:
#: 38.9 / 38.9 -> 39.2-39.3 / 39.1-39.3 / 38.8-38.9 at (2, 128, 64000), 38.5-38.6 -> 39.0-39.3 /
#: 38.9-39.3 / 38.9-39.1 at (4, 256, 16000) (code at 8529d37,
#: bench/results/nvidia-h200-s45-tune-waves45-{1,2}.log).
CLN_FWD_ALONE_PACE_GBPS_32BIT: float | None = 6000.0
#: Each forward program prefetches into the L2 the rows of the tile this many waves of resident
#: programs later in its own sequence (``cp.async.bulk.prefetch``; 0: off), so that the program
#: which loads that tile finds it in the L2 and waits less on slow loads.  Slower everywhere
#: (H200, two rounds in one call, forward, us, default -> 0.25 / 0.5 / 1 / 2 waves): fp32
#: 76.3-76.5 -> 99.1-105.0 at (16, 512, 4000), 42.0 -> 43.6 / 45.1 / 49.4 / 48.3 at
#: (2, 128, 64000); bf16 28.9 -> 32.3-33.8 at (2, 128, 64000); fwd+bwd 1.3-29 us slower
#: (bench/results/nvidia-h200-s32c-tune-prefetch32-{1,2}.log).  As with cuda_ext's TMA
#: prefetch (NOTES 15.1), more requests in flight made the DRAM slower.
CLN_FWD_PREFETCH = 0.0
#: How a waiting cLN program polls the words of the tiles before it (both directions; GPU only).
#: Every poll so far reloads the whole vector of the group's words (up to ``CLN_GROUP`` words,
#: 8 L2 lines) at once and at once again, and at B = 2-4 a hundred and more programs of one
#: sequence wait on the same group's lines while its tiles publish into them (NOTES 32.3: 40 %
#: of the resident tiles wait).  ``CLN_SPIN_SLEEP_NS``: a ``nanosleep`` of this many ns between
#: two polls (0: none).  ``CLN_SPIN_NEAREST``: first wait on the one word of the nearest
#: earlier tile (it is about the last to publish), with one scalar load per poll and no
#: barrier, then load the vector as before.  Outputs are bitwise those without either.
#: Measured (H200, bench.tune, two rounds in one call, us, default -> nearest / sleep 200 /
#: sleep 500 / both at 200): no variant faster than the default by more than 0.1 us anywhere.
#: Forward fp32 76.3 -> 77.5-77.9 / 76.4 / 76.8 / 78.0-78.2 at (16, 512, 4000), 42.1-42.3 ->
#: 42.6-42.7 / 42.5 / 42.6 / 42.8-42.9 at (2, 128, 64000); bf16 28.9-29.1 -> 29.2 / 29.3 /
#: 29.5 / 29.6 there.  fwd+bwd fp32 108.0 -> 110.2-110.7 / 113.8-113.9 / 113.3-113.9 /
#: 115.4-116.4 at (4, 256, 16000); bf16 155.2-155.3 -> 161.2 / 155.9 / 155.5-155.8 /
#: 158.1-158.7 at (16, 512, 4000) (bench/results/nvidia-h200-s33-tune-spin33-{1,2}.log).  So
#: the polls' traffic on the words costs nothing measurable; a tile waits for its
#: predecessors' data, and a sleeping waiter only wakes later.  Both off.
CLN_SPIN_SLEEP_NS = 0
CLN_SPIN_NEAREST = False
#: The forward's waits polled per thread (GPU only; inline PTX): every thread reloads only its
#: own words that are not yet ready, in a loop of its own with no reduction and no barrier,
#: and goes on to the fold once all of its words are ready (the fold's own cross-thread steps
#: wait for the other threads).  Otherwise every poll reduces the readiness of the whole vector
#: across the program (shuffles, shared memory and a barrier) before the next load is issued,
#: and once more before the fold can start.  Why: one step more on the prefix path cost
#: 0.4-1.1 us (NOTES 39.1) and a dearer poll 0.6-1.1 us (39.2b), so a cheaper one should gain.
#: The words folded are the same: bitwise the same outputs.  ``CLN_SPIN_SLEEP_NS`` then applies
#: to the backward only.  H200, bench.tune, two rounds in one call, us, off -> on: forward fp32
#: (2, 128, 64000) 40.7-40.8 -> 40.1-40.3, (4, 256, 16000) 39.5 / 39.9 -> 39.5 / 39.8,
#: (16, 512, 4000) 76.0-76.1 -> 75.8-75.9; bf16 25.5-25.6 -> 25.0, 26.5 -> 25.4-25.8,
#: 45.2-45.3 -> 45.1; fwd+bwd bf16 0.2-1.2 faster at the long-T shapes, fp32 (2, 128, 64000)
#: 108.5-108.6 -> 107.7-107.8, but (16, 512, 4000) 202.7-202.9 -> 203.5-203.7 and
#: (4, 256, 16000) 107.2 / 106.7 -> 107.2 / 108.4 (bench/results/nvidia-h200-s39-tune-spin39-
#: {1,2}.log, NOTES 40).  A second call, on against off (-s39b-tune-spin39b-{1,2}.log): forward
#: fp32 40.1-40.2 / 40.0-40.2 / 75.5-75.6 against 40.6-40.8 / 40.0-40.1 / 76.0, bf16
#: 25.2-25.4 / 25.5 / 44.8-44.9 against 25.4-25.8 / 26.6-26.7 / 45.3-45.5 at (2, 128, 64000) /
#: (4, 256, 16000) / (16, 512, 4000); fwd+bwd 0.1-1.0 faster at five cases, even at
#: (4, 256, 16000) fp32.  On.  The backward's suffix waits polled the same way (its three kinds
#: of words per thread; code at b5dadfd) lost: fwd+bwd +0.3 to +7.3 us, so the backward polls
#: as before.
CLN_FWD_THREAD_SPIN = True
#: Fewer instructions per value.  Why: ncu of the bf16 forward at (2, 128, 64000) has the SM
#: schedulers issuing on 47 % of cycles with 2.7 warps each (0.26 for the loads and stores
#: alone), about 24 instructions per value (ptxas: 3048 per thread of 128 values, 792 for the
#: loads and stores), so at 16 bits the forward is bound by instruction issue, not by bytes
#: (bench/results/nvidia-h200-s33c-ncu-fwd-*.txt).
#: ``CLN_FWD_EVEN``: tiles without padding (C == BLOCK_C, T % BT == 0, every target shape)
#: compiled without the M2 pass's select (one instruction per value; the same bits).
#: ``CLN_FWD_OUT_FMA_16BIT``: the 16-bit output as x * r - mean * r, one FMA instead of a
#: subtraction and a product.  Its extra error is float32's rounding of mean * r, 2^-24 |mean| r:
#: within the tests' tolerance, which grows with |mean| r (``tests/harness.py``), and 2^-16 of
#: what a 16-bit value near the mean is rounded by itself (2^-8 bf16, 2^-11 fp16, times
#: |mean| r).  float32 inputs keep (x - mean) * r.
#: ``CLN_PACK_ASM``: the 16-bit outputs (forward and backward) packed by one
#: ``cvt.rn.bf16x2.f32`` / ``cvt.rn.f16x2.f32`` per two values instead of two conversions and a
#: byte permute (the same bits; GPU only).
#: ptxas (sm_90, offline), instructions per thread of the affine forward at a 128 x 64 tile:
#: bf16 3216 -> 2752, fp32 2072 -> 1992.  H200, bench.tune, two rounds in one call, us,
#: default -> even / out fma / pack / all three (adopted): bf16 forward 49.0 -> 47.7 / 48.2 /
#: 47.0 / 45.7 at (16, 512, 4000), 28.9 -> 27.8-27.9 / 28.4-28.5 / 28.0 / 26.8-26.9 at
#: (4, 256, 16000), 29.0 -> 28.1 / 28.3-28.4 / 27.8 / 26.2-26.6 at (2, 128, 64000); bf16
#: fwd+bwd 155.3 -> 150.2-150.9, 86.2 -> 84.2-84.5, 85.3-85.4 -> 82.0-82.1 with all three;
#: fp32 within 0.5 us either way, the forward 0.1-0.5 us faster with all three
#: (bench/results/nvidia-h200-s33d-tune-lean33-{1,2}.log).
CLN_FWD_EVEN = True
CLN_FWD_OUT_FMA_16BIT = True
CLN_PACK_ASM = True
#: The forward's divisions (its 42 per thread at a packed bf16 128 x 64 tile: Chan's weights in
#: the scan and the prefix folds, the frame means, M2 / n and 1 / sqrt) as ``div.approx.f32``
#: instead of the ``div.full.f32`` that ``/`` compiles to, whose range scaling (two FMULs by
#: 0.25 and 2^24 and their tests) costs about 7 instructions each.  The same 2-ulp accuracy:
#: every divisor here (counts, n_t, sqrt(M2 / n + eps)) lies in the range where the two agree.
#: ptxas (sm_90, offline), instructions per thread of the packed bf16 forward: 2752 -> 2640 at
#: BT 64, 2024 -> 1912 at BT 32 (NOTES 34.5).  H200, two rounds in one call, forward us,
#: default -> this: bf16 45.6-45.7 -> 45.3-45.5 at (16, 512, 4000), 26.7 -> 26.5 at
#: (4, 256, 16000), 26.0-26.3 -> 26.0-26.2 at (2, 128, 64000); fp32 within 0.1 us; fwd+bwd with
#: the backward's cuts unchanged (bench/results/nvidia-h200-s34-tune-{fastdiv,bwdlean}34-*.log).
#: Under 1 %: left off (GPU only).
CLN_FWD_FAST_DIV = False
#: The 16-bit backward, counted the same way (ptxas, sm_90, offline; NOTES 35), had about 46
#: instructions per position (x and dy): 2952 per thread at the packed bf16 128 x 32 tile over
#: 2 warps, dy unpacked four times and x three.  Three cuts:
#: ``CLN_BWD_DX_FMA_16BIT``: dx as ``fma(r, dy * gamma, fma(x, -S_b, c))`` with one
#: ``c = K * S_b + P - S_a`` per frame, instead of ``r * dy * gamma - S_a - (x - K) * S_b + P``
#: (two FADDs per value fewer).  Its extra error is float32's rounding of K * S_b, 2^-24 |K| S_b
#: (relative to dx: 2^-24 |mean| r, as the forward's output FMA), within the tolerance, which
#: grows with |mean| r.  float32 inputs keep the exact form.  (G2 as sum(gd * x) - mean * G1 as
#: well, 112 fewer again, was dropped: with this FMA a frame of equal values, r = 1 / sqrt(eps),
#: gave dx errors of 448 at a DC offset of 1000 std, NOTES 35.)
#: ``CLN_BWD_SHARE_16BIT``: dy unpacked once for both channel sums (gd = dy * gamma feeds G1
#: and G2, one tuple reduction) and once for both late partials (dgamma and dbeta, one tuple
#: reduction) instead of once per sum.  The exact forms; different roundings (gd * (x - mean)
#: instead of dy * (x - mean) * gamma).
#: ``CLN_BWD_FAST_DIV``: the backward's two divisions per frame (a = r G1 / n, b = r^2 G2 / n)
#: by ``div.approx.f32``, as ``CLN_FWD_FAST_DIV`` the forward's (GPU only).
#: Instructions per thread, default -> dx fma / share / fast div / all three: bf16 128 x 32
#: over 2 warps (C = 128) 2952 -> 2816 / 2816 / 2896 / 2656; 256 x 32 and 512 x 16 over 4
#: warps 2856 -> 2720-2728 / 2736-2744 / 2816 / 2568; no spills, 167-168 registers; fp16
#: 2936-3040 -> 2632-2720 with all three; fp32 (fast div only) 2248-2320 -> 16 fewer.
#: H200, bench.tune, two rounds in one call, fwd+bwd us, default -> dx fma / share / fast div /
#: all three (adopted): bf16 (16, 512, 4000) 150.1-150.2 -> 149.4-150.1 / 148.0-148.4 /
#: 150.2-150.6 / 147.4-147.9; (4, 256, 16000) 83.8-84.0 -> 82.8-83.3 / 83.2-83.4 / 83.9-84.0 /
#: 81.6-81.8; (2, 128, 64000) 81.7 -> 80.6-81.1 / 80.4-80.5 / 80.9-81.1 / 79.2; fp32 (where
#: only the division applies) within the rounds' spread, 202.2-204.3, 107.2-108.4, 108.8-110.3
#: for every variant (bench/results/nvidia-h200-s34-tune-bwdlean34-{1,2}.log).
CLN_BWD_DX_FMA_16BIT = True
CLN_BWD_SHARE_16BIT = True
CLN_BWD_FAST_DIV = True
#: Programmatic dependent launch (sm_90 and later) around the cLN kernels.  A cLN call is a
#: chain of small launches around one large one: the scratch words zeroed, the kernel, and in
#: the backward one or two column-sum launches.  Each boundary costs a launch ramp, and the
#: kernels' tails leave SMs idle (NOTES 25.2: 6-8 us after the last ticket).  With this on,
#: the scratch is zeroed by ``_zero_kernel``, which lets the cLN kernel launch at once
#: (``griddepcontrol.launch_dependents``); the cLN kernel loads and reduces its tile before it
#: waits for the zeroing (``griddepcontrol.wait``, right before its first scratch word; the
#: forward, ``CLN_PDL_EARLY``, waits before anything instead), and
#: the column sums launch while the backward's last tiles run and wait the same way before
#: they read the partials.  Every launch in the chain waits for the whole of the one before it
#: before touching what that one writes, so the results are bitwise those without it.
#: H200, bench.tune, two rounds in one call, us, plain -> PDL: fwd+bwd fp32 206.8 / 206.5 ->
#: 205.4 / 205.2 at (16, 512, 4000), 112.6 / 112.7 -> 109.9 / 109.7 at (4, 256, 16000),
#: 115.4 / 115.6 -> 114.1 / 114.0 at (2, 128, 64000); bf16 156.1 / 156.5 -> 154.5 / 155.0,
#: 86.7 / 86.7 -> 86.6 / 86.3, 87.0 / 87.5 -> 85.4 / 85.6; the forward 78.5 -> 77.5 at
#: (16, 512, 4000) fp32, within 0.2 us elsewhere; the (80, 64, 301) seed's forward 10.2 ->
#: 9.4 (nvidia-h200-s25-tune-{pdl25-1,pdl25-2,seed}.log).
CLN_PDL = True
#: With ``CLN_PDL``: the zero kernel at the head of the chain launched as a programmatic
#: dependent of whatever launch precedes it in the stream (it waits for that one to finish
#: before it lets the cLN kernel launch or writes a word), so that its own launch overlaps the
#: previous kernel's tail instead of following it.  Why: the forward on scratch zeroed outside
#: the timed region (no zero kernel at all) was 0.7-1.5 us faster than behind a plainly
#: launched zero kernel (bench.probe_scratch, nvidia-h200-s26-probe-scratch.log).  H200,
#: bench.tune, two rounds in one call, us, plain zero launch -> dependent: forward fp32 77.7 ->
#: 76.6 at (16, 512, 4000), 42.5 -> 41.2 / 41.6 at (4, 256, 16000), 43.7 / 43.9 -> 42.6 / 42.9
#: at (2, 128, 64000); bf16 50.0 -> 48.6, 30.3 -> 29.3, 30.6 -> 29.6 / 29.8; fwd+bwd fp32
#: 205.1 / 205.4 -> 204.4, 110.4 / 111.0 -> 109.6 / 109.0, 114.0 / 113.9 -> 113.1 / 113.5;
#: bf16 within 0.6 us; the (80, 64, 301) seed's forward 9.9 -> 8.9
#: (nvidia-h200-s26c-tune-{zero26-1,zero26-2,seed26}.log).
CLN_PDL_ZERO = True
#: With ``CLN_PDL_ZERO``: the directions ("fwd", "bwd") whose zero kernel lets the cLN kernel
#: launch before it waits (instead of after), the cLN kernel then waiting before it reads
#: anything (instead of after its tile is loaded and reduced).  The cLN kernel's programs are
#: then resident and waiting when the launch before the zero kernel ends, instead of being
#: launched only then; the price is that the zero kernel's own end is on the path to the first
#: load.  ``CLN_PDL_EARLY_ATOMIC``: also in grids whose tiles come from the atomic counter
#: (``_atomic_tickets``; they wait before their ticket anyway).  H200, bench.tune, four rounds
#: in two calls, us, default -> early forward: forward fp32 76.6-76.8 -> 76.3-76.7 at
#: (16, 512, 4000), 41.1-41.3 -> 40.7 at (4, 256, 16000), 42.7-43.0 -> 42.0-42.3 at
#: (2, 128, 64000); bf16 within 0.2 us at (16, 512, 4000), 0.4-0.6 faster at the others;
#: fwd+bwd fp32 203.2-204.6 -> 204.0-204.4 (both directions: 203.2-203.5 -> 204.3-204.9),
#: 109.3-110.2 -> 108.2-108.4, 113.1-113.4 -> 111.8-112.6; bf16 within 0.5 us.  The backward
#: early as well gained nothing more; the (80, 64, 301) seed's forward (atomic tickets), early:
#: 8.9 -> 9.4 (nvidia-h200-s27-tune-*.log, nvidia-h200-s27b-tune-early27b-{1,2}.log).
CLN_PDL_EARLY: tuple[str, ...] = ("fwd",)
CLN_PDL_EARLY_ATOMIC = False
#: Cache hints of the tiles read once (held in registers: one channel block) and of the
#: outputs: the L2 eviction policy of the x / dy loads ("" or "evict_first") and the cache
#: modifier of the y / dx stores ("" or ".cs", streaming).  Off: measured to lose.  H200,
#: bench.tune, two rounds in one call, us, none -> evict_first loads: fwd+bwd fp32 204.9 ->
#: 239.0 at (16, 512, 4000), 109.7 -> 125.1 at (4, 256, 16000), 114.2-114.7 -> 130.4 at
#: (2, 128, 64000); bf16 155.0-155.7 -> 178.7-179.9, 86.5 -> 93.0, 85.7 -> 87.8 (the
#: backward's first tiles are the forward's last ones, whose x the L2 still holds unless
#: they were loaded evict_first); .cs stores: forward -0.2 to +1.2 us, fwd+bwd -0.3 to +2.1;
#: both: forward -1.0 to +1.1 us, fwd+bwd -1.6 to +30.9 (nvidia-h200-s26-tune-hints26-*.log).
CLN_TILE_EVICT = ""
CLN_OUT_CACHE = ""
#: The affine parameters read before the prefix / suffix wait instead of after it (tiles of
#: one channel block): the forward's gamma and beta, the backward's gamma for dx, so that a
#: tile's output would not wait one more L2 round trip after its prefix.  Off: measured mixed.
#: H200, bench.tune, two rounds in one call, us, after -> both before: forward fp32 40.5-40.8 ->
#: 41.3-41.4 at (4, 256, 16000), 42.0-42.2 -> 42.0-42.3 at (2, 128, 64000), 76.1-76.3 ->
#: 75.8-76.1 at (16, 512, 4000); bf16 48.7 -> 49.4 at (16, 512, 4000), +-0.5 elsewhere; fwd+bwd
#: fp32 gains 1.2-1.7 us at (4, 256, 16000) and (16, 512, 4000), bf16 loses up to 3 us; the
#: (80, 64, 301) seed's forward 9.1 -> 11.9-12.0 (ptxas 13.0 offline: 8 B more spilled at the
#: fp32 tile of C = 256) (bench/results/nvidia-h200-s28-tune-{affine28-*,seed28}.log).
CLN_FWD_AFFINE_EARLY = False
#: float32 forward: the frame sums of the tiles within a call's first C frames taken about a
#: shift (each frame's channel-0 value K: sum(x - K), mean K + sum / C).  A float32 sum of C
#: values at a DC offset of D standard deviations loses about D * 6e-8 * sqrt(C), and a frame's
#: cumulative mean averages the sums of all frames before it, so only frames with less than
#: about C frames of history carry that error: (4, 4096, 1) at offset 1000 was 3.8x the
#: harness's tolerance unshifted (interpreter, ``python3 -m bench.probe_dc_first_frames``).
#: Later tiles run the plain sums (one subtraction per value less on the path the fp32 forward's
#: 0.80 target sits on: shifting every tile cost 0.25-0.8 us there, NOTES 55.9b).
CLN_FWD_SHIFT = True
#: The same for a forward no backward follows (no statistics written) where it is paced (not at
#: the one-wave seed, where reading them early cost 2.8 us, above); on top of its pace
#: (H200, bench.tune, two rounds in one call, fp32 forward us, off -> on): 75.0 / 75.0 -> 74.4 /
#: 74.7 at (16, 512, 4000), 38.6 / 38.5 -> 38.3 / 38.5 at (2, 128, 64000), 39.0 / 38.9 -> 38.4 /
#: 38.5 at (4, 256, 16000) (nvidia-h200-s43c-tune-alone43c-*.log).  Again in the next session,
#: after its GPU path tests passed: 75.0 / 75.0 -> 74.6 / 74.4, 38.6 / 38.6 -> 38.2 / 38.4,
#: 38.7 / 38.2 -> 38.2 / 38.6 (nvidia-h200-s44-tune-alone43d-*.log); and in a third call 75.8 /
#: 75.6 -> 74.8 / 74.6, 38.5 / 38.4 -> 38.1 / 38.1, 38.7 / 39.2 -> 38.3 / 38.3
#: (nvidia-h200-s44-tune-alone44-*.log).  On: 16 of 18 pairs faster, one even, one 0.4 us
#: slower; 0.80 of copy at long T needs 38.3-38.5 us.
CLN_FWD_ALONE_AFFINE_EARLY = True
CLN_BWD_AFFINE_EARLY = False

#: ``colsum`` (the fixed-order column sums of the cLN backward's dgamma / dbeta partials): one
#: launch up to this many rows; above, the rows are split into segments of at least
#: ``COLSUM_MIN_SEG`` rows over about ``COLSUM_PROGRAMS`` programs, and a second launch sums
#: the segments.  Both depend only on the partials' shape, so the summation order (the result)
#: is the same on any GPU.  torch.sum(dim=0) of the same partials took 8.3-11.5 us per call at
#: the cLN target shapes, two calls per backward; colsum 2 x 3.8-5.9 us for both kinds
#: (H200, torch.profiler, bench/results/nvidia-h200-s16{,b}-ablate-bwd.log).  The backward
#: summing its partials itself instead (a fixed-order tree, each node summed by the last of its
#: tiles to count in; code at 6f27408) was slower at all six target cases, fwd+bwd 1.5-16.2 us
#: (e.g. (16, 512, 4000) fp32 200.2 -> 216.4 us): each program's count, a barrier and an atomic
#: before it exits, cost more than the two launches' tail (nvidia-h200-s48b-tune-tree48b-*.log).
COLSUM_ONE_LAUNCH_ROWS = 256
COLSUM_MIN_SEG = 64
COLSUM_PROGRAMS = 512
#: Rows of the partials one program loads at once (at most).  8 (up to session 19) made a
#: segment of 64 rows 8 dependent loads, each a full memory latency: 8 -> 64 took cLN fwd+bwd
#: 1.3-4.7 us faster at all six target cases, e.g. (4, 256, 16000) fp32 128.2 -> 123.5 us
#: (H200, bench/results/nvidia-h200-s20-tune-colsum.log).
COLSUM_BLOCK_R = 64

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
#: shared memory): 2 = one row ahead (32 KiB smem per CTA for fp32 N=4096).  16-bit inputs
#: take 3 (two rows ahead): bf16 fwd+bwd 0.82 -> 0.91 of copy bandwidth at (32768, 4096),
#: 0.77 -> 0.92 at (16384, 8192), 37.0 -> 33.1 us at (2048, 4096) (H200, bench/tune.py
#: "stages3", nvidia-h200-s3-tune-rmsnorm-bf16.log).  fp32 stays at 2: 3 stages of N = 16384
#: need 256 KiB of shared memory (offline ptxas), more than an SM has.
RMS_BWD_STAGES = 2
RMS_BWD_STAGES_16BIT = 3

#: Diagnostics only (bench/ablate_cln.py; results are WRONG when > 0): the cLN forward skips
#: 1 = the wait for / reduction of earlier aggregates, 2 = also the per-frame statistics,
#: 3 = also the scan and the publication.  Timing the levels apart places the time.
_DIAG_ABLATE = 0
#: Diagnostics only (bench/timeline_cln.py): an int64 CUDA tensor of at least 8 * tiles values
#: makes the cLN forward record, per tile in ticket order, its SM and five %globaltimer stamps
#: (start, ticket taken, tile aggregate known, prefix known, output issued) and (b, i).
#: None: off (the kernel is compiled without the stamps).
_DIAG_TIMELINE: Tensor | None = None
#: The same for the cLN backward: 1 = no publication and no wait for the later tiles' suffix
#: words, 2 = also no per-frame sums and no dgamma / dbeta partials, 3 = also no in-tile scan
#: (x and dy are loaded and dx stored: the backward's memory access pattern alone).
_DIAG_ABLATE_BWD = 0
#: The same as ``_DIAG_TIMELINE`` for the cLN backward: per tile its SM and five stamps (start,
#: ticket taken, the tile's sums known, suffix known, dx issued) and (b, i).
_DIAG_TIMELINE_BWD: Tensor | None = None
#: Diagnostics only (bench.tune's "stats always"): a forward given no ``mean`` / ``rstd`` writes
#: them anyway (into scratch) and is scheduled as one a backward follows, as before session 43
#: (plus its store of the state's mean, which the training forward leaves to ``common``).
#: Against it, leaving them out measured 1.0 us at bf16 (4, 256, 16000) (26.3-26.4 ->
#: 25.3-25.4), 0.2-0.4 us at bf16 (2, 128, 64000), -0.1 to 0.5 us elsewhere
#: (nvidia-h200-s43-tune-alone43-*.log); but this diagnostic was itself 0.8 us slower there than
#: session 42's forward (25.4-25.6 us, nvidia-h200-s42c-tune-pace42c-*.log), so it does not
#: reproduce that forward exactly.
_DIAG_FWD_STATS_ALWAYS = False

# Offset (in int64 words) of the published words after the ticket counter: its own 128-B line.
_SCR_OFF = 16


def _next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def _cdiv(a: int, b: int) -> int:
    # Not triton.cdiv on the host path: that is a ConstexprFunction, whose call costs more.
    return -(-a // b)


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
    an empty one instead of NaN; an empty partition (n = 0, mean 0, M2 0) is then an exact
    identity on either side.  Explicit fma: every inlined copy rounds the same way (no
    contraction choices left).  ``where``: an empty left partition is an exact identity even
    where nb / nb is not exactly 1 (approximate division on the GPU); M is then 0 + Mb exactly
    (na = 0).  (``_chan_div``: the same with the division chosen.)
    """
    return _chan_div(na, ma, Ma, nb, mb, Mb, False)


# Inline PTX of ``_fdiv`` (``CLN_FWD_FAST_DIV``, ``CLN_BWD_FAST_DIV``): the division without
# ``div.full``'s range scaling (max 2 ulp for divisors in [2^-126, 2^126]: every count and
# every n_t + eps here).
_PTX_DIV_APPROX = tl.constexpr("div.approx.f32 $0, $1, $2;")


@triton.jit
def _fdiv(a, b, FAST: tl.constexpr):
    """a / b: ``div.approx.f32`` where ``FAST`` (the GPU, ``CLN_*_FAST_DIV``), else ``/``."""
    if FAST:
        return tl.inline_asm_elementwise(
            _PTX_DIV_APPROX, "=f,f,f", [a, b], dtype=tl.float32, is_pure=True, pack=1
        )
    else:
        return a / b


@triton.jit
def _chan_div(na, ma, Ma, nb, mb, Mb, FAST: tl.constexpr):
    """``_chan`` with its division by ``_fdiv``."""
    n = na + nb
    d = mb - ma
    w = _fdiv(nb, tl.maximum(n, 1.0), FAST)
    m = tl.where(na == 0, mb, tl.fma(d, w, ma))
    return n, m, tl.fma(d * d * na, w, Ma + Mb)


@triton.jit
def _chan_fast(na, ma, Ma, nb, mb, Mb):
    """``_chan`` by ``div.approx.f32`` (a combine function: no constexpr arguments)."""
    return _chan_div(na, ma, Ma, nb, mb, Mb, True)


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


@triton.jit
def _ready(w, FWD: tl.constexpr):
    if FWD:
        return w < 0
    else:
        return (w & 1) != 0


# Inline PTX of ``_spin_pause``: a nanosleep of $1 ns, then 0 (an offset the next poll adds to
# its address, so that ptxas cannot issue that load before the sleep).
_PTX_SLEEP = tl.constexpr("nanosleep.u32 $1;\n\tmov.u32 $0, 0;")


@triton.jit
def _spin_pause(SPIN: tl.constexpr):
    """Between two polls (``CLN_SPIN_SLEEP_NS``): 0 after a nanosleep of SPIN ns, or 0 at once
    (SPIN = 0, and always under the interpreter)."""
    if SPIN > 0:
        ns = tl.full([], SPIN, tl.int32)
        return tl.inline_asm_elementwise(
            _PTX_SLEEP, "=r,r", [ns], dtype=tl.int32, is_pure=False, pack=1
        )
    else:
        return 0


def _ptx_spin_fwd(pack: int) -> str:
    """Inline PTX of ``_spin_thread`` for ``pack`` words per instance: operands $0.. the words
    returned, then the words as first loaded, then their addresses.  A word is ready when
    negative (``_pack_fwd``; masked-off lanes load as -1).  Only words not yet ready are
    reloaded; the labels are local to the braces, so that every inlined copy has its own."""
    ks = range(pack)
    lines = ["{", f".reg .pred sp<{pack}>;", ".reg .pred sall;", f".reg .b64 sw<{pack}>;"]
    lines += [f"mov.b64 sw{k}, ${pack + k};" for k in ks]
    lines.append("SPIN_WAIT:")
    lines += [f"setp.lt.s64 sp{k}, sw{k}, 0;" for k in ks]
    lines.append("mov.pred sall, sp0;")
    lines += [f"and.pred sall, sall, sp{k};" for k in ks if k > 0]
    lines.append("@sall bra SPIN_DONE;")
    lines += [f"@!sp{k} ld.volatile.global.b64 sw{k}, [${2 * pack + k}];" for k in ks]
    lines += ["bra SPIN_WAIT;", "SPIN_DONE:"]
    lines += [f"mov.b64 ${k}, sw{k};" for k in ks]
    lines.append("}")
    return "\n\t".join(lines)


def _spin_constraints(pack: int) -> str:
    return ",".join(["=l"] * pack + ["l"] * (2 * pack))


_PTX_SPIN_FWD_1 = tl.constexpr(_ptx_spin_fwd(1))
_PTX_SPIN_FWD_2 = tl.constexpr(_ptx_spin_fwd(2))
_PTX_SPIN_FWD_4 = tl.constexpr(_ptx_spin_fwd(4))
_PTX_SPIN_FWD_8 = tl.constexpr(_ptx_spin_fwd(8))
_SPIN_CONS_1 = tl.constexpr(_spin_constraints(1))
_SPIN_CONS_2 = tl.constexpr(_spin_constraints(2))
_SPIN_CONS_4 = tl.constexpr(_spin_constraints(4))
_SPIN_CONS_8 = tl.constexpr(_spin_constraints(8))


@triton.jit
def _spin_thread(w, ptrs, PK: tl.constexpr):
    """Forward words ``w`` (loaded from ``ptrs``), each thread re-loading its own words until
    every one of them is ready (``CLN_FWD_THREAD_SPIN``): one inline-PTX loop per PK words,
    PK the words a thread holds, so that its reloads are in flight together."""
    if PK == 1:
        w = tl.inline_asm_elementwise(
            _PTX_SPIN_FWD_1, _SPIN_CONS_1, [w, ptrs], dtype=tl.int64, is_pure=False, pack=1
        )
    elif PK == 2:
        w = tl.inline_asm_elementwise(
            _PTX_SPIN_FWD_2, _SPIN_CONS_2, [w, ptrs], dtype=tl.int64, is_pure=False, pack=2
        )
    elif PK == 4:
        w = tl.inline_asm_elementwise(
            _PTX_SPIN_FWD_4, _SPIN_CONS_4, [w, ptrs], dtype=tl.int64, is_pure=False, pack=4
        )
    else:
        w = tl.inline_asm_elementwise(
            _PTX_SPIN_FWD_8, _SPIN_CONS_8, [w, ptrs], dtype=tl.int64, is_pure=False, pack=8
        )
    return w


@triton.jit
def _spin_load(ptr, idx, need, FWD: tl.constexpr, SPIN: tl.constexpr, TS: tl.constexpr = 0):
    """Load words ``ptr[idx]`` (a vector), re-loading until every ``need``-ed one is ready
    (SPIN ns apart, ``_spin_pause``).

    The loop condition is a full reduction (uniform over every thread), so the barriers inside
    are safe, and the values returned are those of the load that was found all-ready.
    Masked-off lanes read as ready (fwd: -1, bwd: 1) and must be ignored by the caller.
    ``TS`` (forward words, ``CLN_FWD_THREAD_SPIN``: the program's threads): each thread waits
    for its own words instead (``_spin_thread``; no sleep between its polls).
    """
    other = -1 if FWD else 1
    w = tl.load(ptr + idx, mask=need, other=other, volatile=True)
    if FWD and TS > 0:
        PK: tl.constexpr = max(1, min(8, idx.shape[0] // TS))
        w = _spin_thread(w, ptr + idx, PK)
    else:
        rdy = tl.min(_ready(w, FWD).to(tl.int32), axis=0)
        while rdy == 0:
            z = _spin_pause(SPIN)
            w = tl.load(ptr + (idx + z), mask=need, other=other, volatile=True)
            rdy = tl.min(_ready(w, FWD).to(tl.int32), axis=0)
    return w


@triton.jit
def _spin_word(ptr, FWD: tl.constexpr, SPIN: tl.constexpr):
    """Wait until the one word ``ptr[0]`` is ready (``CLN_SPIN_NEAREST``): a scalar load per
    poll, no reduction and no barrier (a thread leaves the loop when its own load finds the
    word ready, which is safe as the loop holds no barrier)."""
    w = tl.load(ptr, volatile=True)
    while _ready(w, FWD).to(tl.int32) == 0:
        z = _spin_pause(SPIN)
        w = tl.load(ptr + z, volatile=True)


@triton.jit
def _load3(ptr, stride, idx, need):
    """The backward's three kinds of words (a, b, p: ``stride`` apart) at ``idx``, in flight
    together."""
    wa = tl.load(ptr + idx, mask=need, other=1, volatile=True)
    wb = tl.load(ptr + stride + idx, mask=need, other=1, volatile=True)
    wp = tl.load(ptr + 2 * stride + idx, mask=need, other=1, volatile=True)
    return wa, wb, wp


@triton.jit
def _spin3_from(wa, wb, wp, ptr, stride, idx, need, SPIN: tl.constexpr):
    """``_spin_load`` for the three kinds at once, from their loads already issued (``_load3``):
    one readiness test and one reload of all three per round trip; the values returned come
    from one load that found every needed word ready."""
    ok = _ready(wa, False) & _ready(wb, False) & _ready(wp, False)
    rdy = tl.min(ok.to(tl.int32), axis=0)
    while rdy == 0:
        z = _spin_pause(SPIN)
        wa, wb, wp = _load3(ptr, stride, idx + z, need)
        ok = _ready(wa, False) & _ready(wb, False) & _ready(wp, False)
        rdy = tl.min(ok.to(tl.int32), axis=0)
    return wa, wb, wp


@triton.jit
def _spin_load3(ptr, stride, idx, need, OVERLAP: tl.constexpr, SPIN: tl.constexpr):
    """The three kinds' words at ``idx``, each needed one ready: loaded together and waited for
    at once (``OVERLAP``), or one ``_spin_load`` after another."""
    if OVERLAP:
        wa, wb, wp = _load3(ptr, stride, idx, need)
        wa, wb, wp = _spin3_from(wa, wb, wp, ptr, stride, idx, need, SPIN)
    else:
        wa = _spin_load(ptr, idx, need, False, SPIN)
        wb = _spin_load(ptr + stride, idx, need, False, SPIN)
        wp = _spin_load(ptr + 2 * stride, idx, need, False, SPIN)
    return wa, wb, wp


@triton.jit
def _ticket(
    scr_ptr,
    B,
    NTB,
    REVERSE: tl.constexpr,
    RUN: tl.constexpr,
    ATOMIC: tl.constexpr,
    SEQG: tl.constexpr = 0,
):
    """Take a ticket -> (k, b, i, j): the ticket, sequence, tile, and processing index (i, or
    NTB-1-i).  ``ATOMIC``: the ticket from a counter (``CLN_TICKET_ATOMIC``), else the
    program id.

    Tickets go in runs of RUN consecutive tiles of one sequence, the runs interleaved over the
    batch (RUN = 1: tile j of every sequence, then tile j+1, ...); the tiles past the last full
    run of each sequence come last, batch-interleaved.  With RUN = 1 and ``SEQG`` > 0 the
    sequences go in groups of SEQG (``_seq_group``), each group's tiles interleaved over its
    sequences, group after group (the last group holds the B % SEQG left, if any).  Within a
    sequence the ticket grows with j, which is all the deadlock argument needs.
    """
    if ATOMIC:
        k = tl.atomic_add(scr_ptr, 1).to(tl.int32)
    else:
        k = tl.program_id(0)
    if RUN == 1 and SEQG == 0:
        b = k % B
        j = k // B
    elif RUN == 1:
        span = SEQG * NTB  # tickets of one full group
        nfull = B // SEQG
        in_full = k < nfull * span
        kk = tl.where(in_full, k % span, k - nfull * span)
        r = tl.maximum(tl.where(in_full, SEQG, B - nfull * SEQG), 1)  # sequences in k's group
        b = tl.where(in_full, (k // span) * SEQG, nfull * SEQG) + kk % r
        j = kk // r
    else:
        nf = NTB // RUN  # full runs per sequence
        in_runs = k < B * nf * RUN
        r = k // RUN
        kr = tl.maximum(k - B * nf * RUN, 0)
        b = tl.where(in_runs, r % B, kr % B)
        j = tl.where(in_runs, (r // B) * RUN + k % RUN, nf * RUN + kr // B)
    if REVERSE:
        i = NTB - 1 - j
    else:
        i = j
    return k, b, i, j


# ============================================================================================
# cLN forward
# ============================================================================================
@triton.jit
def _fwd_fold_words(pn, pm, pM, w, need, wn, FAST: tl.constexpr):
    """Fold a vector of forward words (counts ``wn``) onto the prefix, in a fixed tree."""
    wm, wM = _unpack_fwd(w)
    wn = tl.where(need, wn, 0.0)
    wm = tl.where(need, wm, 0.0)
    wM = tl.where(need, wM, 0.0)
    if FAST:
        cn, cm, cM = tl.reduce((wn, wm, wM), 0, _chan_fast)
    else:
        cn, cm, cM = tl.reduce((wn, wm, wM), 0, _chan)
    return _chan_div(pn, pm, pM, cn, cm, cM, FAST)


@triton.jit
def _fwd_close_group(
    t_ptr,
    g_ptr,
    i,
    C,
    BT: tl.constexpr,
    G: tl.constexpr,
    SPIN: tl.constexpr,
    FAST: tl.constexpr,
    TS: tl.constexpr = 0,
):
    """Tile i closes its group: reduce the group's G aggregates and publish the group word."""
    lane = tl.arange(0, G)
    w = _spin_load(t_ptr, i - (G - 1) + lane, lane >= 0, True, SPIN, TS)
    z = tl.zeros([], tl.float32)
    n, m, M = _fwd_fold_words(z, z, z, w, lane >= 0, C * 1.0 * BT, FAST)
    tl.atomic_xchg(g_ptr + i // G, _pack_fwd(m, M), sem="relaxed")


@triton.jit
def _fwd_prefix(
    t_ptr,
    g_ptr,
    i,
    C,
    cnt0,
    m0,
    M0,
    BT: tl.constexpr,
    G: tl.constexpr,
    CHUNK: tl.constexpr,
    SPIN: tl.constexpr,
    FAST: tl.constexpr,
    MERGED: tl.constexpr = False,
    goff=0,
    TS: tl.constexpr = 0,
):
    """Exclusive prefix (count, mean, M2) of tile i: state, earlier groups, earlier tiles of
    its group (every tile before i is a full tile of C * BT values).  ``MERGED``
    (``CLN_FWD_PREFIX_MERGED``; G == CHUNK): the last round of group words (at ``goff`` words
    past ``t_ptr``) and the own group's tile words waited for and folded as one vector.

    Unmerged, the group words and the tile words are waited for one after the other: issuing
    the tile words first (one round trip, as the backward does) changed the target shapes'
    forward by -0.01 to +0.01 of copy bandwidth, and the (80, 64, 301) forward measured 15.7 us
    in that call against 11.1 us before (NOTES 16.5)."""
    pn = cnt0
    pm = m0
    pM = M0
    gi = i // G
    lane = tl.arange(0, CHUNK)
    if MERGED:
        clast = (tl.maximum(gi - 1, 0) // CHUNK) * CHUNK  # the last round's first group
        for c0 in range(0, clast, CHUNK):
            j = c0 + lane
            w = _spin_load(g_ptr, j, j < gi, True, SPIN, TS)
            pn, pm, pM = _fwd_fold_words(pn, pm, pM, w, j < gi, C * 1.0 * BT * G, FAST)
        lane2 = tl.arange(0, 2 * G)
        is_g = lane2 < G
        jg = clast + lane2
        jt = gi * G + lane2 - G
        need2 = tl.where(is_g, jg < gi, jt < i)
        w2 = _spin_load(t_ptr, tl.where(is_g, goff + jg, jt), need2, True, SPIN, TS)
        wn = tl.where(is_g, C * 1.0 * BT * G, C * 1.0 * BT)
        pn, pm, pM = _fwd_fold_words(pn, pm, pM, w2, need2, wn, FAST)
    else:
        for c0 in range(0, gi, CHUNK):
            j = c0 + lane
            need = j < gi
            w = _spin_load(g_ptr, j, need, True, SPIN, TS)
            pn, pm, pM = _fwd_fold_words(pn, pm, pM, w, need, C * 1.0 * BT * G, FAST)
        lane_g = tl.arange(0, G)
        j = gi * G + lane_g
        need = j < i
        w = _spin_load(t_ptr, j, need, True, SPIN, TS)
        pn, pm, pM = _fwd_fold_words(pn, pm, pM, w, need, C * 1.0 * BT, FAST)
    return pn, pm, pM


@triton.jit
def _add3(a0, b0, c0, a1, b1, c1):
    return a0 + a1, b0 + b1, c0 + c1


@triton.jit
def _add2(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@triton.jit
def _sum2(a, b, AXIS: tl.constexpr, FUSE: tl.constexpr):
    """The sums of two tiles over ``AXIS``: one tuple reduction (``FUSE``) or two."""
    if FUSE:
        sa, sb = tl.reduce((a, b), AXIS, _add2)
    else:
        sa = tl.sum(a, axis=AXIS)
        sb = tl.sum(b, axis=AXIS)
    return sa, sb


@triton.jit
def _sum3(a, b, c, FUSE: tl.constexpr):
    """The sums of three vectors over axis 0: one tuple reduction (``FUSE``) or three."""
    if FUSE:
        sa, sb, sc = tl.reduce((a, b, c), 0, _add3)
    else:
        sa = tl.sum(a, axis=0)
        sb = tl.sum(b, axis=0)
        sc = tl.sum(c, axis=0)
    return sa, sb, sc


@triton.jit
def _last3(sn, sm, sM, BT: tl.constexpr):
    """The last element of an inclusive scan (the tile aggregate: padding frames are
    identities).  Three sums: as one tuple reduction (``_sum3``) the forward took 48.7-49.3 us
    against 47.6-47.9 at (4, 256, 16000) fp32 and was even elsewhere (H200, two rounds in one
    call, bench/results/nvidia-h200-s14c-ab-fused-*.log)."""
    last = tl.arange(0, BT) == BT - 1
    an = tl.sum(tl.where(last, sn, 0.0), axis=0)
    am = tl.sum(tl.where(last, sm, 0.0), axis=0)
    aM = tl.sum(tl.where(last, sM, 0.0), axis=0)
    return an, am, aM


@triton.jit
def _cblock(cb, offs_c, offs_t, tmask, C, T, BLOCK_C: tl.constexpr):
    """Channel block ``cb`` of a tile: channels, their mask, the tile mask and offsets."""
    cc = cb * BLOCK_C + offs_c
    cmask = cc < C
    return cc, cmask, cmask[:, None] & tmask[None, :], cc[:, None] * T + offs_t[None, :]


# Inline PTX of ``_unpack_tile``: one int32 word of two 16-bit values ($2) -> the float32 bit
# patterns of its low ($0) and high ($1) halves.
_PTX_UNPAIR_BF16 = tl.constexpr("shl.b32 $0, $2, 16;\n\tand.b32 $1, $2, -65536;")
_PTX_UNPAIR_F16 = tl.constexpr(
    "{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, $2;\n\tcvt.f32.f16 $0, l;\n\tcvt.f32.f16 $1, h;\n\t}"
)


@triton.jit
def _unpair_asm(w, PTX: tl.constexpr):
    """``PTX`` on each word: not pure, so that the compiler neither merges two unpackings of
    the same words nor keeps one's float32 result alive for another's uses; the tile then stays
    in registers as packed words (half the registers of float32)."""
    lo, hi = tl.inline_asm_elementwise(
        PTX, "=r,=r,r", [w], dtype=(tl.int32, tl.int32), is_pure=False, pack=1
    )
    return lo.to(tl.float32, bitcast=True), hi.to(tl.float32, bitcast=True)


@triton.jit
def _unpack_tile(w, HALF: tl.constexpr, ASM: tl.constexpr):
    """Words (BLOCK_C, BT/2) of two bf16 (HALF 1) or fp16 (HALF 2) values -> the tile
    (BLOCK_C, BT) in float32, frames in order.  ``ASM`` (the GPU): through ``_unpair_asm``;
    the interpreter runs the same arithmetic in plain ops."""
    if ASM:
        if HALF == 1:
            lo, hi = _unpair_asm(w, _PTX_UNPAIR_BF16)
        else:
            lo, hi = _unpair_asm(w, _PTX_UNPAIR_F16)
    elif HALF == 1:
        lo = (w << 16).to(tl.float32, bitcast=True)
        hi = (w & -65536).to(tl.float32, bitcast=True)
    else:
        lo = (w & 0xFFFF).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        hi = (w >> 16).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
    return tl.interleave(lo, hi)


@triton.jit
def _pair_words(i, offs_c, cmask, T, BT: tl.constexpr):
    """Tile i of a sequence as int32 words of two 16-bit frames (T even): each word's offset
    from the sequence start, in words, and its mask (BLOCK_C, BT/2)."""
    offs_w = i * (BT // 2) + tl.arange(0, BT // 2)
    wmask = cmask[:, None] & (offs_w < T // 2)[None, :]
    return offs_c[:, None] * (T // 2) + offs_w[None, :], wmask


@triton.jit
def _words(ptr):
    """A 16-bit tensor's pointer as a pointer to int32 words of two values."""
    return ptr.to(tl.pointer_type(tl.int32), bitcast=True)


# Inline PTX of ``_pack_tile`` (``CLN_PACK_ASM``): two float32 ($1 low, $2 high) -> one word of
# two 16-bit values, rounded to nearest even as ``.to()`` rounds: one instruction instead of two
# conversions and a byte permute.
_PTX_PACK_BF16 = tl.constexpr("cvt.rn.bf16x2.f32 $0, $2, $1;")
_PTX_PACK_F16 = tl.constexpr("cvt.rn.f16x2.f32 $0, $2, $1;")


@triton.jit
def _pack_tile(y, HALF: tl.constexpr, ASM: tl.constexpr = False):
    """The tile (BLOCK_C, BT) in float32 -> words (BLOCK_C, BT/2) of two rounded 16-bit
    values (``ASM``: by one paired conversion per word, the same bits)."""
    lo, hi = tl.split(tl.reshape(y, (y.shape[0], y.shape[1] // 2, 2)))
    if ASM:
        if HALF == 1:
            w = tl.inline_asm_elementwise(
                _PTX_PACK_BF16, "=r,r,r", [lo, hi], dtype=tl.int32, is_pure=True, pack=1
            )
        else:
            w = tl.inline_asm_elementwise(
                _PTX_PACK_F16, "=r,r,r", [lo, hi], dtype=tl.int32, is_pure=True, pack=1
            )
        return w
    if HALF == 1:
        lo = lo.to(tl.bfloat16).to(tl.int16, bitcast=True)
        hi = hi.to(tl.bfloat16).to(tl.int16, bitcast=True)
    else:
        lo = lo.to(tl.float16).to(tl.int16, bitcast=True)
        hi = hi.to(tl.float16).to(tl.int16, bitcast=True)
    return (lo.to(tl.int32) & 0xFFFF) | (hi.to(tl.int32) << 16)


# Inline PTX of ``_stamp``: the global timer, read only once the int32 operand is available
# (predicated on it, so that ptxas cannot hoist the read above the operand's producer).
_PTX_STAMP = tl.constexpr(
    "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, $1, 2143289345;\n\t"
    "@p mov.u64 $0, %globaltimer;\n\t@!p mov.u64 $0, 0;\n\t}"
)
_PTX_SMID = tl.constexpr("mov.u32 $0, %smid;")


@triton.jit
def _stamp(dep):
    """Diagnostics (``_DIAG_TIMELINE``): the global nanosecond timer once ``dep`` is known."""
    d = dep.to(tl.int32, bitcast=True) if dep.dtype == tl.float32 else dep.to(tl.int32)
    return tl.inline_asm_elementwise(_PTX_STAMP, "=l,r", [d], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def _stamp_record(tl_ptr, row, s0, s1, s2, s3, b, i, dep):
    """Diagnostics: the timeline record of one tile at ``row``: its SM, stamps s0, s1, s2, s3 and
    the output stamp taken here (after ``dep``), its sequence b and tile i (8 int64)."""
    s4 = _stamp(dep)
    sm = tl.inline_asm_elementwise(
        _PTX_SMID, "=r,r", [dep], dtype=tl.int32, is_pure=False, pack=1
    ).to(tl.int64)
    lane = tl.arange(0, 8)
    rec = tl.where(lane == 0, sm, tl.where(lane == 1, s0, tl.where(lane == 2, s1, 0)))
    rec = tl.where(lane == 3, s2, tl.where(lane == 4, s3, tl.where(lane == 5, s4, rec)))
    rec = tl.where(lane == 6, b.to(tl.int64), tl.where(lane == 7, i.to(tl.int64), rec))
    tl.store(tl_ptr + row.to(tl.int64) * 8 + lane, rec)


@triton.jit
def _stagger(k, ns, w):
    """The first wave's programs (ticket k < w) start their loads k * ns apart: all of them
    at once queue one burst of loads (its tiles' loads then take 4-5 us, and nothing is written
    for the first 8 us: bench/timeline_cln.py)."""
    if k < w:
        t0 = _stamp(k)
        until = k.to(tl.int64) * ns
        t = _stamp(k)
        while t - t0 < until:
            t = _stamp(k)


@triton.jit
def _pace(stamp_ptr, k, ps):
    """Program k waits until the launch's start time (the zero kernel's stamp) + k * ps
    picoseconds (``CLN_FWD_PACE_GBPS``)."""
    t0 = tl.load(stamp_ptr, volatile=True)
    until = t0 + (k.to(tl.int64) * ps) // 1000
    t = _stamp(t0)
    while t < until:
        t = _stamp(t)


# Inline PTX of ``_prefetch_rows``: one bulk L2 prefetch of a row segment, when the predicate
# operand is non-zero (no registers or shared memory hold the bytes: the L2 does).
_PTX_PREFETCH = tl.constexpr(
    "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, $3, 0;\n\t"
    "@p cp.async.bulk.prefetch.L2.global [$1], $2;\n\tmov.u32 $0, 0;\n\t}"
)


@triton.jit
def _prefetch_rows(x_base, offs_c, C, T, i, NTB, BT: tl.constexpr, ESIZE: tl.constexpr):
    """Diagnostics / A-B (``CLN_FWD_PREFETCH``): the channel rows of tile ``i`` of the sequence
    at ``x_base`` prefetched into the L2 (``cp.async.bulk.prefetch``, sm_90; T % 16 == 0, so
    every row segment starts and ends on 16 bytes).  Nothing past the sequence's last tile."""
    n = tl.minimum(BT, T - i * BT) * ESIZE
    ok = (offs_c < C) & (i < NTB)
    ptrs = x_base + offs_c.to(tl.int64) * T + i * BT
    tl.inline_asm_elementwise(
        _PTX_PREFETCH,
        "=r,l,r,r",
        [ptrs, tl.zeros_like(offs_c) + n, ok.to(tl.int32)],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


@triton.jit
def _gdc_wait(GDC: tl.constexpr):
    """With ``GDC`` (``CLN_PDL``): wait until the launch before this one in the stream has
    finished and its stores are visible (a no-op when this launch did not overlap it)."""
    if GDC:
        tl.extra.cuda.gdc_wait()


@triton.jit
def _gdc_launch_dependents(GDC: tl.constexpr):
    """With ``GDC``: let the launch queued behind this one start once every program of this
    one has started (it waits with ``_gdc_wait`` before reading what this one writes)."""
    if GDC:
        tl.extra.cuda.gdc_launch_dependents()


@triton.jit
def _zero_kernel(
    scr_ptr, n, BLOCK: tl.constexpr, EARLY: tl.constexpr = False, STAMP: tl.constexpr = False
):
    """Zero ``n`` int64 words: a cLN launch's scratch, launched only where the cLN kernel
    behind it is its programmatic dependent (``_scratch``).  Launched itself as a dependent of
    the launch before it (``CLN_PDL_ZERO``) it first waits for that one to finish: the cLN
    kernel reads its inputs before its own wait, and the scratch may be memory that launch
    still uses.  In a plain launch the wait is a no-op.  With ``EARLY`` (``CLN_PDL_EARLY``) it
    lets the cLN kernel launch first: that one then waits before it reads anything.  With
    ``STAMP`` (``CLN_FWD_PACE_GBPS``) program 0 also stores the global timer, read once its own
    wait is over, in word ``n``: the start time the paced programs count from."""
    if EARLY:
        tl.extra.cuda.gdc_launch_dependents()
        tl.extra.cuda.gdc_wait()
    else:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()  # the cLN kernel waits for these stores itself
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(scr_ptr + offs, tl.zeros([BLOCK], tl.int64), mask=offs < n)
    if STAMP:
        if tl.program_id(0) == 0:
            tl.store(scr_ptr + n, _stamp(n))


@triton.jit
def _tile_start(
    scr_ptr,
    B,
    NTB,
    stagger_ns,
    stagger_w,
    REVERSE: tl.constexpr,
    RUN: tl.constexpr,
    ATOMIC: tl.constexpr,
    STAGGER: tl.constexpr,
    TIMELINE: tl.constexpr,
    GDC: tl.constexpr,
    WAIT_FIRST: tl.constexpr = False,
    SEQG: tl.constexpr = 0,
):
    """Both cLN kernels' start: the ticket (``_ticket``), the first wave's stagger, and with
    ``TIMELINE`` the stamps before the ticket and after it -> (b, i, j, s0, s1).  With ``GDC``
    the launch behind may start (the backward's column sums), and an atomic ticket first waits
    for the scratch's zeroing (with tickets by program id the kernel waits later,
    ``_gdc_wait`` before its first scratch word; with ``WAIT_FIRST``, ``CLN_PDL_EARLY``, it
    waits before anything)."""
    s0 = tl.zeros([], tl.int64)
    s1 = tl.zeros([], tl.int64)
    if TIMELINE:
        s0 = _stamp(tl.program_id(0))
    _gdc_launch_dependents(GDC)
    if ATOMIC or WAIT_FIRST:
        _gdc_wait(GDC)
    k, b, i, j = _ticket(scr_ptr, B, NTB, REVERSE, RUN, ATOMIC, SEQG)
    if STAGGER:
        _stagger(k, stagger_ns, stagger_w)
    if TIMELINE:
        s1 = _stamp(i)
    return b, i, j, s0, s1


@triton.jit
def _frame_mean(
    row0, x, offs_t, tmask, mask, nc, short, SHIFT: tl.constexpr, EVEN: tl.constexpr,
    FAST: tl.constexpr,
):  # fmt: skip
    """Each frame's mean over the tile's channels ``x`` (float32, [channels, frames], zeros
    outside ``mask``).  ``SHIFT`` and ``short`` (a tile within the first C frames,
    ``CLN_FWD_SHIFT``): about the frame's value K in the first channel row ``row0``,
    K + sum(x - K) / nc, so a DC offset does not enter the float32 sum; the row is read again,
    from the cache (taking it out of ``x`` would cost a reduction)."""
    if SHIFT:
        if short:
            k = tl.load(row0 + offs_t, mask=tmask, other=0.0).to(tl.float32)
            d = x - k[None, :]
            if not EVEN:
                d = tl.where(mask, d, 0.0)
            fm = k + _fdiv(tl.sum(d, axis=0), nc * 1.0, FAST)
        else:
            fm = _fdiv(tl.sum(x, axis=0), nc * 1.0, FAST)
    else:
        fm = _fdiv(tl.sum(x, axis=0), nc * 1.0, FAST)
    return fm


@triton.jit
def _cln_fwd_kernel(
    x_ptr,
    y_ptr,
    gamma_ptr,
    beta_ptr,
    mean_ptr,
    rstd_ptr,
    m2_ptr,
    mlast_ptr,
    cnt_ptr,
    m0_ptr,
    M0_ptr,
    scr_ptr,
    tl_ptr,
    B,
    C,
    T,
    NTB,
    NG,
    eps,
    HAS_STATE: tl.constexpr,
    HAS_GAMMA: tl.constexpr,
    HAS_BETA: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
    NUM_CB: tl.constexpr,
    SCR_OFF: tl.constexpr,
    G: tl.constexpr,
    CHUNK: tl.constexpr,
    RUN: tl.constexpr,
    TICKET_ATOMIC: tl.constexpr,
    ABLATE: tl.constexpr,
    PAIRS: tl.constexpr,
    ASM: tl.constexpr,
    TIMELINE: tl.constexpr = False,
    STAGGER: tl.constexpr = False,
    stagger_ns=0,
    stagger_w=0,
    GDC: tl.constexpr = False,
    LD_EV: tl.constexpr = "",
    ST_CM: tl.constexpr = "",
    WAIT_FIRST: tl.constexpr = False,
    AFFINE_EARLY: tl.constexpr = False,
    PACE: tl.constexpr = False,
    pace_ps=0,
    stamp_idx=0,
    PREFETCH: tl.constexpr = False,
    prefetch_tiles=0,
    SPIN: tl.constexpr = 0,
    NEAREST: tl.constexpr = False,
    EVEN: tl.constexpr = False,
    OUT_FMA: tl.constexpr = False,
    PACK: tl.constexpr = False,
    FAST_DIV: tl.constexpr = False,
    MERGED: tl.constexpr = False,
    TSPIN: tl.constexpr = 0,
    STATS: tl.constexpr = True,
    HAS_MLAST: tl.constexpr = False,
    SEQG: tl.constexpr = 0,
    SHIFT: tl.constexpr = False,
):
    b, i, j, s0, s1 = _tile_start(
        scr_ptr, B, NTB, stagger_ns, stagger_w, False, RUN, TICKET_ATOMIC, STAGGER, TIMELINE, GDC,
        WAIT_FIRST, SEQG,
    )  # fmt: skip
    if PACE:  # after _tile_start's wait for the zero kernel (WAIT_FIRST): the stamp is there
        # Paced by the program's place in the launch (the pace needs tiles by program id).
        _pace(scr_ptr + stamp_idx, tl.program_id(0), pace_ps)
    t_ptr = scr_ptr + SCR_OFF + b * NTB  # this sequence's tile aggregate words
    g_ptr = scr_ptr + SCR_OFF + B * NTB + b * NG  # and its group words
    goff = B * NTB + b * NG - b * NTB  # g_ptr - t_ptr in words (the merged prefix reads both)

    b64 = b.to(tl.int64)
    x_base = x_ptr + b64 * C * T
    y_base = y_ptr + b64 * C * T
    offs_t = i * BT + tl.arange(0, BT)
    tmask = offs_t < T
    offs_c = tl.arange(0, BLOCK_C)
    if PREFETCH:  # the tile ``prefetch_tiles`` later in this sequence, into the L2
        _prefetch_rows(
            x_base,
            offs_c,
            C,
            T,
            i + prefetch_tiles,
            NTB,
            BT,
            x_ptr.dtype.element_ty.primitive_bitwidth // 8,
        )

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
        cc, cmask, mask, offs = _cblock(0, offs_c, offs_t, tmask, C, T, BLOCK_C)
        fn = tl.where(tmask, C, 0).to(tl.float32)
        if PAIRS != 0:
            # 16-bit x as int32 words of two frames (T even), held packed until the output.
            woffs, wmask = _pair_words(i, offs_c, cmask, T, BT)
            xw = tl.load(_words(x_base) + woffs, mask=wmask, other=0, eviction_policy=LD_EV)
            x = _unpack_tile(xw, PAIRS, False)
        else:
            x = tl.load(x_base + offs, mask=mask, other=0.0, eviction_policy=LD_EV)
            x = x.to(tl.float32)
        if ABLATE >= 2:
            fm = tl.zeros([BT], tl.float32)
            fM = fn
        else:
            fm = _frame_mean(x_base, x, offs_t, tmask, mask, C, i * BT < C, SHIFT, EVEN, FAST_DIV)
            if PAIRS != 0:
                x = _unpack_tile(xw, PAIRS, ASM)
            if EVEN:  # no padding in the tile: the mask would select every value
                xc = x - fm[None, :]
            else:
                xc = tl.where(mask, x - fm[None, :], 0.0)
            fM = tl.sum(xc * xc, axis=0)
    else:
        # Channel blocks merged per frame with the same Chan rule (exact two-pass per block).
        fn = tl.zeros([BT], tl.float32)
        fm = tl.zeros([BT], tl.float32)
        fM = tl.zeros([BT], tl.float32)
        for cb in range(NUM_CB):
            cc, cmask, mask, offs = _cblock(cb, offs_c, offs_t, tmask, C, T, BLOCK_C)
            xb = tl.load(x_base + offs, mask=mask, other=0.0)
            xb = xb.to(tl.float32)
            nc = tl.minimum(C - cb * BLOCK_C, BLOCK_C)
            row0 = x_base + cb * BLOCK_C * T  # the block's first channel
            bm = _frame_mean(row0, xb, offs_t, tmask, mask, nc, i * BT < C, SHIFT, False, False)
            bxc = tl.where(mask, xb - bm[None, :], 0.0)
            bM = tl.sum(bxc * bxc, axis=0)
            bn = tl.where(tmask, nc, 0).to(tl.float32)
            fn, fm, fM = _chan(fn, fm, fM, bn, bm, bM)

    # ---- in-tile scan, publication, prefix ---------------------------------------------
    if not (TICKET_ATOMIC or WAIT_FIRST):  # else _tile_start has waited
        _gdc_wait(GDC)  # the tile is loaded and reduced; the scratch must be zeroed by now
    if ABLATE >= 3:
        sn, sm, sM = fn, fm, fM
        an, am, aM = cnt0, m0, M0
    else:
        # Inclusive scan over frames; padding frames (n = 0) are identities, so the last
        # element is the tile aggregate.
        if FAST_DIV:
            sn, sm, sM = tl.associative_scan((fn, fm, fM), 0, _chan_fast)
        else:
            sn, sm, sM = tl.associative_scan((fn, fm, fM), 0, _chan)
        an, am, aM = _last3(sn, sm, sM, BT)
        tl.atomic_xchg(t_ptr + i, _pack_fwd(am, aM), sem="relaxed")
        if i % G == G - 1:
            _fwd_close_group(t_ptr, g_ptr, i, C, BT, G, SPIN, FAST_DIV, TSPIN)
    if TIMELINE:
        s2 = _stamp(aM)
    # gamma / beta read before the prefix wait (``CLN_FWD_AFFINE_EARLY``): their L2 round trip
    # then overlaps the wait instead of following it.
    if AFFINE_EARLY and NUM_CB == 1:
        if HAS_GAMMA:
            gam = tl.load(gamma_ptr + offs_c, mask=offs_c < C, other=0.0).to(tl.float32)
        if HAS_BETA:
            bet = tl.load(beta_ptr + offs_c, mask=offs_c < C, other=0.0).to(tl.float32)
    if ABLATE >= 1:
        pn, pm, pM = cnt0, m0, M0
    else:
        if NEAREST:  # the nearest earlier tile's word first (tile 0: its own, published)
            _spin_word(t_ptr + tl.maximum(i - 1, 0), True, SPIN)
        pn, pm, pM = _fwd_prefix(
            t_ptr, g_ptr, i, C, cnt0, m0, M0, BT, G, CHUNK, SPIN, FAST_DIV, MERGED, goff, TSPIN
        )  # fmt: skip
    if TIMELINE:
        s3 = _stamp(pM)

    # ---- per-frame final statistics and the output ----------------------------------
    inn, inm, inM = _chan_div(pn, pm, pM, an, am, aM, FAST_DIV)
    tl.store(m2_ptr + b, inM, mask=i == NTB - 1)
    if HAS_MLAST:  # padding frames are identities: the tile's inclusive mean is frame T - 1's
        tl.store(mlast_ptr + b, inm, mask=i == NTB - 1)
    n_t, m_t, M_t = _chan_div(pn, pm, pM, sn, sm, sM, FAST_DIV)
    r_t = _fdiv(1.0, tl.sqrt(_fdiv(M_t, tl.maximum(n_t, 1.0), FAST_DIV) + eps), FAST_DIV)
    if STATS:  # only a backward reads them (``cln_forward``'s ``mean`` / ``rstd``)
        st_offs = b64 * T + offs_t
        tl.store(mean_ptr + st_offs, m_t, mask=tmask)
        tl.store(rstd_ptr + st_offs, r_t, mask=tmask)
    for cb in range(NUM_CB):
        cc, cmask, mask, offs = _cblock(cb, offs_c, offs_t, tmask, C, T, BLOCK_C)
        if NUM_CB != 1:
            xb = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
        elif PAIRS != 0:
            xb = _unpack_tile(xw, PAIRS, ASM)  # the tile is still in registers, packed
        else:
            xb = x  # the tile is still in registers
        if OUT_FMA:  # 16-bit inputs: one FMA (see CLN_FWD_OUT_FMA_16BIT)
            out = xb * r_t[None, :] - (m_t * r_t)[None, :]
        else:
            out = (xb - m_t[None, :]) * r_t[None, :]
        if HAS_GAMMA:
            if not (AFFINE_EARLY and NUM_CB == 1):
                gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
            out = out * gam[:, None]
        if HAS_BETA:
            if not (AFFINE_EARLY and NUM_CB == 1):
                bet = tl.load(beta_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
            out = out + bet[:, None]
        if NUM_CB == 1 and PAIRS != 0:
            tl.store(
                _words(y_base) + woffs,
                _pack_tile(out, PAIRS, PACK),
                mask=wmask,
                cache_modifier=ST_CM,
            )
        else:
            tl.store(y_base + offs, out.to(y_ptr.dtype.element_ty), mask=mask, cache_modifier=ST_CM)
    if TIMELINE:
        _stamp_record(tl_ptr, b * NTB + i, s0, s1, s2, s3, b, i, j)


# ============================================================================================
# cLN backward
# ============================================================================================
@triton.jit
def _bwd_fold3(ea, eb, ep, wa, wb, wp, need, FUSE: tl.constexpr):
    sa, sb, sp = _sum3(
        tl.where(need, _unpack_bwd(wa), 0.0),
        tl.where(need, _unpack_bwd(wb), 0.0),
        tl.where(need, _unpack_bwd(wp), 0.0),
        FUSE,
    )
    return sa + ea, sb + eb, sp + ep


@triton.jit
def _bwd_close_group(
    t_ptr,
    g_ptr,
    j,
    NTB,
    NG,
    G: tl.constexpr,
    OVERLAP: tl.constexpr,
    FUSE: tl.constexpr,
    SPIN: tl.constexpr,
):
    """Tile with processing index j closes its group: sum the group's G words of each kind."""
    lane = tl.arange(0, G)
    idx = j - (G - 1) + lane
    allv = lane >= 0
    wa, wb, wp = _spin_load3(t_ptr, NTB, idx, allv, OVERLAP, SPIN)
    z = tl.zeros([], tl.float32)
    ga, gb, gp = _bwd_fold3(z, z, z, wa, wb, wp, allv, FUSE)
    gi = j // G
    tl.atomic_xchg(g_ptr + gi, _pack_bwd(ga), sem="relaxed")
    tl.atomic_xchg(g_ptr + NG + gi, _pack_bwd(gb), sem="relaxed")
    tl.atomic_xchg(g_ptr + 2 * NG + gi, _pack_bwd(gp), sem="relaxed")


@triton.jit
def _bwd_suffix(
    t_ptr,
    g_ptr,
    j,
    NTB,
    NG,
    G: tl.constexpr,
    CHUNK: tl.constexpr,
    OVERLAP: tl.constexpr,
    FUSE: tl.constexpr,
    SPIN: tl.constexpr,
):
    """Exclusive suffix sums (S_a, S_b, P) of the tile with processing index j (the tiles
    processed before it are the later ones in time): earlier groups, then its own group.
    ``OVERLAP``: every load in flight together (the own group's words issued before the group
    words are waited for, the three kinds at once): one round trip instead of six.  (The last
    round of group words and the own group's words in one wait and one sum, as the forward's
    ``CLN_FWD_PREFIX_MERGED``, was slower: fwd+bwd +0.4-3.1 us at four target cases, NOTES
    39.)"""
    ea = tl.zeros([], tl.float32)
    eb = tl.zeros([], tl.float32)
    ep = tl.zeros([], tl.float32)
    gi = j // G
    lane_g = tl.arange(0, G)
    qt = gi * G + lane_g
    need_t = qt < j
    if OVERLAP:
        ta, tb, tp = _load3(t_ptr, NTB, qt, need_t)
    lane = tl.arange(0, CHUNK)
    for c0 in range(0, gi, CHUNK):
        q = c0 + lane
        need = q < gi
        wa, wb, wp = _spin_load3(g_ptr, NG, q, need, OVERLAP, SPIN)
        ea, eb, ep = _bwd_fold3(ea, eb, ep, wa, wb, wp, need, FUSE)
    if OVERLAP:
        ta, tb, tp = _spin3_from(ta, tb, tp, t_ptr, NTB, qt, need_t, SPIN)
    else:
        ta, tb, tp = _spin_load3(t_ptr, NTB, qt, need_t, False, SPIN)
    return _bwd_fold3(ea, eb, ep, ta, tb, tp, need_t, FUSE)


@triton.jit
def _bwd_late_partials(
    xt,
    dyt,
    mu,
    r,
    dgp_ptr,
    dbp_ptr,
    prow,
    offs_c,
    cmask,
    HAS_DG: tl.constexpr,
    HAS_DB: tl.constexpr,
    PAIRS: tl.constexpr,
    ASM: tl.constexpr,
    SHARE: tl.constexpr = False,
    FUSE: tl.constexpr = False,
):
    """A tile's dgamma / dbeta partials (one channel block, channels ``offs_c``) after its
    publication (``CLN_BWD_LATE_PARTIALS``) from x and dy as the kernel holds them: packed
    words (``PAIRS``, unpacked afresh here: dy once for both sums where ``SHARE``, see
    ``CLN_BWD_SHARE_16BIT``) or float32 tiles."""
    if PAIRS != 0 and SHARE:
        dy = _unpack_tile(dyt, PAIRS, ASM)
        if HAS_DG:
            ug = dy * (_unpack_tile(xt, PAIRS, ASM) - mu[None, :]) * r[None, :]
            if HAS_DB:
                sdg, sdb = _sum2(ug, dy, 1, FUSE)
                tl.store(dgp_ptr + prow + offs_c, sdg, mask=cmask)
                tl.store(dbp_ptr + prow + offs_c, sdb, mask=cmask)
            else:
                tl.store(dgp_ptr + prow + offs_c, tl.sum(ug, axis=1), mask=cmask)
        elif HAS_DB:
            tl.store(dbp_ptr + prow + offs_c, tl.sum(dy, axis=1), mask=cmask)
    elif PAIRS != 0:
        if HAS_DB:
            tl.store(
                dbp_ptr + prow + offs_c, tl.sum(_unpack_tile(dyt, PAIRS, ASM), axis=1), mask=cmask
            )
        if HAS_DG:
            u = _unpack_tile(dyt, PAIRS, ASM) * (_unpack_tile(xt, PAIRS, ASM) - mu[None, :])
            tl.store(dgp_ptr + prow + offs_c, tl.sum(u * r[None, :], axis=1), mask=cmask)
    else:
        if HAS_DG:
            u = dyt * (xt - mu[None, :])
            tl.store(dgp_ptr + prow + offs_c, tl.sum(u * r[None, :], axis=1), mask=cmask)
        if HAS_DB:
            tl.store(dbp_ptr + prow + offs_c, tl.sum(dyt, axis=1), mask=cmask)


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
    tl_ptr,
    B,
    C,
    T,
    NTB,
    NG,
    PW,
    HAS_COUNT: tl.constexpr,
    HAS_GAMMA: tl.constexpr,
    HAS_DG: tl.constexpr,
    HAS_DB: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BT: tl.constexpr,
    NUM_CB: tl.constexpr,
    SCR_OFF: tl.constexpr,
    G: tl.constexpr,
    CHUNK: tl.constexpr,
    RUN: tl.constexpr,
    TICKET_ATOMIC: tl.constexpr,
    PAIRS: tl.constexpr,
    ASM: tl.constexpr,
    OVERLAP: tl.constexpr,
    FUSE: tl.constexpr,
    LATE: tl.constexpr,
    ABLATE: tl.constexpr,
    TIMELINE: tl.constexpr = False,
    STAGGER: tl.constexpr = False,
    stagger_ns=0,
    stagger_w=0,
    GDC: tl.constexpr = False,
    LD_EV: tl.constexpr = "",
    ST_CM: tl.constexpr = "",
    WAIT_FIRST: tl.constexpr = False,
    AFFINE_EARLY: tl.constexpr = False,
    SPIN: tl.constexpr = 0,
    NEAREST: tl.constexpr = False,
    PACK: tl.constexpr = False,
    DX_FMA: tl.constexpr = False,
    SHARE: tl.constexpr = False,
    FAST_DIV: tl.constexpr = False,
    SEQG: tl.constexpr = 0,
):
    # Tickets from the last tile backwards: a tile waits only on later tiles (smaller tickets).
    b, i, j, s0, s1 = _tile_start(
        scr_ptr, B, NTB, stagger_ns, stagger_w, True, RUN, TICKET_ATOMIC, STAGGER, TIMELINE, GDC,
        WAIT_FIRST, SEQG,
    )  # fmt: skip
    tile = b * NTB + i
    prow = tile.to(tl.int64) * PW  # this tile's row of dgamma / dbeta partials
    t_ptr = scr_ptr + SCR_OFF + 3 * (b * NTB)  # a, b, p words by processing index: 3 x NTB
    g_ptr = scr_ptr + SCR_OFF + 3 * (B * NTB) + 3 * (b * NG)  # group words: 3 x NG

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
    if NUM_CB == 1:
        cc, cmask, mask, offs = _cblock(0, offs_c, offs_t, tmask, C, T, BLOCK_C)
        if PAIRS != 0:
            # 16-bit x and dy as int32 words of two frames, held packed until dx (see the
            # forward).
            woffs, wmask = _pair_words(i, offs_c, cmask, T, BT)
            xw = tl.load(_words(x_base) + woffs, mask=wmask, other=0, eviction_policy=LD_EV)
            dyw = tl.load(_words(dy_base) + woffs, mask=wmask, other=0, eviction_policy=LD_EV)
            xt, dyt = xw, dyw  # the tile as held (for _bwd_late_partials)
        else:
            x = tl.load(x_base + offs, mask=mask, other=0.0, eviction_policy=LD_EV)
            dy = tl.load(dy_base + offs, mask=mask, other=0.0, eviction_policy=LD_EV)
            x = x.to(tl.float32)
            dy = dy.to(tl.float32)
            xt, dyt = x, dy
        if ABLATE >= 2:
            # Diagnostic: the tile is loaded and held as in the kernel, but not summed.
            G1 = tl.zeros([BT], tl.float32)
            G2 = tl.zeros([BT], tl.float32)
        elif PAIRS != 0 and SHARE:
            # dy unpacked once: gd = dy * gamma feeds both channel sums (CLN_BWD_SHARE_16BIT).
            dy = _unpack_tile(dyw, PAIRS, ASM)
            if HAS_GAMMA:
                gam = tl.load(gamma_ptr + offs_c, mask=cmask, other=0.0).to(tl.float32)
                gd = dy * gam[:, None]
            else:
                gd = dy
            if HAS_DB and LATE == 0:
                tl.store(dbp_ptr + prow + offs_c, tl.sum(dy, axis=1), mask=cmask)
            xf = _unpack_tile(xw, PAIRS, ASM)
            G1, G2 = _sum2(gd, gd * (xf - mu[None, :]), 0, FUSE)
            G2 = r * G2
            if HAS_DG and LATE == 0:
                u = dy * (xf - mu[None, :])
                tl.store(dgp_ptr + prow + offs_c, tl.sum(u * r[None, :], axis=1), mask=cmask)
        elif PAIRS != 0:
            # dy's sums first, then u from fresh unpackings: at most one float32 tile is live
            # beside the words.
            dy = _unpack_tile(dyw, PAIRS, False)
            if HAS_GAMMA:
                gam = tl.load(gamma_ptr + offs_c, mask=cmask, other=0.0).to(tl.float32)
                G1 = tl.sum(dy * gam[:, None], axis=0)
            else:
                G1 = tl.sum(dy, axis=0)
            if HAS_DB and LATE == 0:
                tl.store(dbp_ptr + prow + offs_c, tl.sum(dy, axis=1), mask=cmask)
            u = _unpack_tile(dyw, PAIRS, ASM) * (_unpack_tile(xw, PAIRS, ASM) - mu[None, :])
            if HAS_GAMMA:
                G2 = r * tl.sum(u * gam[:, None], axis=0)
            else:
                G2 = r * tl.sum(u, axis=0)
            if HAS_DG and LATE == 0:
                tl.store(dgp_ptr + prow + offs_c, tl.sum(u * r[None, :], axis=1), mask=cmask)
        else:
            # One tile-sized temporary u = dy*(x-mu): G2 = r*sum_c gamma*u and the dgamma
            # partial sum_t u*r both come from it, so only x, dy and u are live at the peak.
            u = dy * (x - mu[None, :])
            if HAS_GAMMA:
                gam = tl.load(gamma_ptr + offs_c, mask=cmask, other=0.0).to(tl.float32)
                G1 = tl.sum(dy * gam[:, None], axis=0)
                G2 = r * tl.sum(u * gam[:, None], axis=0)
            else:
                G1 = tl.sum(dy, axis=0)
                G2 = r * tl.sum(u, axis=0)
            if HAS_DG and LATE == 0:
                tl.store(dgp_ptr + prow + offs_c, tl.sum(u * r[None, :], axis=1), mask=cmask)
            if HAS_DB and LATE == 0:
                tl.store(dbp_ptr + prow + offs_c, tl.sum(dy, axis=1), mask=cmask)
    else:
        G1 = tl.zeros([BT], tl.float32)
        G2 = tl.zeros([BT], tl.float32)
        for cb in range(NUM_CB):
            cc, cmask, mask, offs = _cblock(cb, offs_c, offs_t, tmask, C, T, BLOCK_C)
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
            if HAS_DG and LATE == 0:
                tl.store(dgp_ptr + prow + cc, tl.sum(ub * r[None, :], axis=1), mask=cmask)
            if HAS_DB and LATE == 0:
                tl.store(dbp_ptr + prow + cc, tl.sum(dyb, axis=1), mask=cmask)
        G2 = r * G2

    a = _fdiv(r * G1, n_t, FAST_DIV)
    bq = _fdiv(r * r * G2, n_t, FAST_DIV)
    pv = bq * (mu - K)
    if TIMELINE:
        s2 = _stamp(tl.sum(pv, axis=0))  # the tile's sums known

    # ---- publish the tile's sums, close a group, get the exclusive suffix ---------------
    if not (TICKET_ATOMIC or WAIT_FIRST):  # else _tile_start has waited
        _gdc_wait(GDC)  # as in the forward: the tile is summed, the scratch must be zeroed
    if ABLATE >= 1:
        ea = tl.zeros([], tl.float32)
        eb = tl.zeros([], tl.float32)
        ep = tl.zeros([], tl.float32)
    else:
        ta, tb, tp = _sum3(a, bq, pv, FUSE)
        tl.atomic_xchg(t_ptr + j, _pack_bwd(ta), sem="relaxed")
        tl.atomic_xchg(t_ptr + NTB + j, _pack_bwd(tb), sem="relaxed")
        tl.atomic_xchg(t_ptr + 2 * NTB + j, _pack_bwd(tp), sem="relaxed")
    if NUM_CB == 1 and LATE == 1 and ABLATE < 2:
        _bwd_late_partials(
            xt, dyt, mu, r, dgp_ptr, dbp_ptr, prow, offs_c, cmask, HAS_DG, HAS_DB, PAIRS, ASM,
            SHARE, FUSE,
        )
    if ABLATE < 1:
        if j % G == G - 1:
            _bwd_close_group(t_ptr, g_ptr, j, NTB, NG, G, OVERLAP, FUSE, SPIN)
    if NUM_CB == 1 and LATE == 2 and ABLATE < 2:
        _bwd_late_partials(
            xt, dyt, mu, r, dgp_ptr, dbp_ptr, prow, offs_c, cmask, HAS_DG, HAS_DB, PAIRS, ASM,
            SHARE, FUSE,
        )
    # gamma read again before the suffix wait (``CLN_BWD_AFFINE_EARLY``), as the forward does.
    if AFFINE_EARLY and NUM_CB == 1 and HAS_GAMMA:
        gdx = tl.load(gamma_ptr + offs_c, mask=offs_c < C, other=0.0).to(tl.float32)
    if ABLATE < 1:
        if NEAREST:  # the p word of the tile processed just before (j = 0: its own)
            _spin_word(t_ptr + 2 * NTB + tl.maximum(j - 1, 0), False, SPIN)
        ea, eb, ep = _bwd_suffix(t_ptr, g_ptr, j, NTB, NG, G, CHUNK, OVERLAP, FUSE, SPIN)
    if TIMELINE:
        s3 = _stamp(ep)  # the suffix known
    if ABLATE >= 3:
        Sa = tl.zeros([BT], tl.float32)
        Sb = r  # keeps x in dx
        P = tl.zeros([BT], tl.float32)
    elif FUSE:
        Sa, Sb, P = tl.associative_scan((a, bq, pv), 0, _add3, reverse=True)
    else:
        Sa = tl.cumsum(a, axis=0, reverse=True)
        Sb = tl.cumsum(bq, axis=0, reverse=True)
        P = tl.cumsum(pv, axis=0, reverse=True)
    Sa = Sa + ea
    Sb = Sb + eb
    P = P + ep

    # ---- dx = r*g - S_a - (x-K)*S_b + P ------------------------------------------------
    for cb in range(NUM_CB):
        cc, cmask, mask, offs = _cblock(cb, offs_c, offs_t, tmask, C, T, BLOCK_C)
        if NUM_CB == 1 and PAIRS != 0:
            xb = _unpack_tile(xw, PAIRS, ASM)  # still in registers, packed
            dyb = _unpack_tile(dyw, PAIRS, ASM)
        elif NUM_CB == 1:
            xb = x  # still in registers
            dyb = dy
        else:
            xb = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
            dyb = tl.load(dy_base + offs, mask=mask, other=0.0).to(tl.float32)
        if NUM_CB != 1 and LATE != 0 and ABLATE < 2:
            # Channel blocks: the partials from the second read, off the look-back's chain
            # (see ``CLN_BWD_LATE_PARTIALS``).
            _bwd_late_partials(
                xb, dyb, mu, r, dgp_ptr, dbp_ptr, prow, cc, cmask, HAS_DG, HAS_DB, 0, ASM
            )
        if HAS_GAMMA:
            if AFFINE_EARLY and NUM_CB == 1:
                gam = gdx
            else:
                gam = tl.load(gamma_ptr + cc, mask=cmask, other=0.0).to(tl.float32)
            gb = dyb * gam[:, None]
        else:
            gb = dyb
        if DX_FMA:  # 16-bit inputs: two FMAs after the product (see CLN_BWD_DX_FMA_16BIT)
            dx = r[None, :] * gb + (xb * (-Sb)[None, :] + (K * Sb + P - Sa)[None, :])
        else:
            dx = r[None, :] * gb - Sa[None, :] - (xb - K) * Sb[None, :]
            dx = dx + P[None, :]
        if NUM_CB == 1 and PAIRS != 0:
            tl.store(
                _words(dx_base) + woffs,
                _pack_tile(dx, PAIRS, PACK),
                mask=wmask,
                cache_modifier=ST_CM,
            )
        else:
            tl.store(
                dx_base + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask, cache_modifier=ST_CM
            )
    if TIMELINE:
        _stamp_record(tl_ptr, b * NTB + i, s0, s1, s2, s3, b, i, j)


# ============================================================================================
# Fixed-order column sums of per-program partials (dgamma, dbeta, dw)
# ============================================================================================
@triton.jit
def _colsum_kernel(
    in_ptr,
    out0_ptr,
    out1_ptr,
    K,
    W,
    SPLIT,
    seg,
    ldo,
    BLOCK_R: tl.constexpr,
    BLOCK_W: tl.constexpr,
    GDC: tl.constexpr = False,
):
    """Program (w, s): the sums of rows [s*seg, (s+1)*seg) of columns [w*BLOCK_W, ...) of
    the (K, W) float32 ``in``; columns below SPLIT go to out0[s*ldo + col], the others to
    out1[s*ldo + col - SPLIT].  The order of the additions depends only on the arguments.
    With ``GDC`` (launched behind the kernel that writes ``in``, ``CLN_PDL``) it waits for that
    kernel before its first load."""
    _gdc_launch_dependents(GDC)
    _gdc_wait(GDC)
    cols = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    cmask = cols < W
    r0 = tl.program_id(1) * seg
    r1 = tl.minimum(K, r0 + seg)
    lane = tl.arange(0, BLOCK_R)
    acc = tl.zeros([BLOCK_R, BLOCK_W], tl.float32)
    for r in range(r0, r1, BLOCK_R):
        rows = r + lane
        m = (rows < r1)[:, None] & cmask[None, :]
        acc += tl.load(in_ptr + rows.to(tl.int64)[:, None] * W + cols[None, :], mask=m, other=0.0)
    tot = tl.sum(acc, axis=0)
    o = tl.program_id(1).to(tl.int64) * ldo
    tl.store(out0_ptr + o + cols, tot, mask=cmask & (cols < SPLIT))
    tl.store(out1_ptr + o + (cols - SPLIT), tot, mask=cmask & (cols >= SPLIT))


def _colsum_split(K: int, nwb: int) -> tuple[int, int]:
    """(segments S, rows per segment) of a column sum over K rows in ``nwb`` column blocks."""
    if K <= COLSUM_ONE_LAUNCH_ROWS:
        return 1, K
    s = max(1, min(-(-K // COLSUM_MIN_SEG), -(-COLSUM_PROGRAMS // nwb)))
    seg = -(-K // s)
    return -(-K // seg), seg


def _colsum_launch(
    src: Tensor,
    o0: Tensor,
    o1: Tensor,
    S: int,
    seg: int,
    split: int,
    ldo: int,
    block_w: int,
    nwb: int,
    pdl: bool,
) -> None:
    K, W = src.shape
    # The rows of a segment in as few loads as fit (one at the target shapes' segments of at
    # most 64 rows): each loop round waits for its load before the next is issued.
    block_r = min(max(2, _next_pow2(seg)), COLSUM_BLOCK_R)
    _COLSUM[(nwb, S)](
        src,
        o0,
        o1,
        K,
        W,
        split,
        seg,
        ldo,
        BLOCK_R=block_r,
        BLOCK_W=block_w,
        GDC=pdl,
        num_warps=4,
        **_pdl_kw(pdl),
    )


def colsum(parts: Tensor, out0: Tensor, out1: Tensor | None = None, pdl: bool = False) -> None:
    """Column sums of the float32 (K, W) ``parts`` in a fixed order (bitwise reproducible):
    columns [0, len(out0)) into ``out0``, the rest into ``out1``, both 1-D float32.  ``pdl``:
    launched as programmatic dependents (``CLN_PDL``) of the kernel that just wrote ``parts``
    on this stream (which must call ``griddepcontrol.launch_dependents`` or simply exit)."""
    K, W = parts.shape
    split = out0.numel()
    held = split + (0 if out1 is None else out1.numel())
    if held != W:
        raise ValueError(f"colsum: the outputs hold {held} columns, the partials have {W}")
    out1 = out0 if out1 is None else out1
    block_w = min(128, max(2, _next_pow2(W)))
    nwb = _cdiv(W, block_w)
    S, seg = _colsum_split(K, nwb)
    if S == 1:
        _colsum_launch(parts, out0, out1, 1, K, split, 0, block_w, nwb, pdl)
        return
    mid = torch.empty((S, W), dtype=torch.float32, device=parts.device)
    _colsum_launch(parts, mid, mid, S, seg, W, W, block_w, nwb, pdl)
    _colsum_launch(mid, out0, out1, 1, S, split, 0, block_w, nwb, pdl)


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
    min_warps: int = 2,
) -> tuple[int, int, int, int, int | None]:
    """(BLOCK_C, BT, NUM_CB, num_warps, maxnreg) for a cLN tile.

    BLOCK_C = next_pow2(C) when it fits in registers, else channel blocks.  BT fills the tile
    budget, is at least ``min_row_bytes`` per channel row (DRAM efficiency) and at most
    next_pow2(T); it is halved while the grid would have fewer than ``min_tiles_per_sm`` tiles
    per SM.  num_warps = elements / (32 * ept), within [min_warps, 16].
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
    num_warps = _clamp(_next_pow2(max(1, block_c * bt // (32 * e))), min_warps, 16)
    return block_c, bt, num_cb, num_warps, (maxnreg if aligned else maxnreg_unaligned)


def _prefix_vector(x: Tensor, num_warps: int, words: int) -> int:
    # On the GPU at least one word per thread: a 1-D layout of that many elements then has no
    # replication across warps (every word is loaded by exactly one thread).
    n = _next_pow2(max(2, words))
    if x.device.type == "cuda":
        n = max(n, 32 * num_warps)
    return n


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
    group: int  # G: tiles per group of the two-level prefix
    ng: int  # groups per sequence
    chunk: int  # group words per vector round
    pairs: int  # PAIRS: the 16-bit tile held as packed words (see ``_pairs``)


def _pairs(x: Tensor, forward: bool, num_cb: int) -> int:
    """``PAIRS`` of a 16-bit tile: 1 bf16, 2 fp16; 0 = not packed (other dtypes, the knob
    off, channel blocks, which re-read the tile, or T % 16 != 0: no vector loads there, and
    the launch takes its own register cap)."""
    knob = CLN_FWD_PAIRS if forward else CLN_BWD_PAIRS
    if not knob or num_cb != 1 or x.shape[-1] % 16:
        return 0
    return {torch.bfloat16: 1, torch.float16: 2}.get(x.dtype, 0)


def _min_row_bytes(forward: bool, half: bool) -> int:
    knob = None if forward else (CLN_BWD_MIN_ROW_BYTES_16BIT if half else CLN_BWD_MIN_ROW_BYTES)
    return CLN_MIN_ROW_BYTES if knob is None else knob


def _cln_plan(x: Tensor, forward: bool) -> _ClnPlan:
    """The forward's or the backward's launch plan for ``x`` (one rule, two sets of knobs)."""
    B, C, T = x.shape
    _check_cln_size(C, T)
    half = x.element_size() == 2
    if forward:
        ept = CLN_FWD_EPT_16BIT if half else CLN_FWD_EPT
        maxnreg = CLN_FWD_MAXNREG_16BIT if half else CLN_FWD_MAXNREG
    else:
        ept, maxnreg = CLN_BWD_EPT, CLN_BWD_MAXNREG
        if half and CLN_BWD_EPT_16BIT is not None:
            ept = CLN_BWD_EPT_16BIT
    num_sms = _num_sms(x.device.type, x.device.index)
    max_block_c = CLN_MAX_BLOCK_C
    if not forward and CLN_BWD_MAX_BLOCK_C is not None:
        max_block_c = CLN_BWD_MAX_BLOCK_C

    def config(tile: int, ept: int, maxnreg: int | None, min_row: int):
        return _cln_config(
            B,
            C,
            T,
            x.element_size(),
            num_sms,
            tile,
            ept,
            CLN_EPT_UNALIGNED,
            maxnreg,
            CLN_FWD_MAXNREG_UNALIGNED if forward else CLN_BWD_MAXNREG_UNALIGNED,
            max_block_c,
            CLN_LOOP_BLOCK_C,
            min_row,
            CLN_MAX_BT,
            CLN_MIN_TILES_PER_SM,
            CLN_FWD_MIN_WARPS if forward else CLN_BWD_MIN_WARPS,
        )

    tile = CLN_FWD_TILE if forward else CLN_BWD_TILE
    if forward and half and CLN_FWD_TILE_16BIT is not None:
        tile = CLN_FWD_TILE_16BIT
    small, small_row = {
        2: (CLN_BWD_TILE_16BIT, CLN_BWD_TILE_16BIT_MIN_ROW_BYTES),
        4: (CLN_BWD_TILE_32BIT, CLN_BWD_TILE_32BIT_MIN_ROW_BYTES),
    }.get(x.element_size(), (None, 0))
    if not forward and small is not None:
        # Only where the smaller tile's rows stay that long.
        if small // max(2, _next_pow2(C)) * x.element_size() >= small_row:
            tile = small
    min_row = _min_row_bytes(forward, half)
    block_c, bt, num_cb, num_warps, maxnreg = config(tile, ept, maxnreg, min_row)
    # The forward's wide rows (``CLN_FWD_WIDE_*``), where the grid stays large enough.
    wbt = CLN_FWD_WIDE_ROW_BYTES // 4
    if (
        forward
        and x.element_size() == 4
        and T % 16 == 0
        and num_cb == 1
        and bt < wbt <= T
        and block_c * wbt <= CLN_FWD_WIDE_TILE
        and B * -(-T // wbt) >= CLN_MIN_TILES_PER_SM * num_sms
    ):
        wide = config(block_c * wbt, CLN_FWD_WIDE_EPT, CLN_FWD_WIDE_MAXNREG, 4 * wbt)
        block_c, bt, num_cb, num_warps, maxnreg = wide
    pairs = _pairs(x, forward, num_cb)
    if pairs:  # T % 16 == 0: the aligned launch, whose cap the packed kernel replaces
        maxnreg = CLN_FWD_MAXNREG_PAIRS if forward else CLN_BWD_MAXNREG_PAIRS
    ntb = _cdiv(T, bt)
    group = _prefix_vector(x, num_warps, CLN_GROUP)
    return _ClnPlan(
        block_c,
        bt,
        num_cb,
        num_warps,
        maxnreg,
        ntb,
        B * ntb,
        group,
        _cdiv(ntb, group),
        _prefix_vector(x, num_warps, CLN_CHUNK),
        pairs,
    )


#: Programs of a cLN launch resident at once, by (direction, plan, dtype, device), from the
#: registers of the kernel compiled for it (``_note_first_wave``).
_FIRST_WAVE: dict[tuple[object, ...], int] = {}


def _resident_per_sm(
    n_regs: int, num_warps: int, shared: int, regs_sm: int, threads_sm: int, smem_sm: int
) -> int:
    """Blocks of ``num_warps`` warps, ``n_regs`` registers per thread and ``shared`` bytes of
    shared memory that one SM with ``regs_sm`` registers, ``threads_sm`` threads and ``smem_sm``
    bytes of shared memory holds at once (registers are allocated per warp in units of 256,
    shared memory with 1 KiB reserved per block; at most 32 blocks)."""
    warp_regs = -(-max(n_regs, 1) * 32 // 256) * 256
    by_regs = (regs_sm // warp_regs) // num_warps
    by_threads = threads_sm // (32 * num_warps)
    by_smem = smem_sm // (shared + 1024) if shared and smem_sm else 32
    return max(1, min(by_regs, by_threads, by_smem, 32))


@functools.lru_cache(maxsize=16)
def _sm_limits(index: int) -> tuple[int, int, int]:
    """(registers, threads, shared-memory bytes) of one SM of CUDA device ``index``."""
    props = torch.cuda.get_device_properties(index)
    return (
        int(getattr(props, "regs_per_multiprocessor", 65536)),
        int(props.max_threads_per_multi_processor),
        int(getattr(props, "shared_memory_per_multiprocessor", 0)),
    )


def _wave_key(x: Tensor, p: _ClnPlan, direction: str) -> tuple[object, ...]:
    return (direction, p, x.dtype, x.device.index)


def _wave_size(x: Tensor, p: _ClnPlan, n_regs: int, shared: int) -> int:
    """Programs of plan ``p`` resident at once on ``x``'s GPU, at ``n_regs`` registers per
    thread and ``shared`` bytes of shared memory per program."""
    idx = x.device.index
    return _resident_per_sm(n_regs, p.num_warps, shared, *_sm_limits(idx)) * _num_sms("cuda", idx)


def _first_wave(x: Tensor, p: _ClnPlan, direction: str) -> int:
    """Programs of plan ``p`` resident at once: as noted from the compiled kernel
    (``_note_first_wave``), or before the first launch from the register cap (or all
    registers)."""
    w = _FIRST_WAVE.get(_wave_key(x, p, direction))
    return _wave_size(x, p, p.maxnreg or 255, 0) if w is None else w


def _spread_wave(x: Tensor, p: _ClnPlan, direction: str) -> int | None:
    """The first wave W of a launch whose starts may be spread (the stagger, the forward's
    pace), or None where the grid has fewer than ``CLN_STAGGER_MIN_WAVES`` waves: there is no
    convoy to break, and a spread would delay all of it."""
    w = _first_wave(x, p, direction)
    return None if p.nt < CLN_STAGGER_MIN_WAVES * w else w


def _stagger_args(x: Tensor, p: _ClnPlan, ns: int, direction: str) -> tuple[int, int] | None:
    """(ns between tickets, first-wave tickets W) of a cLN launch, or None (off: ``ns`` 0, the
    interpreter, tickets in runs, where it was never measured, or a grid of one wave or
    less)."""
    if not ns or x.device.type != "cuda" or CLN_TICKET_RUN != 1:
        return None
    w = _spread_wave(x, p, direction)
    return None if w is None else (max(1, ns // w), w)


def _stagger_kw(st: tuple[int, int] | None) -> dict[str, object]:
    """The stagger's launch arguments for ``_stagger_args``'s answer ``st``."""
    return {
        "STAGGER": st is not None,
        "stagger_ns": 0 if st is None else st[0],
        "stagger_w": 0 if st is None else st[1],
    }


def _note_first_wave(x: Tensor, p: _ClnPlan, direction: str, ck: object) -> None:
    """Record W of this launch's plan from the kernel compiled for it (its registers)."""
    key = _wave_key(x, p, direction)
    n_regs = getattr(ck, "n_regs", None)
    if key in _FIRST_WAVE or not isinstance(n_regs, int):
        return
    shared = int(getattr(getattr(ck, "metadata", None), "shared", 0) or 0)
    _FIRST_WAVE[key] = _wave_size(x, p, n_regs, shared)


def _atomic_tickets(x: Tensor, p: _ClnPlan) -> bool:
    """Whether a cLN launch takes its tiles from the atomic counter (``CLN_TICKET_ATOMIC``,
    ``CLN_PID_MIN_TILES_PER_SM``) rather than by program id."""
    return CLN_TICKET_ATOMIC or p.nt < CLN_PID_MIN_TILES_PER_SM * _num_sms(
        x.device.type, x.device.index
    )


def _timeline_buffer(
    buf: Tensor | None, name: str, x: Tensor, p: _ClnPlan, dummy: Tensor
) -> Tensor:
    """The diagnostic timeline buffer of a launch (checked), or ``dummy`` when it is off."""
    if buf is None:
        return dummy  # never written (TIMELINE=False)
    if x.device.type != "cuda" or buf.numel() < 8 * p.nt or buf.dtype != torch.int64:
        raise ValueError(f"{name}: an int64 CUDA tensor of at least 8 * tiles values")
    return buf


@functools.lru_cache(maxsize=1)
def _triton_has_pdl() -> bool:
    """Whether this Triton has the ``launch_pdl`` launch option and the ``griddepcontrol``
    builtins: 3.6 on the H200 machine has both, older releases (the package allows 3.0) may
    not, and their launches then stay plain."""
    try:
        from triton.backends.nvidia.compiler import CUDAOptions

        fields = getattr(CUDAOptions, "__dataclass_fields__", {})
        cuda = tl.extra.cuda
        return "launch_pdl" in fields and all(
            hasattr(cuda, f) for f in ("gdc_wait", "gdc_launch_dependents")
        )
    except (ImportError, AttributeError):
        return False


@functools.lru_cache(maxsize=16)
def _pdl_capable(index: int) -> bool:
    """Whether GPU ``index`` has programmatic dependent launch (sm_90 and later) and this
    Triton can launch it."""
    return torch.cuda.get_device_capability(index)[0] >= 9 and _triton_has_pdl()


def _pdl(x: Tensor) -> bool:
    """Whether the cLN launches on ``x``'s device chain by programmatic dependent launch
    (``CLN_PDL``; never in the interpreter)."""
    return CLN_PDL and x.device.type == "cuda" and _pdl_capable(x.device.index)


def _pdl_kw(pdl: bool) -> dict[str, object]:
    """The launch option of a programmatic dependent launch (only passed when on)."""
    return {"launch_pdl": True} if pdl else {}


def _pdl_early(pdl: bool, direction: str, atomic: bool) -> bool:
    """``CLN_PDL_EARLY`` in force for this launch: the zero kernel, itself a dependent, lets the
    cLN kernel launch before it waits, so the cLN kernel must wait before it reads anything."""
    return (
        pdl and CLN_PDL_ZERO and direction in CLN_PDL_EARLY and (CLN_PDL_EARLY_ATOMIC or not atomic)
    )


def _scratch(n: int, x: Tensor, pdl: bool, early: bool = False, stamp: bool = False) -> Tensor:
    """``n`` zeroed int64 scratch words on ``x``'s device, zeroed by ``_zero_kernel`` where the
    cLN kernel behind launches as its dependent (``pdl``), else by ``torch.zeros``.  ``stamp``
    (with ``pdl``): one more word, the zero kernel's start time (``CLN_FWD_PACE_GBPS``)."""
    if not pdl:
        return torch.zeros(n, dtype=torch.int64, device=x.device)
    scr = torch.empty(n + (1 if stamp else 0), dtype=torch.int64, device=x.device)
    _ZERO[(_cdiv(n, 1024),)](
        scr, n, BLOCK=1024, EARLY=early, STAMP=stamp, num_warps=4, **_pdl_kw(CLN_PDL_ZERO)
    )
    return scr


def _seq_group(B: int, group: int | None) -> int:
    """The kernels' ``SEQG`` for a batch of B sequences: ``group`` where it splits the batch
    (tickets one tile per run), else 0 (all B interleaved)."""
    if group is None or CLN_TICKET_RUN != 1:
        return 0
    if group < 1:
        raise ValueError(f"CLN_*_SEQ_GROUP must be None or >= 1, got {group}")
    return group if group < B else 0


def _fwd_seq_group(paced: bool) -> int | None:
    """The forward's sequence group: ``CLN_FWD_SEQ_GROUP``, else the paced forward's."""
    if CLN_FWD_SEQ_GROUP is None and paced:
        return CLN_FWD_PACED_SEQ_GROUP
    return CLN_FWD_SEQ_GROUP


def _tiles_by_pid(atomic: bool) -> bool:
    """Program k takes tile k, one tile per run (no atomic ticket, ``CLN_TICKET_RUN`` 1): a
    program then knows before it starts which tile it and any later program take, which the
    pace and the prefetch rely on."""
    return not atomic and CLN_TICKET_RUN == 1


def _pace_gbps(x: Tensor, alone: bool = False) -> float:
    """The forward's pace for ``x`` in GB/s: ``CLN_FWD_PACE_GBPS`` where set, else
    ``CLN_FWD_PACE_GBPS_32BIT`` for 4-byte inputs, else ``CLN_FWD_ALONE_PACE_GBPS_32BIT`` for
    4-byte inputs of a forward no backward follows (``alone``); 0: none."""
    if CLN_FWD_PACE_GBPS > 0:
        return float(CLN_FWD_PACE_GBPS)
    if x.element_size() == 4 and CLN_FWD_PACE_GBPS_32BIT:
        return float(CLN_FWD_PACE_GBPS_32BIT)
    if x.element_size() == 4 and alone and CLN_FWD_ALONE_PACE_GBPS_32BIT:
        return float(CLN_FWD_ALONE_PACE_GBPS_32BIT)
    return 0.0


def _pace_ps(x: Tensor, p: _ClnPlan, atomic: bool, early: bool, alone: bool = False) -> int:
    """Picoseconds between the paced starts of two forward programs (``_pace_gbps``: a tile's
    read + write bytes at that rate), or 0 (off: no pace for this dtype, the interpreter,
    tickets from the counter or in runs, no early chain, which is what orders the stamp before
    the programs' reads, or a grid of fewer than ``CLN_STAGGER_MIN_WAVES`` waves, as for the
    stagger)."""
    gbps = _pace_gbps(x, alone)
    if gbps <= 0 or x.device.type != "cuda" or not _tiles_by_pid(atomic) or not early:
        return 0
    if _spread_wave(x, p, "fwd") is None:
        return 0
    tile_bytes = 2 * x.shape[1] * p.bt * x.element_size()
    return max(1, round(tile_bytes * 1000.0 / gbps))


def _shared_kw(x: Tensor) -> dict[str, object]:
    """The arguments both cLN kernels take alike: their polling (``CLN_SPIN_SLEEP_NS``,
    ``CLN_SPIN_NEAREST``) and their 16-bit outputs' packing (``CLN_PACK_ASM``).  The sleep and
    the packing are inline PTX, so under the interpreter neither is used."""
    if not 0 <= CLN_SPIN_SLEEP_NS < 2**20:
        raise ValueError(f"CLN_SPIN_SLEEP_NS must be in [0, 2**20) ns, got {CLN_SPIN_SLEEP_NS}")
    gpu = x.device.type == "cuda"
    sleep = int(CLN_SPIN_SLEEP_NS) if gpu else 0
    return {"SPIN": sleep, "NEAREST": bool(CLN_SPIN_NEAREST), "PACK": CLN_PACK_ASM and gpu}


def _merged(p: _ClnPlan) -> bool:
    """Whether a forward launch folds its last round of group words with its own group's tile
    words (``CLN_FWD_PREFIX_MERGED``): where it has several groups per sequence (else no tile
    reads a group word) and G == CHUNK."""
    return bool(CLN_FWD_PREFIX_MERGED) and p.ng > 1 and p.group == p.chunk


def _prefetch_tiles(x: Tensor, p: _ClnPlan, atomic: bool) -> int:
    """Tiles ahead in its own sequence whose rows each forward program prefetches into the L2
    (``CLN_FWD_PREFETCH`` waves of resident programs, spread over the B sequences), or 0: off,
    the interpreter, tickets from the counter or in runs, T % 16 != 0, channel blocks."""
    if (
        not CLN_FWD_PREFETCH
        or x.device.type != "cuda"
        or not _tiles_by_pid(atomic)
        or x.shape[-1] % 16
        or p.num_cb != 1
    ):
        return 0
    return max(1, round(CLN_FWD_PREFETCH * _first_wave(x, p, "fwd") / x.shape[0]))


class _Launch(NamedTuple):
    """What one cLN launch needs besides its tensors: the plan, the scratch it zeroes and the
    kernel's constexprs and options (``_fwd_launch`` / ``_bwd_launch``)."""

    p: _ClnPlan
    pdl: bool
    early: bool
    stamp: bool  # the zero kernel also stamps its start (the forward's pace)
    n_scr: int  # scratch words zeroed before the launch
    note: bool  # _note_first_wave after the launch (a stagger or the pace is on)
    kernel: Bound  # the cLN kernel with its constexprs and options bound


#: ``_Launch``es by call key (``_launch_key``, 2.6 us of host time on the H200 machine; NOTES
#: 48.2): computing one runs the plan and about 20 helpers and builds a 41-entry dict, and it
#: depends only on the key; the ``Bound`` in it also keeps its compiled kernels.  Bounded:
#: cleared when full.
_LAUNCHES: dict[tuple[object, ...], _Launch] = {}
_LAUNCHES_MAX = 1024


def _launch_key(direction: str, x: Tensor, *flags: object) -> tuple[object, ...] | None:
    """The key of a cLN launch's ``_Launch``: the direction, x's shape, dtype and device, the
    call's flags and every knob's value (tests and benchmarks set knobs between calls); None
    (not cached) while a diagnostic timeline is recorded."""
    if _DIAG_TIMELINE is not None or _DIAG_TIMELINE_BWD is not None:
        return None
    return (direction, x.shape, x.dtype, x.device, flags, _knob_values())


def _cached_launch(
    direction: str,
    make: Callable[..., tuple[_Launch, bool]],
    x: Tensor,
    flags: tuple[bool, ...],
) -> _Launch:
    """The ``_Launch`` of this call from ``_LAUNCHES``, else made by ``make(x, *flags)`` and
    kept, unless it was planned on an estimated first wave that its own launch is about to
    note (``_note_first_wave``): the next call plans again."""
    key = _launch_key(direction, x, *flags)
    launch = _LAUNCHES.get(key) if key is not None else None
    if launch is not None:
        return launch
    launch, wave_known = make(x, *flags)
    if key is not None and (wave_known or not launch.note):
        if len(_LAUNCHES) >= _LAUNCHES_MAX:
            _LAUNCHES.clear()
        _LAUNCHES[key] = launch
    return launch


def _plan_kw(
    x: Tensor, p: _ClnPlan, atomic: bool, pdl: bool, early: bool, st: tuple[int, int] | None
) -> dict[str, object]:
    """The constexprs and launch options both cLN kernels take alike: the plan's tile, the
    ticket scheme, the PDL chain, the stagger, the loads' and stores' cache hints and
    ``_shared_kw``'s."""
    return dict(
        BLOCK_C=p.block_c,
        BT=p.bt,
        NUM_CB=p.num_cb,
        SCR_OFF=_SCR_OFF,
        G=p.group,
        CHUNK=p.chunk,
        RUN=CLN_TICKET_RUN,
        TICKET_ATOMIC=atomic,
        PAIRS=p.pairs,
        ASM=x.device.type == "cuda",
        **_stagger_kw(st),
        GDC=pdl,
        LD_EV=CLN_TILE_EVICT,
        ST_CM=CLN_OUT_CACHE,
        WAIT_FIRST=early,
        **_shared_kw(x),
        num_warps=p.num_warps,
        maxnreg=p.maxnreg,
        **_pdl_kw(pdl),
    )


def _fwd_launch(
    x: Tensor, has_gamma: bool, has_beta: bool, has_state: bool, alone: bool, has_mlast: bool
) -> tuple[_Launch, bool]:
    """The forward's ``_Launch`` for these inputs, and whether its first wave was known."""
    B, C, T = x.shape
    p = _cln_plan(x, forward=True)
    known = _wave_key(x, p, "fwd") in _FIRST_WAVE
    # Ticket counter, then the tiles' and the groups' words; zeroed = "not published".
    pdl = _pdl(x)
    atomic = _atomic_tickets(x, p)
    early = _pdl_early(pdl, "fwd", atomic)
    pace_ps = _pace_ps(x, p, atomic, early, alone)
    n_scr = _SCR_OFF + B * (p.ntb + p.ng)
    st = None if pace_ps else _stagger_args(x, p, CLN_FWD_STAGGER_NS, "fwd")
    pf = _prefetch_tiles(x, p, atomic)
    cuda = x.device.type == "cuda"
    kw: dict[str, object] = dict(
        HAS_STATE=has_state,
        HAS_GAMMA=has_gamma,
        HAS_BETA=has_beta,
        ABLATE=_DIAG_ABLATE,
        TIMELINE=_DIAG_TIMELINE is not None,
        AFFINE_EARLY=CLN_FWD_AFFINE_EARLY or (pace_ps > 0 and alone and CLN_FWD_ALONE_AFFINE_EARLY),
        PACE=pace_ps > 0,
        pace_ps=pace_ps,
        stamp_idx=n_scr,
        PREFETCH=pf > 0,
        prefetch_tiles=pf,
        EVEN=CLN_FWD_EVEN and p.num_cb == 1 and C == p.block_c and T % p.bt == 0,
        OUT_FMA=CLN_FWD_OUT_FMA_16BIT and p.pairs != 0,
        FAST_DIV=CLN_FWD_FAST_DIV and cuda,
        MERGED=_merged(p),
        TSPIN=32 * p.num_warps if CLN_FWD_THREAD_SPIN and cuda else 0,
        STATS=not alone,
        HAS_MLAST=has_mlast,
        SEQG=_seq_group(B, _fwd_seq_group(pace_ps > 0)),
        SHIFT=CLN_FWD_SHIFT and x.dtype == torch.float32,
        **_plan_kw(x, p, atomic, pdl, early, st),
    )
    note = st is not None or pace_ps > 0
    return _Launch(p, pdl, early, pace_ps > 0, n_scr, note, _CLN_FWD.bind(**kw)), known


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
    if (mean is None) != (rstd is None):
        raise ValueError("triton cln_forward: pass the per-frame mean and rstd both or neither")
    if mean is None and _DIAG_FWD_STATS_ALWAYS:
        mean = torch.empty((B, T), dtype=m2_last.dtype, device=x.device)
        rstd = torch.empty_like(mean)
    alone = mean is None  # no backward follows: no statistics to write, the forward's own pace
    flags = (gamma is not None, beta is not None, state is not None, alone, mean_last is not None)
    L = _cached_launch("fwd", _fwd_launch, x, flags)
    p = L.p
    scr = _scratch(L.n_scr, x, L.pdl, L.early, stamp=L.stamp)
    if state is not None:
        cnt, m0, M0 = state
    else:
        cnt = m0 = M0 = m2_last  # dummies, never read (HAS_STATE=False)
    tl_buf = _timeline_buffer(_DIAG_TIMELINE, "_DIAG_TIMELINE", x, p, scr)
    ck = L.kernel.launch(
        (p.nt,),
        x,
        y,
        gamma if gamma is not None else x,
        beta if beta is not None else x,
        m2_last if mean is None else mean,  # dummies where not written (STATS=False)
        m2_last if rstd is None else rstd,
        m2_last,
        m2_last if mean_last is None else mean_last,
        cnt,
        m0,
        M0,
        scr,
        tl_buf,
        B,
        C,
        T,
        p.ntb,
        p.ng,
        float(eps),
    )
    if L.note:
        _note_first_wave(x, p, "fwd", ck)


def _bwd_launch(
    x: Tensor, has_count: bool, has_gamma: bool, has_dg: bool, has_db: bool
) -> tuple[_Launch, bool]:
    """The backward's ``_Launch`` for these inputs, and whether its first wave was known."""
    B = x.shape[0]
    p = _cln_plan(x, forward=False)
    known = _wave_key(x, p, "bwd") in _FIRST_WAVE
    pdl = _pdl(x)
    atomic = _atomic_tickets(x, p)
    early = _pdl_early(pdl, "bwd", atomic)
    # Staggered only by program id: with the atomic counter it was measured to lose
    # (CLN_BWD_STAGGER_NS).
    st = _stagger_args(x, p, 0 if atomic else CLN_BWD_STAGGER_NS, "bwd")
    cuda = x.device.type == "cuda"
    kw: dict[str, object] = dict(
        HAS_COUNT=has_count,
        HAS_GAMMA=has_gamma,
        HAS_DG=has_dg,
        HAS_DB=has_db,
        OVERLAP=CLN_PREFIX_OVERLAP,
        FUSE=CLN_FUSED_SUMS,
        LATE=CLN_BWD_LATE_PARTIALS,
        ABLATE=_DIAG_ABLATE_BWD,
        TIMELINE=_DIAG_TIMELINE_BWD is not None,
        AFFINE_EARLY=CLN_BWD_AFFINE_EARLY,
        DX_FMA=CLN_BWD_DX_FMA_16BIT and p.pairs != 0,
        SHARE=CLN_BWD_SHARE_16BIT and p.pairs != 0,
        FAST_DIV=CLN_BWD_FAST_DIV and cuda,
        SEQG=_seq_group(B, CLN_BWD_SEQ_GROUP),
        **_plan_kw(x, p, atomic, pdl, early, st),
    )
    n_scr = _SCR_OFF + 3 * B * (p.ntb + p.ng)
    return _Launch(p, pdl, early, False, n_scr, st is not None, _CLN_BWD.bind(**kw)), known


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
    flags = (count is not None, gamma is not None, dgamma is not None, dbeta is not None)
    L = _cached_launch("bwd", _bwd_launch, x, flags)
    p, pdl = L.p, L.pdl
    scr = _scratch(L.n_scr, x, pdl, L.early)
    # Per-tile partials of dgamma and dbeta side by side in one (tiles, PW) buffer, indexed by
    # tile (not ticket): the fixed-order column sum below is then deterministic, and one
    # launch sums both.
    pw = C * ((dgamma is not None) + (dbeta is not None))
    parts = torch.empty((p.nt, pw), dtype=torch.float32, device=x.device) if pw else dx
    dgp = parts if dgamma is not None else dx
    dbp = parts[:, C:] if dgamma is not None and dbeta is not None else parts
    tl_buf = _timeline_buffer(_DIAG_TIMELINE_BWD, "_DIAG_TIMELINE_BWD", x, p, scr)
    ck = L.kernel.launch(
        (p.nt,),
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
        tl_buf,
        B,
        C,
        T,
        p.ntb,
        p.ng,
        pw,
    )
    if L.note:
        _note_first_wave(x, p, "bwd", ck)
    if dgamma is not None:
        colsum(parts, dgamma, dbeta, pdl=pdl)
    elif dbeta is not None:
        colsum(parts, dbeta, pdl=pdl)


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
        _RMS_FWD[(_cdiv(M, rows),)](
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
    _RMS_ROWDOT[(M,)](
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
    _RMS_SCALE[(M, _cdiv(N, block_n))](
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
        _RMS_ROWDOT[(M,)](
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
    _RMS_BWD[(progs, _cdiv(N, block_n))](
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
        NUM_STAGES=RMS_BWD_STAGES_16BIT if x.element_size() == 2 else RMS_BWD_STAGES,
        num_warps=num_warps,
    )
    if dw is not None:
        # torch.sum, not ``colsum``: these partials are few wide rows (about 2 x SMs rows of
        # N), which torch reduces in one launch; colsum's two launches made the (2048, 4096)
        # fwd+bwd 2.6-2.7 us slower in both dtypes (53.7 -> 56.3 us fp32, 34.1 -> 36.8 bf16;
        # bench/results/nvidia-h200.md of sessions 15 and 16).  Fixed order: deterministic.
        torch.sum(dwp, dim=0, out=dw)


#: The knobs' current values, one tuple (part of ``_launch_key``): every module-level tuning
#: or diagnostic constant above.
_knob_values = functools.partial(
    operator.itemgetter(
        *sorted(n for n in dir() if n.startswith(("CLN_", "COLSUM_", "RMS_", "_DIAG_")))
    ),
    globals(),
)

# Every launch above goes through ``launch.Kernel``: directly to the compiled kernel once it
# has been launched through ``JITFunction.run`` for the same specialization (launch.py).
_CLN_FWD = Kernel(_cln_fwd_kernel)
_CLN_BWD = Kernel(_cln_bwd_kernel)
_ZERO = Kernel(_zero_kernel)
_COLSUM = Kernel(_colsum_kernel)
_RMS_FWD = Kernel(_rms_fwd_kernel)
_RMS_BWD = Kernel(_rms_bwd_kernel)
_RMS_ROWDOT = Kernel(_rms_rowdot_kernel)
_RMS_SCALE = Kernel(_rms_scale_kernel)
