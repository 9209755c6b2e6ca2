#!/usr/bin/env bash
# voxstream kernel profiling on a GPU machine (a developer's tool; scripts/gpu_check.sh is the
# full check). Builds only the benchmarks in build/prof (no tests, samples or tool), runs
# bench_ops on 1 and on 32 streams and bench_small_slices, then Nsight Compute (ncu) over the
# first kernels of each named bench_ops case, on one stream.
#
#   scripts/gpu_profile.sh ["bench_ops case substring[::kernel name regex]" ...]
#
# Default cases: the issue-3 targets (uniform size=3, gaussian sigma=2, median size=3, sum),
# each with the regex of its kernels (the setup's own fills and uploads are not profiled). Output: ${OUT:-build/prof-logs}/{bench_ops_1,bench_ops_32,small_slices,ncu_<case>}.txt,
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
  set -- "uniform size=3::stencil3" "gaussian sigma=2::gauss_" "median size=3::median3" \
    "sum::reduce_partial"
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
  k=${arg#*::}
  [ "$k" = "$arg" ] && k=.
  f="$out/ncu_${c//[^A-Za-z0-9]/_}.txt"
  timeout 120 ncu --clock-control none -k "regex:$k" -c "$count" --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats \
    "$ops" --streams 1 --reps 20 --filter "$c" >"$f" 2>&1
done

echo "== summary"
for f in "$out"/bench_ops_1.txt "$out"/bench_ops_32.txt "$out"/small_slices.txt; do
  [ -f "$f" ] && { echo "-- $f"; grep -E '^(RESULT|  per-slab|  graph)' "$f"; }
done
for f in "$out"/ncu_*.txt; do
  echo "-- $f"
  grep -E '^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per Thread|Theoretical Occupancy|No Eligible|Issued Warp' "$f" | head -60
done
