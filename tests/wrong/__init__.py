"""Negative controls: deliberately wrong kernels that the harness must reject.

Each module implements :mod:`common.kernel_api` with one specific mistake.
``tests/test_negative_controls.py`` registers them as backends and asserts
that the shared check functions fail on them; ``tests/test_bench.py`` asserts
that the benchmark reports them FAILED and never times them.
"""
