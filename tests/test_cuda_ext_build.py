"""Build checks of the cuda_ext backend that need no GPU (DESIGN.md section 5).

* Every ``.cu`` file under ``backends/cuda_ext`` compiles with nvcc for sm_90
  (the H200) with ``-Xptxas -v``; a compile error, a compiler warning in our
  sources, or any kernel with non-zero "spill stores" / "spill loads" fails.
  The ``.cu`` files include the framework-free kernel headers and no torch,
  so they need only the CUDA toolkit.
* The standalone CUDA programs under ``bench/`` (measurement prototypes that
  include the same kernel headers, e.g. ``bench/lookback/``) compile the same
  way, so a change to the shared headers cannot leave them unbuildable.
* ``csrc/binding.cpp`` is syntax-checked with g++ against the installed
  torch headers (``torch.utils.cpp_extension.include_paths()``) plus the
  CUDA runtime headers.
* The kernels and launchers run: every ``.cu`` file is compiled as C++ with
  g++ against the CPU emulator ``emu/cuda_emu.h`` (one fiber per CUDA thread,
  real barriers and shuffles) and linked with ``emu/emu_selftest.cpp``, which
  compares cLN (incl. streaming state and the backward) and RMSNorm (incl.
  strided, unaligned rows) in all four dtypes with a float64 reference.

All compiles run at once in a thread pool (about a minute on 2 cores).
Each check is skipped, saying why, where nvcc, g++, the CUDA headers or
torch are missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "backends" / "cuda_ext"
CU_FILES = sorted(EXT.rglob("*.cu"))
BENCH_CU_FILES = sorted((ROOT / "bench").rglob("*.cu"))
BINDING = EXT / "csrc" / "binding.cpp"
EMU_MAIN = EXT / "emu" / "emu_selftest.cpp"
ARCH = "-gencode=arch=compute_90,code=sm_90"
# The defines torch.utils.cpp_extension adds to every nvcc command line.
TORCH_NVCC_DEFINES = [
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr",
]
SPILL_RE = re.compile(
    r"Function properties for (\S+)\n\s*\d+ bytes stack frame, (\d+) bytes spill stores, "
    r"(\d+) bytes spill loads"
)


def _cuda_home() -> Path | None:
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            return Path(os.environ[env])
    nvcc = shutil.which("nvcc")
    if nvcc:
        return Path(nvcc).resolve().parent.parent
    default = Path("/usr/local/cuda")
    return default if (default / "bin" / "nvcc").exists() else None


def _nvcc() -> str | None:
    home = _cuda_home()
    if shutil.which("nvcc"):
        return shutil.which("nvcc")
    if home and (home / "bin" / "nvcc").exists():
        return str(home / "bin" / "nvcc")
    return None


def _cuda_include() -> Path | None:
    """The directory holding cuda_runtime_api.h (next to nvcc, or the usual)."""
    candidates = []
    home = _cuda_home()
    if home:
        candidates += [home / "include", home / "targets" / "x86_64-linux" / "include"]
    candidates.append(Path("/usr/local/cuda/include"))
    for c in candidates:
        if (c / "cuda_runtime_api.h").exists():
            return c
    return None


def _run(cmd: list[str]) -> tuple[int, str]:
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=EXT, timeout=600)
    return p.returncode, p.stdout + p.stderr


def _nvcc_cmd(nvcc: str, cu: Path, out: Path) -> list[str]:
    # The source's own folder too: a bench program includes the header beside it.
    return [
        nvcc,
        "-std=c++17",
        "-O3",
        ARCH,
        "-Xptxas",
        "-v",
        *TORCH_NVCC_DEFINES,
        f"-I{EXT / 'include'}",
        f"-I{EXT / 'csrc'}",
        f"-I{cu.parent}",
        "-c",
        str(cu),
        "-o",
        str(out),
    ]


def _binding_cmd(gxx: str) -> list[str] | None:
    try:
        from torch.utils.cpp_extension import include_paths
    except ImportError:
        return None
    cuda_inc = _cuda_include()
    if cuda_inc is None:
        return None
    cmd = [gxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror"]
    # Torch's generated c10/cuda/impl/cuda_cmake_macros.h exists only in CUDA
    # builds of torch; it only sets export macros, which a syntax check
    # does not need.
    cmd += ["-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE", "-DTORCH_EXTENSION_NAME=cuda_ext_check"]
    cmd += ["-DTORCH_API_INCLUDE_EXTENSION_H"]
    # -isystem: warnings inside torch's headers are not ours to fix.
    for p in [*include_paths(), sysconfig.get_paths()["include"], str(cuda_inc)]:
        cmd += ["-isystem", p]
    cmd += [f"-I{EXT / 'csrc'}", str(BINDING)]
    return cmd


def _emu_compile_cmd(gxx: str, src: Path, out: Path, cuda_inc: Path) -> list[str]:
    return [
        gxx,
        "-std=c++17",
        "-O0",  # 2.5x faster to build; the run is dominated by fiber switches anyway
        "-w",  # CUDA's host headers are noisy under g++; correctness is checked by running
        "-DNORMK_HOST_EMULATION",
        "-include",
        str(EXT / "emu" / "cuda_emu.h"),
        "-isystem",
        str(cuda_inc),
        f"-I{EXT / 'include'}",
        f"-I{EXT / 'csrc'}",
        "-x",
        "c++",
        "-c",
        str(src),
        "-o",
        str(out),
    ]


def _emu_build_and_run(
    gxx: str, compiles: list[Future[tuple[int, str]]], objs: list[Path], exe: Path
) -> tuple[int, str]:
    for f in compiles:
        rc, log = f.result()
        if rc != 0:
            return rc, "emulator build failed:\n" + log
    rc, log = _run([gxx, *map(str, objs), "-o", str(exe)])
    if rc != 0:
        return rc, "emulator link failed:\n" + log
    return _run([str(exe)])


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Future[tuple[int, str]]]:
    """Start every compile at once; tests wait on their own result."""
    out = tmp_path_factory.mktemp("cuda_ext_build")
    jobs: dict[str, Future[tuple[int, str]]] = {}
    pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
    nvcc = _nvcc()
    if nvcc:
        for i, cu in enumerate([*CU_FILES, *BENCH_CU_FILES]):
            jobs[str(cu)] = pool.submit(_run, _nvcc_cmd(nvcc, cu, out / f"{i}_{cu.stem}.o"))
    gxx = shutil.which("g++")
    cmd = _binding_cmd(gxx) if gxx else None
    if cmd:
        jobs[str(BINDING)] = pool.submit(_run, cmd)
    cuda_inc = _cuda_include()
    if gxx and cuda_inc:
        srcs = [*CU_FILES, EMU_MAIN]
        objs = [out / f"emu_{p.stem}.o" for p in srcs]
        compiles = [
            pool.submit(_run, _emu_compile_cmd(gxx, p, o, cuda_inc))
            for p, o in zip(srcs, objs, strict=True)
        ]
        # Waits on the compiles from its own thread, so it needs no pool slot.
        runner = ThreadPoolExecutor(max_workers=1)
        jobs["emu"] = runner.submit(_emu_build_and_run, gxx, compiles, objs, out / "emu_selftest")
        runner.shutdown(wait=False)
    pool.shutdown(wait=False)
    return jobs


def test_sources_exist() -> None:
    assert CU_FILES, f"no .cu files under {EXT}"
    assert BINDING.exists()


def _check_nvcc(cu: Path, builds: dict[str, Future[tuple[int, str]]]) -> None:
    """nvcc compiled ``cu`` with no warning in our sources and no register spill."""
    if str(cu) not in builds:
        pytest.skip("nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
    rc, log = builds[str(cu)].result()
    assert rc == 0, f"nvcc failed on {cu.name}:\n{log}"
    ours = [ln for ln in log.splitlines() if "warning" in ln and str(ROOT) in ln]
    assert not ours, f"nvcc warnings in {cu.name}:\n" + "\n".join(ours)
    reports = SPILL_RE.findall(log)
    assert reports, f"no ptxas -v report for {cu.name}:\n{log}"
    spills = [
        f"{fn}: {st} B spill stores, {ld} B spill loads"
        for fn, st, ld in reports
        if st != "0" or ld != "0"
    ]
    assert not spills, f"register spills in {cu.name}:\n" + "\n".join(spills)


@pytest.mark.parametrize("cu", CU_FILES, ids=lambda p: str(p.relative_to(EXT)))
def test_cu_compiles_for_sm90_without_spills(
    cu: Path, builds: dict[str, Future[tuple[int, str]]]
) -> None:
    _check_nvcc(cu, builds)


@pytest.mark.parametrize("cu", BENCH_CU_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_bench_cuda_programs_compile_for_sm90_without_spills(
    cu: Path, builds: dict[str, Future[tuple[int, str]]]
) -> None:
    _check_nvcc(cu, builds)


def test_binding_syntax(builds: dict[str, Future[tuple[int, str]]]) -> None:
    if str(BINDING) not in builds:
        if not shutil.which("g++"):
            pytest.skip("g++ not found")
        pytest.importorskip("torch", reason="torch (with its C++ headers) is not installed")
        pytest.skip("CUDA runtime headers (cuda_runtime_api.h) not found")
    rc, log = builds[str(BINDING)].result()
    assert rc == 0, f"g++ -fsyntax-only failed on binding.cpp:\n{log}"


def test_kernels_on_cpu_emulator(builds: dict[str, Future[tuple[int, str]]]) -> None:
    if "emu" not in builds:
        if not shutil.which("g++"):
            pytest.skip("g++ not found")
        pytest.skip("CUDA headers (cuda_runtime.h, cuda_fp16.h, cuda_bf16.h) not found")
    rc, log = builds["emu"].result()
    assert rc == 0, log
    assert re.search(r"^\d+ passed, 0 failed$", log, re.MULTILINE), log
