"""The benchmark harness (bench/): it runs on the CPU, and it rejects wrong kernels.

Everything here runs on the CPU (``--device cpu``), also on a GPU machine, and
takes seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from torch import Tensor

import bench.impls
import common
from bench import report
from bench.cli import main as bench_main
from bench.shapes import PRESETS, resolve_shapes
from tests.harness import registered_backend

ROOT = Path(__file__).resolve().parents[1]
DEVICES = frozenset({"cpu", "cuda"})
DTYPES = frozenset({torch.float32, torch.float16, torch.bfloat16, torch.float64})
FAST = ["--device", "cpu", "--quiet", "--budget", "0.002", "--seed", "11"]


@pytest.fixture
def skipnorm_backend() -> Iterator[str]:
    """tests/wrong/skip_normalization.py: y = x * gamma + beta, no normalization."""
    with registered_backend(
        "bench_skipnorm", "tests.wrong.skip_normalization", dtypes=DTYPES, devices=DEVICES
    ) as name:
        yield name


@pytest.fixture
def wrong_bwd_backend() -> Iterator[str]:
    """tests/wrong/wrong_backward.py: right forward, backward without the mean terms."""
    with registered_backend(
        "bench_wrong_bwd", "tests.wrong.wrong_backward", dtypes=DTYPES, devices=DEVICES
    ) as name:
        yield name


def _result(out: Path) -> dict:
    files = list(out.glob("cpu-*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


# --------------------------------------------------------------------------- shapes
def test_targets_preset_is_exactly_the_issue_targets() -> None:
    assert PRESETS["targets"] == {
        "cln": [(80, 64, 301), (16, 512, 4000), (4, 256, 16000), (2, 128, 64000)],
        "rmsnorm": [(32768, 4096), (16384, 8192), (2048, 4096)],
    }
    assert (80, 64, 301) in PRESETS["cln"]["cln"]
    assert any(n == 128 and m >= 100_000 for m, n in PRESETS["llm"]["rmsnorm"])
    for op in ("cln", "rmsnorm"):
        assert set(PRESETS["targets"][op]) <= set(PRESETS["all"][op])


def test_explicit_shapes_and_prefixes() -> None:
    got = resolve_shapes("cln:1x64x300,32768x4096,small", ["cln", "rmsnorm"])
    assert got["cln"][0] == (1, 64, 300) and (32768, 4096) not in got["cln"]
    assert got["rmsnorm"][0] == (32768, 4096)
    assert (80, 64, 301) in got["cln"]
    with pytest.raises(ValueError, match="preset"):
        resolve_shapes("huge", ["cln"])
    with pytest.raises(ValueError, match="does not fit"):
        resolve_shapes("cln:64x64", ["cln"])


# --------------------------------------------------------------------------- negative controls
def test_wrong_backend_is_failed_and_never_timed(skipnorm_backend: str, tmp_path: Path) -> None:
    rc = bench_main(
        [
            *FAST,
            "--backend",
            f"eager,{skipnorm_backend}",
            "--peers",
            "eager",
            "--shapes",
            "cln:2x16x50,16x64",
            "--out",
            str(tmp_path),
        ]
    )
    assert rc == 1  # a project backend failed its correctness check
    cases = _result(tmp_path)["cases"]
    wrong = [c for c in cases if c["impl"] == skipnorm_backend]
    assert len(wrong) == 6  # 2 ops x 3 modes
    for c in wrong:
        assert c["status"] == "FAILED", c
        assert c["median_us"] is None and c["gbps"] is None and c["samples"] == 0, c
        assert "correctness" in c["message"] and c["max_rel_error"] > c["tolerances"]["y"]
    good = [c for c in cases if c["impl"] != skipnorm_backend]
    assert good and all(c["status"] == "ok" and c["median_us"] > 0 for c in good)


def test_wrong_backward_fails_only_backward_modes(wrong_bwd_backend: str, tmp_path: Path) -> None:
    rc = bench_main(
        [
            *FAST,
            "--backend",
            wrong_bwd_backend,
            "--peers",
            "none",
            "--shapes",
            "cln:2x16x50,16x64",
            "--out",
            str(tmp_path),
        ]
    )
    assert rc == 1
    by_mode = {(c["op"], c["mode"]): c for c in _result(tmp_path)["cases"]}
    for op in ("cln", "rmsnorm"):
        assert by_mode[(op, "fwd")]["status"] == "ok" and by_mode[(op, "fwd")]["median_us"] > 0
        for mode in ("bwd", "fwd_bwd"):
            c = by_mode[(op, mode)]
            assert c["status"] == "FAILED" and c["median_us"] is None, c
            assert c["errors"]["dx"] > c["tolerances"]["dx"]


def test_inexact_peer_is_timed_and_flagged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def sloppy(op: str) -> Callable[[Tensor, tuple[Tensor, ...]], Tensor]:
        return lambda x, p: x * 1.0  # "forgets" to normalize

    monkeypatch.setattr(bench.impls, "_eager_peer", sloppy)
    rc = bench_main(
        [
            *FAST,
            "--backend",
            "eager",
            "--peers",
            "eager",
            "--mode",
            "fwd",
            "--shapes",
            "cln:2x16x50",
            "--out",
            str(tmp_path),
        ]
    )
    assert rc == 0  # peers never fail the run
    peer = [c for c in _result(tmp_path)["cases"] if c["impl"] == "torch-eager"]
    assert len(peer) == 1 and peer[0]["status"] == "inexact" and peer[0]["median_us"] > 0


def test_each_impl_compiles_with_its_own_ptxas(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """torch.compile's Inductor sets TRITON_PTXAS_PATH for the rest of the process; the runner
    gives the compile peer Inductor's choice and every other implementation the process's own
    (bench/toolchain.py), so a group's figures do not depend on the groups before it."""
    from bench import runner, toolchain

    seen: list[tuple[str, str | None]] = []

    def record(g, impl, modes, *args, **kw):  # type: ignore[no-untyped-def]
        seen.append((impl.name, os.environ.get(toolchain.ENV)))
        if impl.name == runner.COMPILE_PEER:
            os.environ[toolchain.ENV] = "/inductor/choice"  # what Inductor's first compile does
        return []

    monkeypatch.delenv(toolchain.ENV, raising=False)
    monkeypatch.setattr(runner, "_run_impl", record)
    monkeypatch.setattr(toolchain, "_START", None)
    monkeypatch.setattr(toolchain, "inductor_ptxas", lambda: "/torch/bin/ptxas")
    args = ["--backend", "eager", "--peers", "eager,compile", "--mode", "fwd"]
    rc = bench_main([*FAST, *args, "--shapes", "cln:2x4x8,cln:2x4x16", "--out", str(tmp_path)])
    assert rc == 0
    one_group = [("eager", None), ("torch-eager", None), ("torch-compile", "/torch/bin/ptxas")]
    assert seen == one_group * 2
    assert toolchain.ENV not in os.environ


