"""pytest options of the pytest-benchmark flavour (``pytest bench/``).

``--backend`` may also be defined by ``tests/conftest.py``; when both files are
loaded (``pytest tests/ bench/``) the second registration raises ValueError and
is skipped, so the two must agree on its meaning: a comma list of backend
names, or ``all``.
"""

from __future__ import annotations

from typing import Any

import pytest


def _add(parser: pytest.Parser, *names: str, **kw: Any) -> None:
    try:
        parser.addoption(*names, **kw)
    except ValueError:  # already registered (by tests/conftest.py)
        pass


def pytest_addoption(parser: pytest.Parser) -> None:
    _add(
        parser,
        "--backend",
        action="store",
        default=None,
        help="backends to test/benchmark: comma list of names or 'all' (default: all available)",
    )
    _add(
        parser,
        "--bench-shapes",
        action="store",
        default=None,
        help="bench/: presets and shapes as for python -m bench --shapes "
        "(default: targets on a GPU, two tiny shapes on a CPU)",
    )
    _add(parser, "--bench-op", action="store", default="cln,rmsnorm", help="bench/: ops")
    _add(parser, "--bench-mode", action="store", default="fwd,bwd,fwd_bwd", help="bench/: modes")
    _add(
        parser,
        "--bench-dtype",
        action="store",
        default="auto",
        help="bench/: dtypes (auto: cln fp32, rmsnorm bf16)",
    )
    _add(
        parser,
        "--bench-peers",
        action="store",
        default="all",
        help="bench/: peers (all, none, or a comma list of eager, compile, F.rms_norm, liger)",
    )
