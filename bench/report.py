"""Reporting: environment, terminal table, JSON / Markdown / CSV files, plots."""

from __future__ import annotations

import csv
import datetime as _dt
import importlib.metadata as md
import io
import json
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

import torch

from bench.runner import CaseResult, RunResult, dtype_name

SCHEMA = 1
RESULTS_DIR = Path(__file__).resolve().parent / "results"

CSV_FIELDS: tuple[str, ...] = (
    "op",
    "shape",
    "dtype",
    "mode",
    "impl",
    "kind",
    "status",
    "regime",
    "bytes",
    "median_us",
    "p20_us",
    "p80_us",
    "gbps",
    "frac_copy_bw",
    "speedup_vs_eager",
    "speedup_vs_compile",
    "max_rel_error",
    "timing",
    "copies",
    "samples",
    "message",
)


# --------------------------------------------------------------------------- environment
def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def _version(*dists: str) -> str | None:
    for d in dists:
        try:
            return md.version(d)
        except md.PackageNotFoundError:
            continue
    return None


def _driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
        return out.splitlines()[0].strip() if out else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def environment(device: torch.device) -> dict[str, object]:
    env: dict[str, object] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_name(),
        "versions": {
            "torch": torch.__version__,
            "triton": _version("triton", "pytorch-triton"),
            "cupy": _version("cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"),
            "numba": _version("numba"),
            "numba-cuda": _version("numba-cuda"),
            "liger-kernel": _version("liger-kernel", "liger_kernel"),
            "numpy": _version("numpy"),
        },
    }
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        env["gpu"] = {
            "name": p.name,
            "slug": slugify(p.name),
            "driver": _driver_version(),
            "cuda_runtime": torch.version.cuda,
            "capability": f"{p.major}.{p.minor}",
            "sm_count": p.multi_processor_count,
            "memory_bytes": p.total_memory,
            "l2_cache_bytes": int(p.L2_cache_size),
            "device_count": torch.cuda.device_count(),
        }
        from bench.toolchain import describe

        env["triton_ptxas"] = describe()
    else:
        env["gpu"] = None
    return env


def result_stem(env: dict[str, object], tag: str = "") -> str:
    """``<gpu-slug>[-tag]`` on a GPU; ``cpu-<cpu-slug>[-tag]`` without one.

    A CPU run can therefore never overwrite a GPU's committed results
    (``bench/results/cpu-*`` is git-ignored).
    """
    gpu = env.get("gpu")
    stem = gpu["slug"] if isinstance(gpu, dict) else "cpu-" + slugify(str(env["cpu"]))[:40]
    return f"{stem}-{slugify(tag)}" if tag else stem


# --------------------------------------------------------------------------- formatting
def _f(v: float | None, fmt: str) -> str:
    return "" if v is None else format(v, fmt)


def _us(v: float | None) -> str:
    if v is None:
        return ""
    return f"{v:.1f}" if v < 1000 else f"{v:,.0f}"


def _gbps(v: float | None) -> str:
    if v is None:
        return ""
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def _x(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}x"


def _regime(c: CaseResult) -> str:
    return {"bandwidth-bound": "BW", "latency/L2-bound": "lat/L2"}.get(c.regime, c.regime)


def _groups(cases: list[CaseResult]) -> dict[tuple[str, str], list[CaseResult]]:
    out: dict[tuple[str, str], list[CaseResult]] = {}
    for c in cases:
        out.setdefault((c.op, c.dtype), []).append(c)
    return out


def _ordered(cases: list[CaseResult]) -> list[CaseResult]:
    shapes: list[str] = []
    impls: list[str] = []
    for c in cases:
        if c.shape not in shapes:
            shapes.append(c.shape)
        if c.impl not in impls:
            impls.append(c.impl)
    modes = {"fwd": 0, "bwd": 1, "fwd_bwd": 2}
    return sorted(
        cases, key=lambda c: (shapes.index(c.shape), modes.get(c.mode, 9), impls.index(c.impl))
    )


HEADERS = (
    "shape",
    "mode",
    "impl",
    "regime",
    "median us",
    "GB/s",
    "% copy BW",
    "vs eager",
    "vs compile",
    "rel err",
    "status",
)


def _row(c: CaseResult) -> list[str]:
    frac = None if c.frac_copy_bw is None else 100 * c.frac_copy_bw
    return [
        c.shape,
        c.mode,
        c.impl,
        _regime(c),
        _us(c.median_us),
        _gbps(c.gbps),
        _f(frac, ".1f"),
        _x(c.speedup_vs_eager),
        _x(c.speedup_vs_compile),
        _f(c.max_rel_error, ".1e"),
        c.status,
    ]


