"""Compare two benchmark runs: ``python -m bench.compare [A B] [-- extra args]``.

* Two result files of ``python -m bench`` (``bench/results/*.json``): a table
  of every case present in both, with median us, GB/s and the ratio B/A
  (< 1: B is faster).  Cases that changed by more than ``--threshold``
  (default 5 %) are marked.
* Anything else (run ids such as ``0001``, paths of saved pytest-benchmark
  runs, or nothing: the two newest runs under ``--storage``) goes to
  ``pytest-benchmark compare``, grouped by case, with the extra args after ``--``
  passed through.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def _is_harness_json(p: str) -> bool:
    path = Path(p)
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "cases" in data and "copy_bandwidth_gbps" in data


def _key(c: dict) -> tuple[str, str, str, str, str]:
    return (c["op"], c["shape"], c["dtype"], c["mode"], c["impl"])


def compare_results(a: Path, b: Path, threshold: float) -> str:
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    ca = {_key(c): c for c in da["cases"]}
    cb = {_key(c): c for c in db["cases"]}
    lines = [
        f"A: {a} ({da.get('date', '?')}, copy BW {da['copy_bandwidth_gbps']:,.0f} GB/s)",
        f"B: {b} ({db.get('date', '?')}, copy BW {db['copy_bandwidth_gbps']:,.0f} GB/s)",
        "",
        f"{'op':<8} {'shape':<14} {'dtype':<5} {'mode':<8} {'impl':<14} "
        f"{'A us':>10} {'B us':>10} {'B/A':>7} {'A GB/s':>8} {'B GB/s':>8}",
    ]
    changed = 0
    for k in [k for k in ca if k in cb]:
        x, y = ca[k], cb[k]
        ma, mb = x.get("median_us"), y.get("median_us")
        if ma is None or mb is None:
            sa, sb = x.get("status"), y.get("status")
            lines.append(f"{k[0]:<8} {k[1]:<14} {k[2]:<5} {k[3]:<8} {k[4]:<14} {sa} -> {sb}")
            continue
        ratio = mb / ma
        mark = ""
        if abs(ratio - 1.0) > threshold:
            mark = "  faster" if ratio < 1 else "  SLOWER"
            changed += 1
        lines.append(
            f"{k[0]:<8} {k[1]:<14} {k[2]:<5} {k[3]:<8} {k[4]:<14} {ma:>10.1f} {mb:>10.1f} "
            f"{ratio:>7.3f} {x.get('gbps') or 0:>8.0f} {y.get('gbps') or 0:>8.0f}{mark}"
        )
    only = len(set(ca) ^ set(cb))
    lines.append("")
    lines.append(
        f"{changed} case(s) changed by more than {threshold:.0%}; {only} case(s) in only one run"
    )
    return "\n".join(lines)


def _newest_runs(storage: Path, n: int = 2) -> list[str]:
    runs = sorted(storage.glob("*/*.json"), key=lambda p: p.stat().st_mtime)
    return [str(p) for p in runs[-n:]]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    p = argparse.ArgumentParser(
        prog="python -m bench.compare",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("runs", nargs="*", help="two result JSONs, or pytest-benchmark runs")
    p.add_argument("--storage", default=".benchmarks", help="pytest-benchmark storage")
    p.add_argument("--threshold", type=float, default=0.05, help="relative change to mark")
    args = p.parse_args(argv)
    if len(args.runs) == 2 and all(_is_harness_json(r) for r in args.runs):
        print(compare_results(Path(args.runs[0]), Path(args.runs[1]), args.threshold))
        return 0
    runs = args.runs or _newest_runs(Path(args.storage))
    if not runs:
        print(
            f"no saved pytest-benchmark runs under {args.storage}: run "
            "'pytest bench/ --benchmark-autosave' twice first",
            file=sys.stderr,
        )
        return 2
    cmd = [
        sys.executable,
        "-m",
        "pytest_benchmark",
        "--storage",
        args.storage,
        "compare",
        "--group-by=group",
        "--sort=name",
        "--columns=min,median,iqr,rounds",
        *runs,
        *extra,
    ]
    return subprocess.call(cmd)


if __name__ == "__main__":
    raise SystemExit(main())
