"""Registry, selection order and the generated support matrix."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

import common
from common.capabilities import block
from common.registry import OPS, BackendSpec, select_backend

ROOT = Path(__file__).resolve().parent.parent


def test_names_and_specs_are_frozen():
    names = common.backend_names()
    assert {"eager", "triton", "cuda_ext"} <= set(names)
    spec = common.get_backend("eager")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "x"  # type: ignore[misc]
    for n in names:
        s = common.get_backend(n)
        assert set(s.ops) <= set(OPS) and s.dtypes and s.devices


def test_eager_always_available_and_default_on_cpu(monkeypatch):
    monkeypatch.delenv("NORM_BACKEND", raising=False)
    assert "eager" in common.available_backends("cpu")
    spec = select_backend(None, "cln_fwd", torch.float32, torch.device("cpu"))
    assert spec.name == "eager"


def test_unavailable_backends_say_why():
    for n in common.backend_names():
        s = common.get_backend(n)
        r = s.unavailable_reason()
        assert r is None or (isinstance(r, str) and len(r) > 10)


def test_bad_spec_rejected():
    with pytest.raises(ValueError, match="unknown ops"):
        BackendSpec(
            name="x",
            description="",
            module="m",
            ops=frozenset({"fft"}),
            dtypes=frozenset({torch.float32}),
            devices=frozenset({"cpu"}),
        )


def test_duplicate_registration_rejected():
    with pytest.raises(ValueError, match="already registered"):
        common.registry.register_backend(common.get_backend("eager"))


def test_readme_support_matrix_is_generated():
    readme = (ROOT / "README.md").read_text()
    assert block() in readme, "README support matrix is stale: run make readme"