def header_lines(run: RunResult, env: dict[str, object], command: str) -> list[str]:
    gpu = env.get("gpu")
    v = env["versions"]
    assert isinstance(v, dict)
    vers = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    lines = []
    if isinstance(gpu, dict):
        lines.append(
            f"GPU: {gpu['name']} (sm_{str(gpu['capability']).replace('.', '')}, "
            f"{gpu['sm_count']} SMs, L2 {gpu['l2_cache_bytes'] / 2**20:.0f} MiB), "
            f"driver {gpu['driver'] or 'unknown'}, CUDA {gpu['cuda_runtime']}"
        )
    else:
        lines.append(f"CPU run: {env['cpu']} (CPU timings, not GPU figures)")
    lines.append(f"Versions: python {env['python']}, {vers}")
    ptxas = env.get("triton_ptxas")
    if isinstance(ptxas, dict):
        lines.append(
            "Triton's ptxas (bench/toolchain.py): "
            + "; ".join(f"{who}: {what}" for who, what in ptxas.items())
        )
    lines.append(
        f"Copy bandwidth: {run.copy_bw.gbps:,.0f} GB/s ({run.copy_bw.method}; read + write bytes)"
    )
    lines.append(f"Command: {command}")
    lines.append(
        f"Seed {run.seed}; bytes model fwd 2x, bwd 3x, fwd_bwd 5x the tensor size; regime "
        "BW = traffic > 4x L2 (bandwidth-bound), lat/L2 = latency or L2 bound"
    )
    return lines


# --------------------------------------------------------------------------- terminal
def print_table(run: RunResult, env: dict[str, object], command: str) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    con = Console()
    if not con.is_terminal:  # piped (make bench | tee): do not squeeze into 80 columns
        con = Console(width=160)
    for line in header_lines(run, env, command):
        con.print(line, highlight=False)
    style = {"ok": "green", "inexact": "yellow", "FAILED": "bold red", "error": "bold red"}
    for (op, dt), cases in _groups(run.cases).items():
        t = Table(title=f"{op} {dt}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for h in HEADERS:
            left = h in ("shape", "mode", "impl", "regime", "status")
            t.add_column(h, justify="left" if left else "right", no_wrap=True)
        last = None
        for c in _ordered(cases):
            if last is not None and (c.shape, c.mode) != last:
                t.add_section()
            last = (c.shape, c.mode)
            row = _row(c)
            row[-1] = f"[{style.get(c.status, 'dim')}]{c.status}[/]"
            t.add_row(*row)
        con.print(t)
    for n in run.notes:
        con.print(f"[yellow]note:[/] {n}", highlight=False)
    for c in run.cases:
        if c.status in ("FAILED", "error", "inexact") and c.message:
            col = "yellow" if c.status == "inexact" else "red"
            con.print(
                f"[{col}]{c.status}[/] {c.op} {c.shape} {c.dtype} {c.mode} {c.impl}: {c.message}",
                highlight=False,
            )


# --------------------------------------------------------------------------- files
def to_json(run: RunResult, env: dict[str, object], command: str, argv: list[str]) -> dict:
    cfg = run.config
    return {
        "schema": SCHEMA,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "argv": argv,
        "environment": env,
        "copy_bandwidth_gbps": run.copy_bw.gbps,
        "copy_bandwidth": run.copy_bw.as_dict(),
        "l2_cache_bytes": run.l2_bytes,
        "config": {
            "ops": cfg.ops,
            "backends": cfg.backends,
            "peers": cfg.peers,
            "modes": cfg.modes,
            "dtypes": {op: [dtype_name(d) for d in ds] for op, ds in cfg.dtypes.items()},
            "shapes": {op: [list(s) for s in ss] for op, ss in cfg.shapes.items()},
            "device": str(cfg.device),
            "budget_s": cfg.budget_s,
            "cuda_graph": cfg.cuda_graph,
            "seed": run.seed,
        },
        "bytes_model": "fwd 2*size (read x, write y); bwd 3*size (read x, dy; write dx); "
        "fwd_bwd 5*size; parameters and statistics ignored",
        "notes": run.notes,
        "wall_s": run.wall_s,
        "cases": [c.as_dict() for c in run.cases],
    }


def _write_tables(out: io.StringIO, cases: list[CaseResult]) -> None:
    """One Markdown table per (op, dtype)."""
    for (op, dt), group in _groups(cases).items():
        out.write(f"## {op} {dt}\n\n")
        out.write("| " + " | ".join(HEADERS) + " |\n")
        out.write("|" + "|".join("---" if i < 4 or i == 10 else "---:" for i in range(11)) + "|\n")
        for c in _ordered(group):
            out.write("| " + " | ".join(_row(c)) + " |\n")
        out.write("\n")


def to_markdown(run: RunResult, env: dict[str, object], command: str) -> str:
    out = io.StringIO()
    gpu = env.get("gpu")
    title = gpu["name"] if isinstance(gpu, dict) else f"CPU ({env['cpu']})"
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out.write(f"# cLN / RMSNorm benchmark: {title}\n\n")
    out.write(f"- Date: {date}; wall time {run.wall_s:.0f} s\n")
    for line in header_lines(run, env, f"`{command}`"):
        out.write(f"- {line}\n")
    out.write(
        "- Status: ok; inexact = a peer that fails the correctness check (still timed); "
        "FAILED = a project backend that fails it (never timed)\n"
    )
    for n in run.notes:
        out.write(f"- Note: {n}\n")
    out.write("\n")
    _write_tables(out, run.cases)
    msgs = [c for c in run.cases if c.message and c.status not in ("ok",)]
    if msgs:
        out.write("## Messages\n\n")
        for c in msgs:
            out.write(f"- {c.status}: {c.op} {c.shape} {c.dtype} {c.mode} {c.impl}: {c.message}\n")
    return out.getvalue()


def to_csv(run: RunResult) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_FIELDS), extrasaction="ignore")
    w.writeheader()
    for c in run.cases:
        w.writerow(c.as_dict())
    return buf.getvalue()


