#!/usr/bin/env bash
# Session 49: how far the fp32 cLN forward (no backward behind it) sits from the 0.80 line,
# over repeated runs of the main job's own method.  N (default 10) separate processes of
# `python3 -m bench` (CUDA-graph replay, the copy bandwidth measured in each process), the
# Triton and cuda_ext forwards at the three target shapes; then per case the median, min and
# max of the fraction of copy bandwidth.  Archived into $OUT/s49b.tgz.
#   OUT=out bash bench/gpu_s49b.sh
set -uo pipefail
source bench/gpu_env.sh
for i in $(seq 1 "${N:-10}"); do
  timeout -s KILL 90 python3 -m bench --op cln --backend triton,cuda_ext --peers none \
    --mode fwd --dtype fp32 --shapes 16x512x4000,4x256x16000,2x128x64000 --cuda-graph all \
    --out "$OUT" --tag "rep$i" --quiet > "$OUT/rep$i.log" 2>&1
  echo "round $i rc=$? $(date +%T)"
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import glob, json, statistics, sys
runs = [json.load(open(p)) for p in sorted(glob.glob(f"{sys.argv[1]}/*rep*.json"))]
bw = [r["copy_bandwidth_gbps"] for r in runs]
print(f"{len(runs)} runs; copy bandwidth {min(bw):.0f}-{max(bw):.0f} GB/s")
cases = {}
for r in runs:
    for c in r["cases"]:
        if c.get("frac_copy_bw"):
            cases.setdefault((c["impl"], c["shape"]), []).append((c["frac_copy_bw"], c["median_us"]))
for (impl, shape), v in sorted(cases.items()):
    f = [a for a, _ in v]
    us = [b for _, b in v]
    print(f"{impl:9s} {shape:13s} fwd fp32: fraction median {statistics.median(f):.3f} "
          f"min {min(f):.3f} max {max(f):.3f}, >= 0.80 in {sum(a >= 0.80 for a in f)} of {len(f)}; "
          f"us median {statistics.median(us):.1f} ({min(us):.1f}-{max(us):.1f})")
PY
gpu_archive s49b
ls -la "$OUT"