def test_ptxas_env_restores_the_previous_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import toolchain

    monkeypatch.setenv(toolchain.ENV, "/before")
    with toolchain.ptxas_env(None):
        assert toolchain.ENV not in os.environ
        with toolchain.ptxas_env("/inner"):
            assert os.environ[toolchain.ENV] == "/inner"
        assert toolchain.ENV not in os.environ
    assert os.environ[toolchain.ENV] == "/before"
    # A value set before the run is Inductor's choice too (it leaves a user's setting alone).
    monkeypatch.setattr(toolchain, "_START", "/user/ptxas")
    assert toolchain.ptxas_for(True) == toolchain.ptxas_for(False) == "/user/ptxas"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without a GPU")
def test_gpu_probes_say_they_need_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import probe_order, probe_placement, probe_seed_pid

    assert probe_order.main(["--sequence", "2x128x64000"]) == 2
    assert probe_placement.main([]) == 2
    assert probe_seed_pid.main([]) == 2
    err = capsys.readouterr().err
    for tool in ("probe_order", "probe_placement", "probe_seed_pid"):
        assert f"{tool}: needs a CUDA device" in err


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--tickets", "ticket"], "--tickets: one of atomic, pid"),
        (["--shapes", "16x512"], "--shapes: cLN shapes are BxCxT"),
        (["--shapes", "16x0x4"], "--shapes: bad shape"),
    ],
)
def test_timeline_cln_rejects_bad_arguments(
    argv: list[str], msg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked before it looks for a GPU, so the message is the same on any machine."""
    from bench import timeline_cln

    with pytest.raises(SystemExit) as exc:
        timeline_cln.main(argv)
    assert exc.value.code == 2
    assert msg in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without a GPU")
def test_timeline_cln_says_it_needs_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import timeline_cln

    assert timeline_cln.main(["--shapes", "80x64x301", "--tickets", "atomic,pid"]) == 1
    assert "timeline_cln: needs a CUDA device" in capsys.readouterr().err


def test_ablate_with_parses_knob_values() -> None:
    from bench.ablate_cln import parse_with

    label, kw = parse_with("t16k ept256:CLN_FWD_TILE_16BIT=16384; CLN_FWD_MAXNREG_PAIRS=None")
    assert label == "t16k ept256"
    assert kw == {"CLN_FWD_TILE_16BIT": 16384, "CLN_FWD_MAXNREG_PAIRS": None}
    for bad in ("CLN_FWD_TILE=1", "x:", "x:CLN_FWD_TILE", "x:CLN_FWD_TILE=int("):
        with pytest.raises(ValueError):
            parse_with(bad)


@pytest.mark.parametrize(
    "spec, msg",
    [
        ("x:CLN_NO_SUCH_KNOB=1", "has no knob CLN_NO_SUCH_KNOB"),
        ("x:CLN_FWD_TILE=tile", "is not a Python literal"),
    ],
)
def test_ablate_rejects_bad_with_before_any_gpu_work(
    spec: str, msg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import ablate_cln

    with pytest.raises(SystemExit) as exc:
        ablate_cln.main(["--no-runs", "--with", spec])
    assert exc.value.code == 2
    assert msg in capsys.readouterr().err


# --------------------------------------------------------------------------- end to end
def test_cli_runs_on_cpu_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "results"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--device",
            "cpu",
            "--shapes",
            "small",
            "--budget",
            "0.01",
            "--out",
            str(out),
            "--plot",
            "--csv",
            str(tmp_path / "cases.csv"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert elapsed < 120, f"CPU run took {elapsed:.0f} s"
    assert "GPU figures need a GPU" in proc.stderr + proc.stdout
    data = _result(out)
    assert data["copy_bandwidth_gbps"] > 0 and data["environment"]["gpu"] is None
    assert data["command"].endswith("--csv " + str(tmp_path / "cases.csv"))
    cases = data["cases"]
    ops = {c["op"] for c in cases}
    assert ops == {"cln", "rmsnorm"}
    assert {c["mode"] for c in cases} == {"fwd", "bwd", "fwd_bwd"}
    assert {"eager", "torch-eager", "F.rms_norm"} <= {c["impl"] for c in cases}
    for c in cases:
        assert c["status"] == "ok", c
        assert c["median_us"] > 0 and c["gbps"] > 0 and c["frac_copy_bw"] > 0
        assert c["max_rel_error"] <= max(c["tolerances"].values())
        assert c["regime"] == "cpu"
    assert any(c["speedup_vs_eager"] for c in cases if c["impl"] == "eager")
    md = next(out.glob("cpu-*.md")).read_text()
    assert "Copy bandwidth" in md and "| shape |" in md
    assert len(list(out.glob("cpu-*-*.png"))) == 2  # one per (op, dtype)
    assert (tmp_path / "cases.csv").read_text().startswith("op,shape,dtype,mode,impl")


def test_cpu_results_never_take_a_gpu_file_name() -> None:
    env = report.environment(torch.device("cpu"))
    assert report.result_stem(env).startswith("cpu-")
    assert report.result_stem(env, "x").startswith("cpu-")


def test_tile_skeleton_plan_keeps_only_legal_cases() -> None:
    """bench.tile_skeleton (GPU only) times what its plan lists: every case has T a whole number
    of 16-byte packs, PPR dividing the block (except hold_bulk, whose threads issue whole
    rows), and a hold tile that fits one SM."""
    from bench.tile_skeleton import MAX_SMEM, THREADS, plan

    cases = plan([(16, 512, 4000), (1, 64, 301)], [4, 8, 16, 32, 64, 3])
    assert cases
    for case in cases:
        assert case.shape[2] * case.elem % 16 == 0
        assert case.mode == "hold_bulk" or THREADS % case.ppr == 0
        assert case.smem <= MAX_SMEM
        assert case.frames == case.ppr * 16 // case.elem
    assert {c.mode for c in cases if c.ppr == 3} == {"hold_bulk"}
    # (1, 64, 301): 301 frames are no whole number of packs in either dtype.
    assert {c.shape for c in cases} == {(16, 512, 4000)}
    # 512 channels: a hold tile of PPR 32 (256 KB) does not fit; its stream twin is kept.
    assert not [c for c in cases if c.mode == "hold" and c.ppr >= 32]
    assert [c for c in cases if c.mode == "stream" and c.ppr == 32]


def test_tune_variants_name_existing_knobs():
    """Every launch variant of ``bench.tune`` sets constants its backend's kernel module has
    (a renamed knob would otherwise be reported and skipped on the GPU, costing a call)."""
    import importlib

    from bench import tune

    for table in (tune.CLN_VARIANTS, tune.SEED_VARIANTS, tune.RMS_BWD_VARIANTS):
        for backend, variants in table.items():
            mod = importlib.import_module(tune.MODULES[backend])
            for name, kw in variants.items():
                missing = tune.missing_knobs(mod, kw)
                assert not missing, f"{backend} variant {name!r}: no knob {missing}"


def test_model_tasnet_on_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bench.model_tasnet at a toy size: every variant checked against the eager cumsum model,
    then timed, and its report written; an unknown backend fails before anything runs."""
    from bench import model_tasnet

    small = ["--device", "cpu", "--batch", "2", "--n", "8", "--h", "16", "--frames", "64"]
    small += ["--blocks", "2", "--budget", "0.01", "--compile-backend", "aot_eager"]
    small += ["--modes", "eager,compile"]
    assert model_tasnet.main([*small, "--backends", "eager", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "cpu-tasnet.md").read_text()
    for row in ("| cumsum | eager |", "| cumsum | torch.compile |", "| eager | torch.compile |"):
        assert row in text
    assert "FAILED" not in text
    # --ab-env: each project backend once per value, alternating; the cumsum model once.
    ab = [*small[:-1], "eager", "--backends", "eager", "--out", str(tmp_path)]
    ab += ["--ab-env", "NORMK_TEST_AB=0,1", "--ab-rounds", "2"]
    assert model_tasnet.main(ab) == 0
    text = (tmp_path / "cpu-tasnet.md").read_text()
    for row in ("| cumsum | eager |", "| eager [NORMK_TEST_AB=0] |", "| eager [NORMK_TEST_AB=1] |"):
        assert row in text
    assert "NORMK_TEST_AB" not in os.environ
    with pytest.raises(common.UnknownBackendError):
        model_tasnet.main([*small, "--backends", "nope"])
