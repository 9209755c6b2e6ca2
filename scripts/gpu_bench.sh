#!/usr/bin/env bash
# The benchmarks and pictures beyond scripts/gpu_check.sh, on a GPU machine, after the cuda
# preset was built (scripts/gpu_check.sh builds it):
#   seed_timeline       CUPTI timelines of the seed experiment (SVG + Chrome trace JSON)
#   bench_ops vs CuPy   every op on 512^3 f32/u16, side by side with cupyx (bench/cupy_compare.py)
#   bench_small_slices  per-slice vs per-slab vs graph vs fused 3D, CUDA_DEVICE_MAX_CONNECTIONS
# Usage: scripts/gpu_bench.sh [OUTDIR]   (default build/gpu-bench). Prints a summary last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
out=${1:-build/gpu-bench}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
b=build/cuda
rc=0
timeout 120 "$b/samples/seed_timeline" "$out" >"$out/timeline.txt" 2>&1 || rc=1
timeout 300 python3 bench/cupy_compare.py "$b/bench/ops/bench_ops" >"$out/ops_vs_cupy.txt" 2>&1 || rc=1
timeout 120 "$b/bench/bench_small_slices" >"$out/small_slices.txt" 2>&1 || rc=1
echo "==== summary (logs in $out)"
grep -h '^RESULT' "$out/timeline.txt" "$out/small_slices.txt" 2>/dev/null
grep -h -E 'ratio|^op|voxstream' "$out/ops_vs_cupy.txt" 2>/dev/null | head -80
exit $rc