def write_results(
    run: RunResult,
    env: dict[str, object],
    command: str,
    argv: list[str],
    out_dir: Path,
    stem: str,
) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    jpath = out_dir / f"{stem}.json"
    mpath = out_dir / f"{stem}.md"
    jpath.write_text(json.dumps(to_json(run, env, command, argv), indent=1) + "\n")
    mpath.write_text(to_markdown(run, env, command))
    return jpath, mpath


def write_plots(run: RunResult, env: dict[str, object], out_dir: Path, stem: str) -> list[Path]:
    """One PNG per (op, dtype): achieved GB/s per implementation, copy bandwidth drawn in."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gpu = env.get("gpu")
    dev_name = gpu["name"] if isinstance(gpu, dict) else "CPU"
    paths: list[Path] = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for (op, dt), cases in _groups(run.cases).items():
        timed = [c for c in cases if c.gbps is not None]
        if not timed:
            continue
        modes = [m for m in ("fwd", "bwd", "fwd_bwd") if any(c.mode == m for c in timed)]
        shapes = list(dict.fromkeys(c.shape for c in cases))
        impls = list(dict.fromkeys(c.impl for c in timed))
        fig, axes = plt.subplots(
            len(modes),
            1,
            figsize=(max(7.0, 1.3 * len(shapes) * max(1, len(impls)) / 3), 3.2 * len(modes)),
            squeeze=False,
        )
        width = 0.8 / max(1, len(impls))
        for ax, mode in zip(axes[:, 0], modes, strict=True):
            for k, impl in enumerate(impls):
                xs, ys = [], []
                for i, s in enumerate(shapes):
                    hit = [c for c in timed if c.mode == mode and c.impl == impl and c.shape == s]
                    if hit and hit[0].gbps is not None:
                        xs.append(i - 0.4 + width * (k + 0.5))
                        ys.append(hit[0].gbps)
                ax.bar(xs, ys, width=width, label=impl)
            ax.axhline(
                run.copy_bw.gbps,
                color="black",
                linestyle="--",
                linewidth=1,
                label=f"copy BW {run.copy_bw.gbps:,.0f} GB/s",
            )
            ax.set_xticks(range(len(shapes)))
            ax.set_xticklabels(shapes, rotation=20, fontsize=8)
            ax.set_ylabel("GB/s")
            bw = run.copy_bw.gbps
            sec = ax.secondary_yaxis(
                "right", functions=(lambda v, b=bw: v / b, lambda f, b=bw: f * b)
            )
            sec.set_ylabel("fraction of copy BW", fontsize=8)
            ax.set_title(f"{op} {dt} {mode} on {dev_name}", fontsize=10)
            top = max([run.copy_bw.gbps] + [c.gbps or 0.0 for c in timed if c.mode == mode])
            ax.set_ylim(0, top * 1.15)
        axes[0, 0].legend(fontsize=7, ncol=min(4, len(impls) + 1), loc="upper right")
        fig.tight_layout()
        p = out_dir / f"{stem}-{op}-{dt}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    return paths


def command_line(argv: list[str]) -> str:
    return shlex.join([Path(sys.executable).name, "-m", "bench", *argv])


# --------------------------------------------------------------------------- re-render
def markdown_from_json(data: dict) -> str:
    """Markdown tables of a saved run (``bench/results/*.json``), e.g. when only the
    JSON of a run came back from the GPU machine."""
    from bench.runner import CaseResult

    env = data.get("environment", {})
    gpu = env.get("gpu") if isinstance(env, dict) else None
    title = gpu["name"] if isinstance(gpu, dict) else "CPU"
    vers = ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items() if v)
    out = io.StringIO()
    out.write(f"# cLN / RMSNorm benchmark: {title}\n\n")
    out.write(f"- Date: {data.get('date')}; wall time {data.get('wall_s', 0):.0f} s\n")
    out.write(f"- Versions: python {env.get('python')}, {vers}\n")
    out.write(f"- Copy bandwidth: {data['copy_bandwidth_gbps']:,.0f} GB/s (read + write bytes)\n")
    out.write(f"- Command: `{data.get('command')}`\n")
    out.write("- Rendered from the JSON by `python -m bench.report FILE.json`\n\n")
    fields = set(CaseResult.__dataclass_fields__)
    cases = [CaseResult(**{k: v for k, v in c.items() if k in fields}) for c in data["cases"]]
    _write_tables(out, cases)
    return out.getvalue()


if __name__ == "__main__":
    import json
    import sys

    for arg in sys.argv[1:]:
        src = Path(arg)
        dst = src.with_suffix(".md")
        dst.write_text(markdown_from_json(json.loads(src.read_text())))
        print(f"wrote {dst}")
