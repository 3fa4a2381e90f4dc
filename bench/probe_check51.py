"""Session 51 probe (GPU): which error paths of the cuda_ext binding raise and which crash the
process.  Each case runs in its own process; rc -11 is a SIGSEGV.

    source bench/gpu_env.sh; python3 bench/probe_check51.py

Ran at 948d6c9 (the seq_group cases need that commit's knob, reverted later in session 51).
Found: a TORCH_CHECK whose message printed a number (a shape, seq_group) crashed, one of
strings only and the launcher's std::runtime_error raised (bench/results/NOTES.md 52,
``nvidia-h200-s51c-probe-check.txt``).  The binding's messages are now strings only.
"""

import subprocess
import sys
import textwrap

X63 = "torch.randn(3, 8, 63, device='cuda')"
CASES = {
    "torch_check_noncontig": "K.cln_forward(x.transpose(1, 2).contiguous().transpose(1, 2), "
    "None, None, 1e-5, None, *f)",
    "torch_check_shape_y": "K.cln_forward(x, None, None, 1e-5, None, "
    "torch.empty(1, device='cuda'), *f[1:])",
    "launcher_runtime_error": "K.CLN_STREAM_TMA = 1; K.CLN_RESIDENT = -1; "
    f"K.cln_forward({X63}, None, None, 1e-5, None, *H.cln_fwd_outputs({X63}))",
    "seq_group_neg": "K.CLN_FWD_SEQ_GROUP = -1; K.cln_forward(x, None, None, 1e-5, None, *f)",
    "seq_group_neg_tiled": "K.CLN_FWD_SEQ_GROUP = -1; K.CLN_RESIDENT = -1; "
    "K.cln_forward(x, None, None, 1e-5, None, *f)",
}
PRE = textwrap.dedent("""
    import torch, faulthandler; faulthandler.enable()
    from backends.cuda_ext import kernels as K
    from tests import harness as H
    x = torch.randn(3, 8, 64, device='cuda'); f = H.cln_fwd_outputs(x)
    try:
        {stmt}
        print('no error')
    except Exception as e:
        print(type(e).__name__, str(e).splitlines()[0][:200])
""")
for name, stmt in CASES.items():
    r = subprocess.run(
        [sys.executable, "-c", PRE.format(stmt=stmt)], capture_output=True, text=True
    )
    first_err = r.stderr.strip().splitlines()[0] if r.returncode and r.stderr.strip() else ""
    print(f"{name}: rc={r.returncode} {r.stdout.strip()} {first_err}", flush=True)
