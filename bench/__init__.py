"""The shared benchmark harness for cLN and RMSNorm (see bench/README.md).

``python -m bench`` runs it from the command line; :func:`bench.runner.run`
with a :class:`bench.runner.Config` from Python; ``pytest bench/`` runs the
pytest-benchmark flavour.
"""
