#!/usr/bin/env bash
# voxstream kernel profiling on a GPU machine (a developer's tool; scripts/gpu_check.sh is the
# full check). Builds only the benchmarks in build/prof (no tests, samples or tool), runs
# bench_ops on 1 and on 32 streams and bench_small_slices, then Nsight Compute (ncu) over the
# first kernels of each named bench_ops case, on one stream.
#
#   scripts/gpu_profile.sh ["bench_ops case substring[::kernel name regex[::bench_ops arguments]]" ...]
#
# Default cases: the worst measured cases of the open issues, each with the regex of its kernels
# (the setup's own fills and uploads are not profiled) and, where the case is not one of bench_ops'
# default cases, the bench_ops arguments that run it (then the substring only names the output):
# the Gaussian sigma 2 on its two-kernel path and its fused one-kernel path (issues 16, 17), the
# tiled 1D passes of the Gaussian sigma 8 (z, y and x: 1.3 ms a pass of 512^3 float32 on an H100,
# 3.6x a copy; why is open), the
# 3D box mean of size 9, the median 5, the erosion of size 9, the Gaussian sigma 4 and the median
# 3 of the sweep (uint8, uint16: the families' worst cases against a copy; issue 16), and the EDT and
# the 26-connected label of the segmentation bench (issue 20). Output:
# ${OUT:-build/prof-logs}/{bench_ops_1,bench_ops_32,small_slices,ncu_<case>}.txt,
# and a summary (the RESULT lines and each kernel's duration, DRAM throughput and occupancy).
# ncu runs with --clock-control none (the device tool's METHOD.md: leave the clocks alone).
# Environment: PROF_BUILD (an existing cuda build folder to use instead of build/prof),
# PROF_JOBS (build parallelism, default 16), PROF_SKIP_BENCH=1 (ncu only),
# PROF_NCU_COUNT (kernels profiled per case, default 3).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/prof-logs}
mkdir -p "$out"
jobs=${PROF_JOBS:-16}
count=${PROF_NCU_COUNT:-3}
if [ $# -eq 0 ]; then
  sweep="--sweep --streams 1 --sweep-shapes 512x512x300 --reps 20"
  set -- "gaussian sigma=2::gauss_" \
    "gaussian_fused::gauss_fused::--streams 1 --reps 20 --filter gaussian --gauss-fused" \
    "gaussian sigma=8::line_kernel" \
    "uniform_size=9_u8::box_::$sweep --sweep-types u8 --sweep-ops uniform_size=9" \
    "median_size=5_u16::rank::$sweep --sweep-types u16 --sweep-ops median_size=5" \
    "erosion_size=9_u8::box_::$sweep --sweep-types u8 --sweep-ops erosion_size=9" \
    "gaussian_sigma=4_u8::gauss_::$sweep --sweep-types u8 --sweep-ops gaussian_sigma=4" \
    "median_size=3_u8::median3|stencil3::$sweep --sweep-types u8 --sweep-ops median_size=3" \
    "segment_edt::edt_z|edt_y_kernel::--segment --streams 1 --reps 20" \
    "segment_label::local_kernel|border_kernel|finalize_kernel::--segment --streams 1 --reps 20"
fi

build=${PROF_BUILD:-build/prof}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake --preset cuda -B "$build" -DVOXSTREAM_BUILD_TESTS=OFF -DVOXSTREAM_BUILD_SAMPLES=OFF \
    -DVOXSTREAM_BUILD_TOOLS=OFF >"$out/build.txt" 2>&1 || {
    tail -30 "$out/build.txt"
    exit 1
  }
fi
cmake --build "$build" -j"$jobs" --target bench_ops bench_small_slices >>"$out/build.txt" 2>&1 || {
  tail -30 "$out/build.txt"
  exit 1
}
ops=$build/bench/ops/bench_ops
small=$build/bench/bench_small_slices
if [ "${PROF_SKIP_BENCH:-0}" != 1 ]; then
  "$ops" --streams 1 >"$out/bench_ops_1.txt" 2>&1
  "$ops" --streams 32 >"$out/bench_ops_32.txt" 2>&1
  "$small" >"$out/small_slices.txt" 2>&1
fi
for arg in "$@"; do
  c=${arg%%::*}
  rest=${arg#*::}
  [ "$rest" = "$arg" ] && rest=.
  k=${rest%%::*}
  bench_args=${rest#*::}
  f="$out/ncu_${c//[^A-Za-z0-9]/_}.txt"
  if [ "$bench_args" = "$rest" ]; then
    set_args=(--streams 1 --reps 20 --filter "$c")
  else
    read -r -a set_args <<<"$bench_args"
  fi
  timeout 180 ncu --clock-control none -k "regex:$k" -c "$count" --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats \
    "$ops" "${set_args[@]}" >"$f" 2>&1
done

echo "== summary"
for f in "$out"/bench_ops_1.txt "$out"/bench_ops_32.txt "$out"/small_slices.txt; do
  [ -f "$f" ] && { echo "-- $f"; grep -E '^(RESULT|  per-slab|  graph)' "$f"; }
done
for f in "$out"/ncu_*.txt; do
  echo "-- $f"
  grep -E '^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per Thread|Theoretical Occupancy|No Eligible|Issued Warp|Active Threads Per Warp' "$f" | head -70
done
