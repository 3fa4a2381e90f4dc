"""Shape presets and the parser of ``--shapes``.

A preset maps each op to its shapes.  cLN shapes are ``(B, C, T)`` (Conv-TasNet
/ DPRNN separators); RMSNorm shapes are ``(rows, hidden)`` (LLM hidden states
and per-head q/k norms).  ``--shapes`` takes a comma list of preset names and
explicit shapes such as ``16x512x4000`` or ``32768x4096``; an explicit shape
may carry an op prefix (``cln:16x512x4000``, ``rmsnorm:4x8192x4096``).
Without a prefix a 3-d shape goes to every selected op (RMSNorm normalizes its
last dim), a 2-d (or 1-d, 4-d...) shape to RMSNorm only.
"""

from __future__ import annotations

import re

Shape = tuple[int, ...]

OPS: tuple[str, ...] = ("cln", "rmsnorm")

#: The issues' target shapes (and the seed's (80, 64, 301)), nothing else.
TARGETS: dict[str, list[Shape]] = {
    "cln": [(80, 64, 301), (16, 512, 4000), (4, 256, 16000), (2, 128, 64000)],
    "rmsnorm": [(32768, 4096), (16384, 8192), (2048, 4096)],
}

#: Conv-TasNet / DPRNN separators: B 1..16, C 64..512, T 300..64000, plus the
#: seed case (80, 64, 301) (batch 80 of 301-frame chunks).
CLN: list[Shape] = [
    (80, 64, 301),
    (1, 64, 300),
    (1, 128, 4000),
    (4, 128, 4000),
    (8, 256, 2000),
    (16, 64, 16000),
    (1, 512, 64000),
    (16, 512, 4000),
    (4, 256, 16000),
    (2, 128, 64000),
]

#: LLM hidden states (hidden 2048..16384, 1..65536 rows) and head-dim norms
#: (N = 128, hundreds of thousands of rows: tokens x heads of q/k norm).
LLM: list[Shape] = [
    (1, 4096),
    (64, 4096),
    (2048, 4096),
    (4096, 8192),
    (65536, 2048),
    (32768, 4096),
    (16384, 8192),
    (8192, 16384),
    (131072, 128),
    (524288, 128),
]

#: Tiny shapes for a CPU run (seconds, not minutes).
SMALL: dict[str, list[Shape]] = {
    "cln": [(80, 64, 301), (2, 64, 1000)],
    "rmsnorm": [(64, 2048), (256, 4096), (4096, 128)],
}


def _union(*presets: dict[str, list[Shape]]) -> dict[str, list[Shape]]:
    out: dict[str, list[Shape]] = {op: [] for op in OPS}
    for p in presets:
        for op, shapes in p.items():
            for s in shapes:
                if s not in out[op]:
                    out[op].append(s)
    return out


PRESETS: dict[str, dict[str, list[Shape]]] = {
    "targets": TARGETS,
    "cln": {"cln": CLN},
    "llm": {"rmsnorm": LLM},
    "small": SMALL,
    "all": _union(TARGETS, {"cln": CLN}, {"rmsnorm": LLM}),
}

_SHAPE_RE = re.compile(r"^\d+(x\d+)*$")


def parse_shape(text: str) -> Shape:
    """``"16x512x4000"`` -> ``(16, 512, 4000)``; every dim must be >= 1."""
    t = text.strip().lower()
    if not _SHAPE_RE.match(t):
        raise ValueError(f"bad shape {text!r}: write it like 16x512x4000 or 32768x4096")
    shape = tuple(int(d) for d in t.split("x"))
    if any(d < 1 for d in shape):
        raise ValueError(f"bad shape {text!r}: every dim must be >= 1")
    return shape


def parse_shapes(spec: str, rank: int | None = None) -> list[Shape]:
    """``"4x256x16000,2x128x64000"`` -> a list of :func:`parse_shape`; ``rank``: each must
    have that many dims (ValueError otherwise)."""
    shapes = [parse_shape(t) for t in spec.split(",")]
    bad = [fmt_shape(s) for s in shapes if rank is not None and len(s) != rank]
    if bad:
        raise ValueError(f"bad shape {', '.join(bad)}: {rank} dims wanted")
    return shapes


def shape_fits(op: str, shape: Shape) -> bool:
    """Whether ``shape`` is a valid input shape of ``op``."""
    if op == "cln":
        return len(shape) == 3
    return len(shape) >= 1


def resolve_shapes(spec: str, ops: list[str]) -> dict[str, list[Shape]]:
    """Turn a ``--shapes`` value into the shapes to run for each op in ``ops``."""
    out: dict[str, list[Shape]] = {op: [] for op in ops}

    def add(op: str, shape: Shape) -> None:
        if op in out and shape not in out[op]:
            out[op].append(shape)

    for raw in spec.split(","):
        tok = raw.strip()
        if not tok:
            continue
        if tok.lower() in PRESETS:
            for op, shapes in PRESETS[tok.lower()].items():
                for s in shapes:
                    add(op, s)
            continue
        op_prefix = None
        if ":" in tok:
            op_prefix, tok = (p.strip() for p in tok.split(":", 1))
            if op_prefix not in OPS:
                raise ValueError(f"unknown op {op_prefix!r} in --shapes; ops: {', '.join(OPS)}")
        if not _SHAPE_RE.match(tok.lower()):
            raise ValueError(
                f"--shapes: {raw.strip()!r} is neither a preset ({', '.join(PRESETS)}) "
                "nor a shape like 16x512x4000"
            )
        shape = parse_shape(tok)
        targets = [op_prefix] if op_prefix else [op for op in ops if op != "cln" or len(shape) == 3]
        for op in targets:
            if not shape_fits(op, shape):
                raise ValueError(f"shape {tok} does not fit op {op} (cln needs B x C x T)")
            add(op, shape)
    return out


def fmt_shape(shape: Shape) -> str:
    return "x".join(str(d) for d in shape)
