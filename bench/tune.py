"""Sweep a backend's launch knobs at the issues' target shapes (GPU only).

    python3 -m bench.tune --backend triton,cuda_ext [--ops cln,rmsnorm] [--quick]
        [--parts shapes,seed,long]

Each variant sets module constants of the backend's kernel module (Triton:
``backends.triton.kernels``; CUDA: ``backends.cuda_ext.kernels``; both read
them at call time), checks the outputs (and gradients) against the float64
references of the benchmark (``bench.runner.make_group``), then
times it with the benchmark's own timer (``bench.timing``, CUDA-graph replay:
kernel time; see bench/results/NOTES.md section 1 for why).  The copy
bandwidth is measured in the same run by the benchmark's ``copy_bandwidth``;
figures are fractions of it.  A variant whose knob the module lacks is
reported and skipped, so the sweep never times a default by mistake.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import random
import sys
from collections.abc import Callable, Iterator
from types import ModuleType

import torch

from bench import toolchain
from bench.impls import backend_fn
from bench.runner import make_group
from bench.timing import copy_bandwidth, side_stream, time_steps
from common.testing import assert_close

MODULES = {"triton": "backends.triton.kernels", "cuda_ext": "backends.cuda_ext.kernels"}
#: The Triton forward staggered, never paced: neither every 4-byte forward nor one that no
#: backward follows (``CLN_FWD_PACE_GBPS_32BIT``, ``CLN_FWD_ALONE_PACE_GBPS_32BIT``).
NO_PACE = {"CLN_FWD_PACE_GBPS_32BIT": 0, "CLN_FWD_ALONE_PACE_GBPS_32BIT": 0}

CLN_SHAPES = [(16, 512, 4000), (4, 256, 16000), (2, 128, 64000)]
RMS_SHAPES = [(32768, 4096), (16384, 8192), (2048, 4096)]
SEED = (80, 64, 301)

# The 16-bit backward's three cuts of instructions per value (Triton; the defaults since
# session 34).
_BWD_LEAN: dict[str, object] = {
    "CLN_BWD_DX_FMA_16BIT": True,
    "CLN_BWD_SHARE_16BIT": True,
    "CLN_BWD_FAST_DIV": True,
}

# cLN launch variants per backend (module constants of the kernel module).
CLN_VARIANTS: dict[str, dict[str, dict[str, object]]] = {
    "triton": {
        "default": {},
        # The float32 forward's frame sums unshifted in the first C frames (the A/B of its cost).
        "noshift": {"CLN_FWD_SHIFT": False},
        "run4": {"CLN_TICKET_RUN": 4},
        "run4 group256": {"CLN_TICKET_RUN": 4, "CLN_GROUP": 256, "CLN_CHUNK": 256},
        "fwd16 ept64 nreg128": {"CLN_FWD_EPT_16BIT": 64, "CLN_FWD_MAXNREG_16BIT": 128},
        "bwd ept32 nreg128": {"CLN_BWD_EPT": 32, "CLN_BWD_MAXNREG": 128},
        "group256": {"CLN_GROUP": 256, "CLN_CHUNK": 256},
        # 16-bit tiles held as packed words (the default) against float32 register tiles, and
        # the register caps of the packed kernels (ptxas, sm_90: the forward needs 168 without
        # spills, the backward 184; 168 fits 3 backward programs per SM, 184 two).
        "no pairs": {"CLN_FWD_PAIRS": False, "CLN_BWD_PAIRS": False},
        "pairs nreg144/184": {"CLN_FWD_MAXNREG_PAIRS": 144, "CLN_BWD_MAXNREG_PAIRS": 184},
        "pairs no cap": {"CLN_FWD_MAXNREG_PAIRS": None, "CLN_BWD_MAXNREG_PAIRS": None},
        # 16-bit forward: packed tiles of 16384 values (4 warps; 168 registers spill 48 B: 3
        # programs per SM of twice the bytes, half the tickets and prefix waits per byte).
        "fwd16 tile16k": {"CLN_FWD_TILE": 16384},
        # Session 50: the packed 16-bit forward's loads and stores alone reach 0.73-0.75 of copy
        # with 64-B rows (C = 256, 512) and 0.86 with 128-B rows (C = 128) (NOTES 46.2); longer
        # rows on the current code: 256 x 64 / 128 x 128 over 4 warps (3 programs per SM at
        # 168 registers, or 4 at 128), and 256 values per thread (2 warps: 256 x 64, 128 x 128,
        # 512 x 32; 4 warps: 512 x 64).
        "fwd16 t16k": {"CLN_FWD_TILE_16BIT": 16384},
        "fwd16 t16k nreg128": {"CLN_FWD_TILE_16BIT": 16384, "CLN_FWD_MAXNREG_PAIRS": 128},
        "fwd16 t16k ept256": {
            "CLN_FWD_TILE_16BIT": 16384,
            "CLN_FWD_EPT_16BIT": 256,
            "CLN_FWD_MAXNREG_PAIRS": None,
        },
        "fwd16 t32k ept256": {
            "CLN_FWD_TILE_16BIT": 32768,
            "CLN_FWD_EPT_16BIT": 256,
            "CLN_FWD_MAXNREG_PAIRS": None,
        },
        # Session 50: sequences in flight in groups (all B interleaved by default).
        "seqg2": {"CLN_FWD_SEQ_GROUP": 2, "CLN_BWD_SEQ_GROUP": 2},
        "seqg4": {"CLN_FWD_SEQ_GROUP": 4, "CLN_BWD_SEQ_GROUP": 4},
        "seqg8": {"CLN_FWD_SEQ_GROUP": 8, "CLN_BWD_SEQ_GROUP": 8},
        "fwd seqg4": {"CLN_FWD_SEQ_GROUP": 4},
        # The paced forward (fp32, alone) in groups of 2 sequences by default.
        "paced seqg all": {"CLN_FWD_PACED_SEQ_GROUP": None},
        "paced seqg1": {"CLN_FWD_PACED_SEQ_GROUP": 1},
        "paced seqg3": {"CLN_FWD_PACED_SEQ_GROUP": 3},
        # The first wave of tickets spread over this many us (forward, backward, both).
        # (Unpaced: a pace would replace the stagger.)
        **{
            f"stagger fwd {us}us": {"CLN_FWD_STAGGER_NS": us * 1000, **NO_PACE}
            for us in range(1, 7)
        },
        # 4-byte inputs paced at 6000 GB/s instead of the 3-us stagger (CLN_FWD_PACE_GBPS_32BIT;
        # the default during session 42's third call, gpu_s42c.sh, where "no pace" was the
        # stagger), and not paced.
        "pace32 6000": {"CLN_FWD_PACE_GBPS_32BIT": 6000.0},
        "no pace": NO_PACE,
        # A forward no backward follows (bench.tune's fwd mode: torch.no_grad) as it was before
        # session 43: its per-frame statistics written, the stagger instead of its own pace
        # (CLN_FWD_ALONE_PACE_GBPS_32BIT); then the two apart.
        "stats always": {"_DIAG_FWD_STATS_ALWAYS": True},
        "alone unpaced": {"CLN_FWD_ALONE_PACE_GBPS_32BIT": 0},
        "alone affine early": {"CLN_FWD_ALONE_AFFINE_EARLY": True},
        # gamma / beta after the prefix wait in the paced forward alone (the default before
        # session 44).
        "alone affine late": {"CLN_FWD_ALONE_AFFINE_EARLY": False},
        **{
            f"alone pace {r}": {"CLN_FWD_ALONE_PACE_GBPS_32BIT": float(r)}
            for r in (5000, 5500, 5750, 6250, 6500, 7000)
        },
        # Every forward program's loads paced to this rate from a common start time (the zero
        # kernel's stamp) instead of the first wave's stagger.
        **{
            f"pace {r}": {"CLN_FWD_PACE_GBPS": float(r)}
            for r in (3500, 4000, 4500, 5000, 6000, 7000, 8000, 10000)
        },
        # Every forward program prefetching into the L2 the rows of the tile this many waves of
        # resident programs later in its sequence (``CLN_FWD_PREFETCH``).
        **{f"prefetch {w:g}": {"CLN_FWD_PREFETCH": w} for w in (0.25, 0.5, 1.0, 2.0)},
        # The waiting programs' polls (both directions): the nearest earlier tile's word first
        # (``CLN_SPIN_NEAREST``), a nanosleep of this many ns between polls
        # (``CLN_SPIN_SLEEP_NS``), and both.
        "spin nearest": {"CLN_SPIN_NEAREST": True},
        **{f"spin sleep {ns}": {"CLN_SPIN_SLEEP_NS": ns} for ns in (100, 200, 500, 1000)},
        **{
            f"spin nearest sleep {ns}": {"CLN_SPIN_NEAREST": True, "CLN_SPIN_SLEEP_NS": ns}
            for ns in (100, 200, 500)
        },
        # Fewer instructions per value: full tiles without the M2 pass's select, the 16-bit
        # output as one FMA, the 16-bit outputs packed by paired conversions, and all three.
        "fwd even": {"CLN_FWD_EVEN": True},
        "fwd16 out fma": {"CLN_FWD_OUT_FMA_16BIT": True},
        "pack asm": {"CLN_PACK_ASM": True},
        "lean": {"CLN_FWD_EVEN": True, "CLN_FWD_OUT_FMA_16BIT": True, "CLN_PACK_ASM": True},
        # The forward's divisions by div.approx.f32 instead of div.full.f32.
        "fwd fast div": {"CLN_FWD_FAST_DIV": True},
        # The forward's prefix in two waits and two folds (the group words', then the own
        # group's tile words': before session 38) instead of one (``CLN_FWD_PREFIX_MERGED``).
        "fwd unmerged": {"CLN_FWD_PREFIX_MERGED": False},
        # The forward's waits polled by each thread for its own words, with no reduction between
        # polls (``CLN_FWD_THREAD_SPIN``; GPU only; the default since session 39), and not.
        "fwd thread spin": {"CLN_FWD_THREAD_SPIN": True},
        "fwd no thread spin": {"CLN_FWD_THREAD_SPIN": False},
        # The 16-bit backward's dx by two FMAs after the product, its dy unpacked once for both
        # channel sums and once for both partials, the backward's divisions by div.approx.f32;
        # all three (the defaults since session 34); all three with the forward's; none.
        "bwd16 dx fma": {"CLN_BWD_DX_FMA_16BIT": True},
        "bwd16 share": {"CLN_BWD_SHARE_16BIT": True},
        "bwd fast div": {"CLN_BWD_FAST_DIV": True},
        "bwd lean": _BWD_LEAN,
        "bwd lean fwd fast div": {**_BWD_LEAN, "CLN_FWD_FAST_DIV": True},
        "bwd not lean": {k: False for k in _BWD_LEAN},
        "no bwd stagger": {"CLN_BWD_STAGGER_NS": 0},
        **{
            f"stagger bwd {us}us": {"CLN_BWD_STAGGER_NS": us * 1000}
            for us in (2, 3, 4, 5, 6, 8, 12)
        },
        # Plain launches instead of the chain by programmatic dependent launch.
        "no pdl": {"CLN_PDL": False},
        # The zero kernel at the chain's head launched plainly (before session 26).
        "zero plain": {"CLN_PDL_ZERO": False},
        # CLN_PDL_EARLY (the zero kernel lets the cLN kernel launch before it waits; the cLN
        # kernel waits first): off, in both directions (the default: the forward only).
        # (Absolute settings, as session 27's calls named them: bench/gpu_s27{,b}.sh.)
        "no early": {"CLN_PDL_EARLY": ()},
        "pdl early": {"CLN_PDL_EARLY": ("fwd", "bwd")},
        "pdl early fwd": {"CLN_PDL_EARLY": ("fwd",)},
        "pdl early bwd": {"CLN_PDL_EARLY": ("bwd",)},
        "pdl early st2": {"CLN_PDL_EARLY": ("fwd", "bwd"), "CLN_FWD_STAGGER_NS": 2000},
        "pdl early st4": {"CLN_PDL_EARLY": ("fwd", "bwd"), "CLN_FWD_STAGGER_NS": 4000},
        # The affine parameters read before the prefix / suffix wait instead of after it.
        "affine early": {"CLN_FWD_AFFINE_EARLY": True, "CLN_BWD_AFFINE_EARLY": True},
        "fwd affine early": {"CLN_FWD_AFFINE_EARLY": True, "CLN_BWD_AFFINE_EARLY": False},
        "bwd affine early": {"CLN_FWD_AFFINE_EARLY": False, "CLN_BWD_AFFINE_EARLY": True},
        "affine late": {"CLN_FWD_AFFINE_EARLY": False, "CLN_BWD_AFFINE_EARLY": False},
        # Cache hints: the tiles read with an L2 evict_first policy, the outputs stored .cs.
        "ld evict_first": {"CLN_TILE_EVICT": "evict_first"},
        "st cs": {"CLN_OUT_CACHE": ".cs"},
        "ld evict_first st cs": {"CLN_TILE_EVICT": "evict_first", "CLN_OUT_CACHE": ".cs"},
        "stagger 2us": {"CLN_FWD_STAGGER_NS": 2000, "CLN_BWD_STAGGER_NS": 2000},
        "no stagger": {"CLN_FWD_STAGGER_NS": 0, "CLN_BWD_STAGGER_NS": 0},
        # The backward's suffix words waited for one load after another (before session 13).
        "sequential prefix": {"CLN_PREFIX_OVERLAP": False},
        # The backward's three separate sums / scans where one tuple reduction / scan does
        # (before session 14).
        "unfused sums": {"CLN_FUSED_SUMS": False},
        # Backward tiles of half / twice the default elements, and half the values per thread
        # (twice the warps per tile).
        "bwd tile4096": {"CLN_BWD_TILE": 4096},
        "bwd tile16384": {"CLN_BWD_TILE": 16384},
        # 16-bit backward: 8192-value tiles everywhere, or 4096 also where rows get 32 B long
        # (C = 256), against the default (4096 where rows stay >= 64 B: C <= 128).
        "bwd16 tile8192": {"CLN_BWD_TILE_16BIT": None},
        # fp32 backward: 8192-value tiles everywhere (before session 28), against 4096 where rows
        # stay >= 128 B (C <= 128).
        "bwd32 tile8192": {"CLN_BWD_TILE_32BIT": None},
        # ... and also where rows get 64 B long (C = 256: 16 frames).
        "bwd32 rows64": {"CLN_BWD_TILE_32BIT_MIN_ROW_BYTES": 64},
        # 2048-value fp32 backward tiles where rows stay >= 64 B (C = 128: 16 frames).
        "bwd32 tile2048 rows64": {
            "CLN_BWD_TILE_32BIT": 2048,
            "CLN_BWD_TILE_32BIT_MIN_ROW_BYTES": 64,
        },
        # Forward tiles of 4096 values (fp32 C = 128: 32 frames; C = 256 then widened to 32
        # frames over 2 warps by CLN_FWD_WIDE_*).
        "fwd tile4096": {"CLN_FWD_TILE": 4096},
        "bwd16 tile4096 rows32": {"CLN_BWD_TILE_16BIT_MIN_ROW_BYTES": 32},
        "bwd ept32": {"CLN_BWD_EPT": 32},
        # The fp32 backward's 64 values per thread capped (ptxas 13.0, sm_90, 256 x 32 over 4
        # warps: 253 registers uncapped, 2 programs per SM; 168 spills 472 B, 3 programs; 128
        # spills 680 B, 4 programs).
        "bwd nreg168": {"CLN_BWD_MAXNREG": 168},
        "bwd nreg128": {"CLN_BWD_MAXNREG": 128},
        # The register caps that add a program per SM since the backward's 2-warp tiles at
        # C <= 128 (session 28): fp32 204 (5 programs of 2 warps instead of 4; ptxas 12.9,
        # sm_90, offline: 128 B spilled), the packed 16-bit 144 (7 instead of 6 at C = 128, no
        # spills) or 128 (8 at C = 128, 4 instead of 3 at C = 256 and 512; 56-120 B spilled).
        "bwd32 nreg204": {"CLN_BWD_MAXNREG": 204},
        "bwd16 nreg144": {"CLN_BWD_MAXNREG_PAIRS": 144},
        "bwd16 nreg128": {"CLN_BWD_MAXNREG_PAIRS": 128},
        # The forward's register caps below its defaults (ptxas 12.8 of Triton 3.6, sm_90,
        # offline, at (2, 128, 64000)): packed 16-bit 128 x 64 over 2 warps 168 without spills
        # (6 programs per SM) -> 144 (7, 104 B spilled), 128 (8, 240 B), 112 (9, 240 B: most of
        # the tile's words stored once and loaded once); fp32 128 x 64 over 4 warps 128 (4,
        # 8 B) -> 96 (5, 192 B), 80 (6, 336 B).
        **{f"fwd16 nreg{n}": {"CLN_FWD_MAXNREG_PAIRS": n} for n in (144, 128, 112)},
        **{f"fwd32 nreg{n}": {"CLN_FWD_MAXNREG": n} for n in (96, 80)},
        # The backward's tile rows at least 128 B (fp32: C = 512 -> 32 frames, 8 warps, one
        # program per SM) or, 16-bit, 32 B (C = 512 -> 16 frames, 4 warps, 3 programs per SM
        # instead of one of 8 warps) / 128 B (C = 256 -> 64 frames, 8 warps).
        "bwd minrow128": {"CLN_BWD_MIN_ROW_BYTES": 128},
        "bwd16 minrow32": {"CLN_BWD_MIN_ROW_BYTES_16BIT": 32},
        "bwd16 minrow128": {"CLN_BWD_MIN_ROW_BYTES_16BIT": 128},
        # 16-bit backward: tiles over 8 warps instead of 4 (32 values per thread), the packed
        # kernel capped at 128 registers (ptxas, sm_90: no spills, 2 programs = 16 warps per
        # SM) or 80 (412 B spilled, 3 programs = 24 warps), against 4 warps at 168 (76 B
        # spilled, 3 programs = 12 warps).
        "bwd16 ept32 nreg128": {"CLN_BWD_EPT_16BIT": 32, "CLN_BWD_MAXNREG_PAIRS": 128},
        "bwd16 ept32 nreg80": {"CLN_BWD_EPT_16BIT": 32, "CLN_BWD_MAXNREG_PAIRS": 80},
        # The backward's dgamma / dbeta partials before the tile's publication (before session
        # 17), or between it and the group's closing, instead of after both.
        "early partials": {"CLN_BWD_LATE_PARTIALS": 0},
        # The backward in channel blocks of at most 256 / 128 / 64 (``CLN_BWD_MAX_BLOCK_C``):
        # no tile held across the suffix wait, each block read again for dx (from L2), and at
        # the same tile budget more frames per tile (C = 512 at 128: 64 frames, not 16 / 32),
        # so longer rows and fewer dgamma / dbeta partial rows.
        "bwd loop c256": {"CLN_BWD_MAX_BLOCK_C": 256},
        "bwd loop c128": {"CLN_BWD_MAX_BLOCK_C": 128},
        "bwd loop c128 tile4096": {"CLN_BWD_MAX_BLOCK_C": 128, "CLN_BWD_TILE": 4096},
        "bwd loop c64": {"CLN_BWD_MAX_BLOCK_C": 64},
        # The column sums of the partials loading 8 / 32 rows per loop round (one memory
        # latency each) instead of up to 64.
        "colsum rows8": {"COLSUM_BLOCK_R": 8},
        "colsum rows32": {"COLSUM_BLOCK_R": 32},
        "partials after publish": {"CLN_BWD_LATE_PARTIALS": 1},
        # Tickets from the atomic counter instead of the program id (before session 23).
        "atomic tickets": {"CLN_TICKET_ATOMIC": True},
        # fp32 forward tiles of 16384 values over 4 warps, uncapped (ptxas, sm_90: 252 registers,
        # no spills; 2 programs per SM): at C = 512, rows of 128 B (32 frames) with the
        # per-frame reductions still over 4 warps.
        "fwd rows128 ept128": {
            "CLN_MIN_ROW_BYTES": 128,
            "CLN_FWD_TILE": 16384,
            "CLN_FWD_EPT": 128,
            "CLN_FWD_MAXNREG": None,
        },
        # fp32 forward rows of 256 B where the tile stays within 16384 values (C = 256: 64
        # frames, not 32; C = 512 then falls back to 16 frames, C = 128 has 64 already), over 4
        # warps uncapped (128 values a thread, 2 programs per SM) or 8 warps at 128 registers.
        "fwd wide256": {"CLN_FWD_WIDE_ROW_BYTES": 256},
        "fwd wide256 w8": {
            "CLN_FWD_WIDE_ROW_BYTES": 256,
            "CLN_FWD_WIDE_EPT": 64,
            "CLN_FWD_WIDE_MAXNREG": 128,
        },
        # fp32: 128 values per thread capped at 200 registers (5 programs per SM, not 4).
        "fwd ept128 nreg200": {"CLN_FWD_EPT": 128, "CLN_FWD_MAXNREG": 200},
        # Programs of one warp (``CLN_FWD_MIN_WARPS``, ``CLN_BWD_MIN_WARPS``): each frame's sums
        # over its channels stay within the warp (shuffles; from two warps up they cross warps
        # through shared memory).  16-bit forward: 4096-value tiles, i.e. C = 128 -> 32 frames
        # over 1 warp ("fwd16 tile4k": the same tile over 2 warps); with 32-byte rows also
        # C = 256 -> 16 frames over 1 warp and C = 512 -> 16 frames over 2 warps ("fwd16 row32":
        # those rows at the default tile).  fp32 forward: 2048-value tiles without the wide
        # rows, C = 128 -> 16 frames over 1 warp.  Backward: 2048-value tiles, C = 128 -> 16
        # frames over 1 warp (fp32: with 64-byte minimum rows, which also takes C = 512 to 16
        # frames).
        "fwd16 1warp": {"CLN_FWD_MIN_WARPS": 1, "CLN_FWD_TILE_16BIT": 4096},
        "fwd16 tile4k": {"CLN_FWD_TILE_16BIT": 4096},
        "fwd16 1warp row32": {
            "CLN_FWD_MIN_WARPS": 1,
            "CLN_FWD_TILE_16BIT": 4096,
            "CLN_MIN_ROW_BYTES": 32,
        },
        "fwd16 row32": {"CLN_MIN_ROW_BYTES": 32},
        "fwd16 tile4k row32": {"CLN_FWD_TILE_16BIT": 4096, "CLN_MIN_ROW_BYTES": 32},
        "fwd32 1warp": {
            "CLN_FWD_MIN_WARPS": 1,
            "CLN_FWD_TILE": 2048,
            "CLN_FWD_TILE_16BIT": 8192,
            "CLN_FWD_WIDE_ROW_BYTES": 0,
        },
        "bwd16 1warp": {
            "CLN_BWD_MIN_WARPS": 1,
            "CLN_BWD_TILE_16BIT": 2048,
            "CLN_BWD_TILE_16BIT_MIN_ROW_BYTES": 32,
        },
        "bwd32 1warp": {
            "CLN_BWD_MIN_WARPS": 1,
            "CLN_BWD_TILE_32BIT": 2048,
            "CLN_BWD_TILE_32BIT_MIN_ROW_BYTES": 64,
            "CLN_BWD_MIN_ROW_BYTES": 64,
        },
    },
    "cuda_ext": {
        "default": {},
        "noshift": {"CLN_FWD_SHIFT": 0},
        "regs": {"CLN_STREAM_PPR": -1},
        "S2": {"CLN_STREAM_STAGES": 2},
        "S3": {"CLN_STREAM_STAGES": 3},
        "ppr4 S2": {"CLN_STREAM_PPR": 4, "CLN_STREAM_STAGES": 2},
        "ppr4 S3": {"CLN_STREAM_PPR": 4, "CLN_STREAM_STAGES": 3},
        "ppr8 S2": {"CLN_STREAM_PPR": 8, "CLN_STREAM_STAGES": 2},
        # Deeper rings with the producer further ahead (its tiles' aggregates published
        # earlier, so the other blocks' prefix waits find them), and the group size G.
        "ppr8 S3 D2": {"CLN_STREAM_PPR": 8, "CLN_STREAM_STAGES": 3, "CLN_STREAM_LEAD": 2},
        "ppr8 S4 D2": {"CLN_STREAM_PPR": 8, "CLN_STREAM_STAGES": 4, "CLN_STREAM_LEAD": 2},
        "ppr8 S4 D3": {"CLN_STREAM_PPR": 8, "CLN_STREAM_STAGES": 4, "CLN_STREAM_LEAD": 3},
        "ppr4 S4 D2": {"CLN_STREAM_PPR": 4, "CLN_STREAM_STAGES": 4, "CLN_STREAM_LEAD": 2},
        "ppr16 S3 D2": {"CLN_STREAM_PPR": 16, "CLN_STREAM_STAGES": 3, "CLN_STREAM_LEAD": 2},
        "G64": {"CLN_GROUP_TILES": 64},
        "G128": {"CLN_GROUP_TILES": 128},
        "G512": {"CLN_GROUP_TILES": 512},
        "G1024": {"CLN_GROUP_TILES": 1024},
        # The tiles through cp.async instead of the TMA (the default where it applies).
        "cp.async": {"CLN_STREAM_TMA": -1},
        "ppr16 S2": {"CLN_STREAM_PPR": 16, "CLN_STREAM_STAGES": 2},
        # Rings that leave room for one block per SM, which then runs the 512-thread roles
        # (stream_one_block): C = 256 (ppr16 S3, ppr8 S4) and C = 128 (ppr16 S4).
        "ppr16 S3": {"CLN_STREAM_PPR": 16, "CLN_STREAM_STAGES": 3},
        "ppr8 S4": {"CLN_STREAM_PPR": 8, "CLN_STREAM_STAGES": 4},
        "ppr16 S4": {"CLN_STREAM_PPR": 16, "CLN_STREAM_STAGES": 4},
        # The ring refilled by the producer with lead 1 (the protocol before the output
        # warps' refill, which the automatic lead takes on the TMA path: "S2" and "S3" above
        # are the refill at 2 and 3 stages there), automatic and at 2 stages.
        "D1": {"CLN_STREAM_LEAD": 1},
        "D1 S2": {"CLN_STREAM_LEAD": 1, "CLN_STREAM_STAGES": 2},
        # Plain launches and a memset instead of the chain by programmatic dependent launch.
        "no pdl": {"CLN_PDL": 0},
        # The prefix waits' polls: per lane, all not-ready words together, no sleep (1), and
        # each word in turn, 20 ns apart (0, before session 40).
        "lane spin": {"CLN_PREFIX_SPIN": 1},
        "word spin": {"CLN_PREFIX_SPIN": 0},
    },
}
SEED_VARIANTS: dict[str, dict[str, dict[str, object]]] = {
    "triton": {
        "default": {},
        "noshift": {"CLN_FWD_SHIFT": False},
        "min_tiles1": {"CLN_MIN_TILES_PER_SM": 1},
        "no pdl": {"CLN_PDL": False},
        # The zero kernel at the chain's head launched plainly (before session 26).
        "zero plain": {"CLN_PDL_ZERO": False},
        # CLN_PDL_EARLY at the seed's atomic tickets too (CLN_PDL_EARLY_ATOMIC).
        "pdl early": {"CLN_PDL_EARLY_ATOMIC": True},
        # Tiles by program id at the seed's one wave too (CLN_PID_MIN_TILES_PER_SM's rule).
        "pid": {"CLN_PID_MIN_TILES_PER_SM": 0},
        # gamma / beta read before the prefix wait (CLN_FWD_AFFINE_EARLY), and after it.
        "affine early": {"CLN_FWD_AFFINE_EARLY": True},
        "affine late": {"CLN_FWD_AFFINE_EARLY": False},
        # The fp32 backward's 8192-value tiles (before session 28; fwd_bwd only).
        "bwd32 tile8192": {"CLN_BWD_TILE_32BIT": None},
    },
    "cuda_ext": {
        "default": {},
        "noshift": {"CLN_FWD_SHIFT": 0},
        "stream": {"CLN_RESIDENT": -1},
        "regs": {"CLN_STREAM_PPR": -1},
        "ppr4": {"CLN_STREAM_PPR": 4},
        "ppr8": {"CLN_STREAM_PPR": 8},
        "ppr16": {"CLN_STREAM_PPR": 16},
        "S2": {"CLN_STREAM_STAGES": 2},
        "ppr4 S2": {"CLN_STREAM_PPR": 4, "CLN_STREAM_STAGES": 2},
        "ppr8 S2": {"CLN_STREAM_PPR": 8, "CLN_STREAM_STAGES": 2},
        "no pdl": {"CLN_PDL": 0},
    },
}
RMS_BWD_VARIANTS: dict[str, dict[str, dict[str, object]]] = {
    "triton": {
        "default": {},
        "stages1": {"RMS_BWD_STAGES": 1, "RMS_BWD_STAGES_16BIT": 1},
        "stages2": {"RMS_BWD_STAGES": 2, "RMS_BWD_STAGES_16BIT": 2},
        "stages3": {"RMS_BWD_STAGES": 3, "RMS_BWD_STAGES_16BIT": 3},
        "resident32": {"RMS_BWD_RESIDENT_WARPS": 32},
    },
    "cuda_ext": {
        "default": {},
        "general": {"RMS_BWD_STAGES": -1},
        "S1": {"RMS_BWD_STAGES": 1},
        "S2": {"RMS_BWD_STAGES": 2},
        "S3": {"RMS_BWD_STAGES": 3},
    },
}


def missing_knobs(mod: ModuleType, kw: dict[str, object]) -> list[str]:
    """The names in ``kw`` that ``mod`` has no constant for."""
    return [k for k in kw if not hasattr(mod, k)]


@contextlib.contextmanager
def knobs(mod: ModuleType, kw: dict[str, object]) -> Iterator[None]:
    missing = missing_knobs(mod, kw)
    if missing:
        raise AttributeError(f"{mod.__name__} has no knob {', '.join(missing)}")
    old = {k: getattr(mod, k) for k in kw}
    for k, v in kw.items():
        setattr(mod, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(mod, k, v)


def t_ms(*steps: Callable[[], object], budget_s: float = 0.15) -> float:
    """Median GPU time of one call, rotating over ``steps`` (e.g. one per input copy)
    (CUDA-graph replay: no host launch overhead)."""
    dev = torch.device("cuda")
    with side_stream(dev):
        for step in steps:
            step()
        return time_steps(list(steps), dev, budget_s=budget_s, cuda_graph=True).median_us / 1e3


def case(backend: str, op: str, shape, dtype, mode) -> tuple[float, int]:
    """Check ``backend`` against the float64 references of the benchmark (the same inputs,
    references and tolerances as ``python -m bench``), then time it; -> (ms, bytes factor)."""
    dev = torch.device("cuda")
    g = make_group(op, shape, dtype, dev, random.randrange(2**31), 1, 0 if mode == "fwd" else 1)
    fn = backend_fn(op, backend)
    x, params = g.xs[0], g.params
    if mode == "fwd":
        with torch.no_grad():
            assert_close("y", fn(x, params), g.ref_y, g.tol_y)
            return t_ms(lambda: fn(x, params)), 2
    leaves = [t.clone().requires_grad_(True) for t in (x, *params)]
    dy = g.dys[0]

    def step():
        return torch.autograd.grad(fn(leaves[0], tuple(leaves[1:])), leaves, dy)

    for name, got, want, tol in zip(g.grad_names, step(), g.ref_grads, g.tol_grads):
        assert_close(name, got, want, tol)
    return t_ms(step), 5


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="triton", help="comma-separated: triton,cuda_ext")
    ap.add_argument("--ops", default="cln,rmsnorm")
    ap.add_argument("--dtype", default="fp32,bf16")
    ap.add_argument("--quick", action="store_true", help="defaults only")
    ap.add_argument(
        "--parts",
        default="shapes,seed,long",
        help="cLN parts, comma-separated: shapes (the issue shapes), seed (80, 64, 301), "
        "long (one 2M-frame sequence), copy (torch copy_ of each cLN shape's tensor: the "
        "speed of moving a forward's bytes at that size, same timer)",
    )
    ap.add_argument(
        "--variants",
        default="",
        help="comma-separated cLN variant names to run (default: all, or the default "
        "alone with --quick)",
    )
    ap.add_argument(
        "--modes", default="fwd,fwd_bwd", help="cLN modes at the target shapes: fwd,fwd_bwd"
    )
    ap.add_argument(
        "--regs",
        action="store_true",
        help="at the end, the registers and spills of every Triton kernel compiled",
    )
    ap.add_argument(
        "--seed-modes",
        default="fwd",
        help="cLN modes at the seed shape (--parts seed): fwd,fwd_bwd",
    )
    args = ap.parse_args()
    modes = args.modes.split(",")
    if not set(modes) <= {"fwd", "fwd_bwd"}:
        ap.error(f"--modes: {args.modes!r}, known: fwd, fwd_bwd")
    seed_modes = args.seed_modes.split(",")
    if not set(seed_modes) <= {"fwd", "fwd_bwd"}:
        ap.error(f"--seed-modes: {args.seed_modes!r}, known: fwd, fwd_bwd")
    parts = set(args.parts.split(","))
    known = {"shapes", "seed", "long", "copy"}
    if not parts <= known:
        ap.error(f"--parts: unknown {', '.join(sorted(parts - known))}")
    dtypes = [{"fp32": torch.float32, "bf16": torch.bfloat16}[d] for d in args.dtype.split(",")]
    ops = args.ops.split(",")
    bw = copy_bandwidth(torch.device("cuda")).gbps * 1e9
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s  (torch {torch.__version__})", flush=True)
    # The ptxas Triton builds the kernels with (a torch.compile earlier in the process would
    # have switched it: bench/toolchain.py).
    print(f"Triton's ptxas: {toolchain.describe()['backends']}", flush=True)

    def report(who, op, shape, dtype, mode, name, ms, factor):
        """One result line: factor x the tensor's bytes moved in ms milliseconds."""
        nbytes = factor * torch.Size(shape).numel() * torch.tensor([], dtype=dtype).element_size()
        gbs = nbytes / (ms * 1e-3)
        print(
            f"{who:8s} {op:7s} {str(shape):18s} {str(dtype)[6:]:9s} {mode:7s} {name:18s} "
            f"{ms * 1e3:9.1f} us {gbs / 1e9:7.0f} GB/s {gbs / bw:5.2f}",
            flush=True,
        )

    def run(backend, op, shape, dtype, mode, name, kw):
        try:
            with knobs(importlib.import_module(MODULES[backend]), kw):
                ms, factor = case(backend, op, shape, dtype, mode)
        except Exception as exc:  # report and go on: a sweep should not die on one variant
            print(
                f"{backend} {op} {shape} {dtype} {mode} {name}: FAILED "
                f"{type(exc).__name__}: {str(exc)[:300]}",
                flush=True,
            )
            return
        report(backend, op, shape, dtype, mode, name, ms, factor)

    if "copy" in parts:
        # The bytes of a cLN forward (read x, write y) moved by torch's copy kernel at each
        # target size, timed like the kernels: a kernel at this size does well to match it.
        for dtype in dtypes:
            for shape in CLN_SHAPES:
                src = torch.randn(shape, device="cuda").to(dtype)
                dst = torch.empty_like(src)
                ms = t_ms(lambda src=src, dst=dst: dst.copy_(src))
                report("torch", "copy_", shape, dtype, "fwd", "same-size copy", ms, 2)
                del src, dst

    for backend in args.backend.split(","):
        if "cln" in ops:
            variants = {"default": {}} if args.quick else CLN_VARIANTS[backend]
            if args.variants:
                want = args.variants.split(",")
                unknown = [v for v in want if v not in CLN_VARIANTS[backend]]
                if unknown:
                    ap.error(f"--variants: unknown {', '.join(unknown)} for {backend}")
                variants = {v: CLN_VARIANTS[backend][v] for v in want}
            for dtype in dtypes if "shapes" in parts else ():
                for shape in CLN_SHAPES:
                    for mode in modes:
                        for name, kw in variants.items():
                            run(backend, "cln", shape, dtype, mode, name, kw)
            seed_vars = {"default": {}} if args.quick else SEED_VARIANTS[backend]
            if args.variants:  # the seed's variants of those names (none of the others)
                seed_vars = {v: seed_vars[v] for v in want if v in seed_vars}
            for mode in seed_modes if "seed" in parts else ():
                for name, kw in seed_vars.items():
                    run(backend, "cln", SEED, torch.float32, mode, "seed " + name, kw)
            # A long single sequence: thousands of tiles (hang and long-prefix check).
            for mode in ("fwd", "fwd_bwd") if "long" in parts else ():
                run(backend, "cln", (1, 64, 2_000_000), torch.float32, mode, "long-seq", {})
        if "rmsnorm" in ops:
            rms_vars = {"default": {}} if args.quick else RMS_BWD_VARIANTS[backend]
            for dtype in dtypes:
                for shape in RMS_SHAPES:
                    run(backend, "rmsnorm", shape, dtype, "fwd", "default", {})
                    for name, kw in rms_vars.items():
                        run(backend, "rmsnorm", shape, dtype, "fwd_bwd", name, kw)
        if args.regs and backend == "triton":
            from bench.probe_placement import compiled_regs

            print("\n".join(compiled_regs(importlib.import_module(MODULES[backend]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
