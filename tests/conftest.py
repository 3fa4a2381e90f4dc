"""Shared test configuration.

The emulators must be switched on before triton/numba are first imported
(as Triton's own ``test-interpret`` target does): on a machine without a
CUDA GPU this file turns them on, so the Triton kernels run under the
interpreter on CPU tensors.  ``make test-all`` on a GPU machine leaves them
off and every backend runs on the GPU.
"""

from __future__ import annotations

import os
import shutil


def _has_cuda_driver() -> bool:
    return os.path.exists("/dev/nvidiactl") or shutil.which("nvidia-smi") is not None


if not _has_cuda_driver():
    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

# Under pytest-xdist each of N workers would run torch's CPU thread pool over every core (the
# float64 oracles on the CPU, the CLI test's subprocess): N times oversubscribed.  On the GPU
# machine (16 cores) a 6-worker make test-all had not finished after 500 s and its CLI test went
# past 120 s; with each worker given its share, 4 workers ran all 1,007 in 172 s (NOTES 36.1).
_XDIST_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
_THREADS = max(1, (os.cpu_count() or 1) // max(1, _XDIST_WORKERS))
if _XDIST_WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(_THREADS))  # a user's own setting stays

import pytest  # noqa: E402
import torch  # noqa: E402

if _XDIST_WORKERS > 1:
    _omp = os.environ["OMP_NUM_THREADS"]
    torch.set_num_threads(int(_omp) if _omp.isdigit() and int(_omp) > 0 else _THREADS)

import common  # noqa: E402
from common.registry import backend_names, get_backend  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        action="store",
        default="all",
        help="comma-separated backends to test (default: all registered; "
        "those that cannot run here are skipped with the reason)",
    )


def selected_backends(config: pytest.Config) -> list[str]:
    opt = config.getoption("--backend")
    names = backend_names() if opt in ("all", "", None) else [s.strip() for s in opt.split(",")]
    for n in names:
        get_backend(n)  # raises listing the known names on a typo
    return names


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", selected_backends(metafunc.config), scope="session")


@pytest.fixture(scope="session")
def device(backend: str) -> torch.device:
    """Where ``backend`` runs here: the GPU if it can, else its CPU emulator."""
    from tests.harness import backend_device

    return backend_device(backend)


@pytest.fixture(autouse=True)
def _poison_outputs() -> None:
    """Every output buffer starts as NaN, so an unwritten element fails."""
    common.set_poison(True)
    yield
    common.set_poison(False)


@pytest.fixture
def emulated(backend: str) -> bool:
    return get_backend(backend).emulated() and not torch.cuda.is_available()
