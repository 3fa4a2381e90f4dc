"""``python -m bench``: the command line (see ``python -m bench --help``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

from bench import report
from bench.impls import PEERS, liger_available, parse_peers
from bench.runner import (
    AUTO_DTYPES,
    DTYPE_NAMES,
    MODES,
    Config,
    RunResult,
    count_cases,
    plan,
    run,
)
from bench.shapes import OPS, PRESETS, resolve_shapes
from common.registry import available_backends, backend_names, get_backend

EPILOG = """\
examples:
  python -m bench                                  # targets preset, every backend and peer
  python -m bench --op rmsnorm --shapes llm --dtype bf16,fp16 --plot
  python -m bench --op cln --backend triton --shapes 16x512x4000,cln:1x64x300 --mode fwd
  python -m bench --shapes small --cuda-graph      # latency-bound cases through CUDA graphs
  python -m bench --list-backends

Without a GPU the run uses the CPU (eager backend and eager peers, the 'small'
preset) and writes bench/results/cpu-<cpu>.{json,md}, never a GPU's files.
Exit status: 0, or 1 when a project backend fails its correctness check.
"""


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark cLN and RMSNorm across the project's backends and the peers "
        "(eager PyTorch, torch.compile, F.rms_norm, Liger-Kernel), checked against the "
        "float64 reference before timing.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--op", default="cln,rmsnorm", help="comma list of: cln, rmsnorm")
    p.add_argument(
        "--backend",
        default="all",
        help="project backends: comma list of names, 'all' (every available one) or 'none'",
    )
    p.add_argument(
        "--peers",
        default="all",
        help=f"peers: comma list of {', '.join(PEERS)} (aliases eager, compile), 'all' or "
        "'none'.  'all' on a CPU leaves out torch-compile",
    )
    p.add_argument("--mode", default="fwd,bwd,fwd_bwd", help="comma list of fwd, bwd, fwd_bwd")
    p.add_argument(
        "--dtype",
        default="auto",
        help="comma list of fp32, bf16, fp16, fp64, or 'auto' (cln fp32, rmsnorm bf16)",
    )
    p.add_argument(
        "--shapes",
        default=None,
        help=f"comma list of presets ({', '.join(PRESETS)}) and shapes like 16x512x4000, "
        "32768x4096 or cln:1x64x300 (default: targets on a GPU, small on a CPU)",
    )
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    p.add_argument("--list-backends", action="store_true", help="list backends and peers, exit")
    p.add_argument(
        "--csv",
        nargs="?",
        const="-",
        default=None,
        metavar="PATH",
        help="also write the cases as CSV (to PATH, or to stdout without one)",
    )
    p.add_argument("--plot", action="store_true", help="write PNG plots of GB/s per backend")
    p.add_argument(
        "--cuda-graph",
        nargs="?",
        const="small",
        default="off",
        choices=["off", "small", "all"],
        help="replay the timed calls from a CUDA graph: 'small' (the flag alone) for "
        "latency/L2-bound cases, 'all' for every case",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="timing time per case incl. warm-up (default 0.25 on a GPU, 0.03 on a CPU)",
    )
    p.add_argument("--seed", type=int, default=None, help="base seed (default: from the clock)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"directory of the JSON/MD/PNG results (default {report.RESULTS_DIR})",
    )
    p.add_argument("--tag", default="", help="suffix of the result file names")
    p.add_argument("--no-save", action="store_true", help="write no JSON/MD files")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    p.add_argument(
        "--copy-bytes",
        type=int,
        default=None,
        help="size of the copy-bandwidth buffer in bytes (default 2 GiB on a GPU)",
    )
    return p


def list_backends() -> str:
    lines = ["project backends:"]
    for name in backend_names():
        spec = get_backend(name)
        why = spec.unavailable_reason()
        state = "available" if why is None else f"unavailable: {why}"
        if not spec.automatic:
            state += " (by name only: never the automatic choice)"
        ops = ",".join(sorted(spec.ops))
        dts = ",".join(sorted(str(d).removeprefix("torch.") for d in spec.dtypes))
        lines.append(f"  {name:<10} {state}")
        devs = ",".join(sorted(spec.devices))
        lines.append(f"  {'':<10} ops {ops}; dtypes {dts}; devices {devs}")
    lines.append("peers:")
    gpu = torch.cuda.is_available()
    lines.append("  torch-eager    common.peers.cln_cumsum_eager / rmsnorm_eager: available")
    lines.append(
        "  torch-compile  torch.compile(torch-eager, dynamic=False): "
        + ("available" if gpu else "available (left out of 'all' on a CPU: --peers eager,compile)")
    )
    lines.append("  F.rms_norm     torch.nn.functional.rms_norm (rmsnorm): available")
    why = liger_available() if gpu else "needs a CUDA device"
    lines.append(
        "  liger          liger_kernel LigerRMSNormFunction (rmsnorm): "
        + ("available" if why is None else f"unavailable: {why}")
    )
    return "\n".join(lines)


def _dtypes(text: str, ops: list[str]) -> dict[str, list[torch.dtype]]:
    if text.strip().lower() == "auto":
        return {op: [AUTO_DTYPES[op]] for op in ops}
    out: list[torch.dtype] = []
    for t in _csv(text.lower()):
        if t not in DTYPE_NAMES:
            raise ValueError(f"unknown dtype {t!r}; use fp32, bf16, fp16, fp64 or auto")
        if DTYPE_NAMES[t] not in out:
            out.append(DTYPE_NAMES[t])
    return {op: list(out) for op in ops}


def _backends(text: str, device: torch.device, notes: list[str]) -> list[str]:
    t = text.strip().lower()
    if t == "none":
        return []
    if t == "all":
        names = available_backends(device)
        # Emulated backends (Triton interpreter, Numba simulator) are for tests.
        return [n for n in names if not get_backend(n).emulated()]
    out = []
    for name in _csv(text):
        spec = get_backend(name)  # raises, listing the known names
        why = spec.unavailable_reason()
        if why is not None:
            notes.append(f"backend {name!r} is not available here: {why}")
            continue
        if device.type not in spec.supported_devices():
            notes.append(f"backend {name!r} does not run on {device.type}")
            continue
        if name not in out:
            out.append(name)
    return out


def make_config(args: argparse.Namespace, notes: list[str]) -> Config:
    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError("--device cuda: no CUDA device here")
    if device.type == "cuda":
        device = torch.device("cuda", torch.cuda.current_device())
    ops = _csv(args.op.lower())
    for op in ops:
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}; ops: {', '.join(OPS)}")
    modes = list(MODES) if args.mode.strip().lower() == "all" else _csv(args.mode.lower())
    for m in modes:
        if m not in MODES:
            raise ValueError(f"unknown mode {m!r}; modes: {', '.join(MODES)}")
    shapes_arg = args.shapes or ("targets" if device.type == "cuda" else "small")
    shapes = resolve_shapes(shapes_arg, ops)
    for op in ops:
        if not shapes[op]:
            notes.append(f"--shapes {shapes_arg}: no shapes for {op}")
    budget = args.budget if args.budget is not None else (0.25 if device.type == "cuda" else 0.03)
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    return Config(
        ops=ops,
        backends=_backends(args.backend, device, notes),
        peers=parse_peers(args.peers, device),
        modes=modes,
        dtypes=_dtypes(args.dtype, ops),
        shapes=shapes,
        device=device,
        budget_s=budget,
        cuda_graph=args.cuda_graph,
        seed=seed,
        copy_bytes=args.copy_bytes,
    )


def _run_with_progress(cfg: Config, quiet: bool) -> RunResult:
    if quiet:
        return run(cfg)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    total = count_cases(cfg)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as prog:
        task = prog.add_task("starting", total=total)
        return run(
            cfg,
            progress=lambda msg: prog.update(task, description=msg),
            advance=lambda n: prog.advance(task, n),
        )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list_backends:
        print(list_backends())
        return 0
    notes: list[str] = []
    try:
        cfg = make_config(args, notes)
    except (ValueError, LookupError) as exc:
        parser.error(str(exc))
    env = report.environment(cfg.device)
    command = report.command_line(argv)
    n_cases = count_cases(cfg)
    groups = len(plan(cfg))
    if not args.quiet:
        where = (
            env["gpu"]["name"]  # type: ignore[index]
            if cfg.device.type == "cuda"
            else "the CPU (eager backend and eager peers; GPU figures need a GPU)"
        )
        est = n_cases * (cfg.budget_s + 0.1) + (
            groups * 12.0 if "torch-compile" in cfg.peers else 0.0
        )
        print(
            f"bench on {where}: {groups} (op, shape, dtype) groups, {n_cases} cases, "
            f"rough estimate {est:.0f} s",
            file=sys.stderr,
        )
    result = _run_with_progress(cfg, args.quiet)
    result.notes[:0] = notes
    if not args.quiet:
        report.print_table(result, env, command)
    out_dir = args.out if args.out is not None else report.RESULTS_DIR
    stem = report.result_stem(env, args.tag)
    written: list[Path] = []
    if not args.no_save:
        written.extend(report.write_results(result, env, command, argv, out_dir, stem))
    if args.plot:
        written.extend(report.write_plots(result, env, out_dir, stem))
    if args.csv is not None:
        text = report.to_csv(result)
        if args.csv == "-":
            sys.stdout.write(text)
        else:
            Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
            Path(args.csv).write_text(text)
            written.append(Path(args.csv))
    for p in written:
        print(f"wrote {os.path.relpath(p)}", file=sys.stderr)
    print(f"done in {result.wall_s:.1f} s", file=sys.stderr)
    if result.failed:
        names = sorted({c.impl for c in result.failed})
        print(
            f"correctness FAILED for backend(s) {', '.join(names)}: "
            f"{len(result.failed)} case(s) not timed",
            file=sys.stderr,
        )
        return 1
    return 0
