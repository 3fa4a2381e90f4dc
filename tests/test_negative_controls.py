"""The harness must reject deliberately wrong kernels (gpu-mode's solutions/wrong/)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from tests import harness

CPU = torch.device("cpu")


@pytest.fixture
def wrong_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    module = request.param
    with harness.registered_backend(
        f"wrong_{module}",
        f"tests.wrong.{module}",
        description=f"negative control: tests/wrong/{module}.py",
        dtypes=frozenset({torch.float32, torch.float64}),
    ) as name:
        yield name


@pytest.mark.parametrize("wrong_backend", ["skip_normalization"], indirect=True)
def test_skipped_normalization_is_rejected(wrong_backend):
    with pytest.raises(AssertionError, match="relative error"):
        harness.check_cln_forward(wrong_backend, CPU, (2, 8, 30), torch.float32)
    with pytest.raises(AssertionError, match="relative error"):
        harness.check_rmsnorm_forward(wrong_backend, CPU, (4, 32), torch.float32)


@pytest.mark.parametrize("wrong_backend", ["naive_variance"], indirect=True)
def test_naive_variance_passes_zero_mean_but_fails_dc_offset(wrong_backend):
    # On zero-mean data the textbook formula is fine, so only the DC-offset
    # case of the harness can catch it: that is why the harness has one.
    harness.check_cln_forward(wrong_backend, CPU, (2, 8, 30), torch.float32)
    with pytest.raises(AssertionError, match="relative error"):
        harness.check_cln_forward(wrong_backend, CPU, (2, 32, 200), torch.float32, dc=1000.0)


@pytest.mark.parametrize("wrong_backend", ["unwritten_tail"], indirect=True)
def test_unwritten_outputs_are_caught_by_poisoning(wrong_backend):
    with pytest.raises(AssertionError, match="inf"):
        harness.check_cln_forward(wrong_backend, CPU, (2, 4, 9), torch.float32)
    with pytest.raises(AssertionError, match="inf"):
        harness.check_rmsnorm_forward(wrong_backend, CPU, (5, 16), torch.float32)


@pytest.mark.parametrize("wrong_backend", ["wrong_backward"], indirect=True)
def test_wrong_gradients_are_rejected(wrong_backend):
    harness.check_cln_forward(wrong_backend, CPU, (2, 4, 9), torch.float32)
    with pytest.raises(AssertionError, match="dx"):
        harness.check_cln_backward(wrong_backend, CPU, (2, 4, 9), torch.float32)
    with pytest.raises(AssertionError, match="dx"):
        harness.check_rmsnorm_backward(wrong_backend, CPU, (4, 32), torch.float32)


@pytest.mark.parametrize("wrong_backend", ["unordered_sums"], indirect=True)
def test_unordered_sums_are_caught_by_the_reproducibility_check(wrong_backend):
    # Right to rounding, so the gradient check passes; two calls differ in their last bits.
    harness.check_cln_backward(wrong_backend, CPU, (2, 8, 130), torch.float32)
    with pytest.raises(AssertionError, match="dgamma differs between two calls"):
        harness.check_cln_reproducible(wrong_backend, CPU, (2, 8, 130), torch.float32)
