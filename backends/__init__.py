"""Backend packages.  Each exposes ``SPEC`` (see :mod:`common.registry`)."""
