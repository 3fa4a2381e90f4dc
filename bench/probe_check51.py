"""Which error paths of the cuda_ext binding raise and which crash (session 51 probe)."""
import subprocess, sys, textwrap
CASES = {
    "torch_check_noncontig": "K.cln_forward(x.transpose(1, 2).contiguous().transpose(1, 2), None, None, 1e-5, None, *f)",
    "torch_check_shape_y": "K.cln_forward(x, None, None, 1e-5, None, torch.empty(1, device='cuda'), *f[1:])",
    "launcher_runtime_error": "K.CLN_STREAM_TMA = 1; K.CLN_RESIDENT = -1; K.cln_forward(torch.randn(3, 8, 63, device='cuda'), None, None, 1e-5, None, *H.cln_fwd_outputs(torch.randn(3, 8, 63, device='cuda')))",
    "seq_group_neg": "K.CLN_FWD_SEQ_GROUP = -1; K.cln_forward(x, None, None, 1e-5, None, *f)",
    "seq_group_neg_tiled": "K.CLN_FWD_SEQ_GROUP = -1; K.CLN_RESIDENT = -1; K.cln_forward(x, None, None, 1e-5, None, *f)",
}
pre = textwrap.dedent("""
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
    r = subprocess.run([sys.executable, "-c", pre.format(stmt=stmt)], capture_output=True, text=True)
    print(f"{name}: rc={r.returncode} {r.stdout.strip()} {r.stderr.strip().splitlines()[0] if r.returncode else ''}", flush=True)
