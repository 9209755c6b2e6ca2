#!/usr/bin/env bash
# voxstream GPU check: run from anywhere in the repository on a machine with an NVIDIA GPU.
#
#   scripts/gpu_check.sh              build the cuda preset, run ctest, the samples, the Python
#                                     package's tests (python/gpu_test.sh), every
#                                     benchmark (bench_core, bench_ops and its filter sweep
#                                     side by side with CuPy, bench_ops --sets 1,32,
#                                     bench_small_slices, bench_pdl, bench_stream), the CLI demo, and
#                                     compute-sanitizer memcheck + synccheck over the unit tests
#                                     (racecheck over the fused Gaussian's tests)
#   scripts/gpu_check.sh --quick      the same without the sanitizers
#   scripts/gpu_check.sh --sanitizers the build and the sanitizers only
#   scripts/gpu_check.sh --no-bench   no benchmarks beyond bench_core, no demo
#
# Every step's full output goes to a log under ${OUT:-build/gpu-logs}, at most 8 files: 6 logs,
# the artifacts and summary.txt; pictures and traces (seed timelines, the streaming timeline, the demo PNG) are
# packed into 07-artifacts.tar. A failing step does not stop the later ones. A short summary is
# printed last: one line per step (PASS/FAIL/TIMEOUT/SKIP and seconds), every '^RESULT ' line of
# the samples and benchmarks, the compute-sanitizer error summaries and the ctest summary lines.
# Exit status: 0 only if every step that ran passed and none was cut short.
#
# The whole run stays inside GPU_CHECK_BUDGET_S seconds (default 570, for 10-minute job limits):
# each step's own time limit is cut to what is left, and steps that no longer fit are skipped
# (and count as failures). The build is incremental, so a second call on the same machine spends
# its time on the checks.
#
# Environment:
#   OUT                     log folder (default build/gpu-logs)
#   GPU_CHECK_BUDGET_S      total seconds for all steps (default 570)
#   GPU_CHECK_JOBS          build parallelism (default 16)
#   GPU_CHECK_CTEST_JOBS    parallelism of the untimed tests (default 8)
#   GPU_CHECK_TESTS         batched (default): the untimed GoogleTest cases many to a process
#                           (scripts/ctest_shards.py; a case that fails there is run again alone
#                           by ctest, whose verdict counts; its batches have not yet run on a GPU:
#                           the first try, with CMake 4.4.3's discovered cases, batched none, since
#                           fixed; each test binary run by hand as one process took 0.5-47 s
#                           there, 2026-12-05); ctest: one
#                           process per case with its own CUDA context, as `ctest --preset cuda`
#                           runs them (on an H100, 2026-12-05: 270 s at -j 8, the median case
#                           1.38 s; 257 s at -j 14)
#   GPU_CHECK_TIMED         regex of the tests that run one at a time (timing ratios)
#   GPU_CHECK_ONLY          extended regex of the step names to run (the rest are skipped, not
#                           failed; configure and build always run), e.g. to measure the paths
#                           that are off by default in one call:
#                           GPU_CHECK_ONLY='^(ctest|bench_sweep|bench_ops_sets|bench_segment|bench_ledger|racecheck)'
#   VOX_SANITIZER_FILTER    gtest filter for the sanitizer runs (default below)
#   VOX_SANITIZER_TESTS     test binaries for the sanitizers, relative to build/cuda
#                           (default: the unit, ops and streaming test binaries)
#   VOX_SANITIZER_API_ERRORS  compute-sanitizer --report-api-errors (default no, see below)
#
# The sanitizer runs exclude the 512^3 tests (*Large*: minutes under memcheck), the CUPTI
# sync audits (*audit*: CUPTI and the sanitizer both hook the runtime) and the tests
# whose assertions are timing ratios (concurrency, timing and
# performance tests): under compute-sanitizer every kernel is serialised and slowed by orders of
# magnitude, so those ratios are meaningless there (and slow). The rest of the suite exercises the
# same launch, transfer and ledger code under both tools.
# They also pass --report-api-errors no: the suite provokes CUDA API errors on purpose (an
# allocation too large for the device, a launch that cannot run) to test vox::out_of_memory and
# vox::cuda_error, and memcheck counts each failed call as an error and exits 1 (checked on the
# H200 with compute-sanitizer 2025.3). voxstream checks the result of every CUDA call itself; the
# sanitizers are here for memory accesses and synchronisation.
set -uo pipefail

QUICK=0
SAN_ONLY=0
BENCH=1
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    --sanitizers) SAN_ONLY=1 ;;
    --no-bench) BENCH=0 ;;
    -h | --help)
      sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "gpu_check.sh: unknown argument '$arg' (use --quick, --sanitizers, --no-bench or --help)" >&2
      exit 2
      ;;
  esac
done

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ROOT=$(pwd)
OUT_DIR="${OUT:-build/gpu-logs}"
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
BUDGET=${GPU_CHECK_BUDGET_S:-570}
ONLY=${GPU_CHECK_ONLY:-}
JOBS=${GPU_CHECK_JOBS:-16}
CTEST_JOBS=${GPU_CHECK_CTEST_JOBS:-8}
TESTS_MODE=${GPU_CHECK_TESTS:-batched}
TIMED=${GPU_CHECK_TIMED:-Concurrency|Timing|Perf|timeline_cuda|seed|Overlap}
SAN_FILTER=${VOX_SANITIZER_FILTER:--*Concurrency*:*Timing*:*Perf*:*Large*:*audit*}
SAN_API_ERRORS=${VOX_SANITIZER_API_ERRORS:-no}
BUILD="$ROOT/build/cuda"
# GoogleTest binaries the sanitizers run, relative to build/cuda (space-separated).
SAN_TESTS=${VOX_SANITIZER_TESTS:-tests/unit/voxstream_tests tests/ops/voxstream_ops_tests tests/stream/voxstream_stream_tests}
RESERVE=5  # seconds kept for the summary

LOG_ENV="$OUT_DIR/01-build.log"  # the environment heads the build log
LOG_BUILD="$OUT_DIR/01-build.log"
LOG_CTEST="$OUT_DIR/02-ctest.log"
LOG_SAMPLES="$OUT_DIR/03-samples.log"
LOG_BENCH="$OUT_DIR/04-bench.log"
LOG_MEMCHECK="$OUT_DIR/05-memcheck.log"
LOG_SYNCCHECK="$OUT_DIR/06-synccheck.log"
ARTIFACTS="$OUT_DIR/07-artifacts.tar"  # with 01-06 and summary.txt: 8 files at most
SUMMARY_FILE="$OUT_DIR/summary.txt"
for f in "$LOG_ENV" "$LOG_BUILD" "$LOG_CTEST" "$LOG_SAMPLES" "$LOG_BENCH" "$LOG_MEMCHECK" \
         "$LOG_SYNCCHECK" "$SUMMARY_FILE"; do
  : >"$f"
done
rm -f "$ARTIFACTS"
PICS="$ROOT/build/gpu-pictures"  # packed into $ARTIFACTS at the end
rm -rf "$PICS"
mkdir -p "$PICS"

START=$SECONDS
DEADLINE=$((START + BUDGET))
STEPS=()
FAILED=0

# The toolchain: nvcc and compute-sanitizer live under the CUDA toolkit, which may not be on PATH.
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  if [[ -n "$d" && -d "$d/bin" ]] && ! command -v nvcc >/dev/null 2>&1; then
    export PATH="$d/bin:$PATH"
  fi
done
SANITIZER=$(command -v compute-sanitizer 2>/dev/null || true)
if [[ -z "$SANITIZER" ]]; then
  for c in "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
           "${CUDA_HOME:-/usr/local/cuda}/compute-sanitizer/compute-sanitizer"; do
    [[ -x "$c" ]] && SANITIZER=$c && break
  done
fi

note() { printf '[gpu_check %4ds] %s\n' "$((SECONDS - START))" "$*"; }

# record NAME STATUS SECONDS [DETAIL]: one summary line, also appended to summary.txt so that a
# run killed from outside still leaves the steps it finished.
record() {
  local line
  line=$(printf '%-20s %-7s %5ss %s' "$1" "$2" "$3" "${4:-}")
  STEPS+=("$line")
  echo "$line" >>"$SUMMARY_FILE"
  case "$2" in PASS | SKIP) ;; *) FAILED=1 ;; esac
}

# step NAME LOG LIMIT CMD...: runs CMD (a program, not a function) with its output appended to
# LOG, under a time limit of min(LIMIT, what is left of the budget). With GPU_CHECK_ONLY set, a
# step whose name it does not match (an extended regex) is skipped, not failed (configure and
# build always run).
step() {
  local name=$1 log=$2 limit=$3
  shift 3
  if [[ -n "$ONLY" && "$name" != configure && "$name" != build && ! "$name" =~ $ONLY ]]; then
    record "$name" SKIP 0 "(not selected by GPU_CHECK_ONLY)"
    return
  fi
  local left=$((DEADLINE - SECONDS - RESERVE))
  if ((left < 10)); then
    echo "==== $name: skipped, the time budget (${BUDGET}s) is spent" >>"$log"
    record "$name" SKIP 0 "(time budget of ${BUDGET}s spent: counts as a failure)"
    FAILED=1
    return
  fi
  ((limit > left)) && limit=$left
  {
    echo
    echo "==== $name: $*"
    echo "==== started $(date -u +%FT%TZ), time limit ${limit}s"
  } >>"$log"
  note "$name (limit ${limit}s) ..."
  local first_line t0=$SECONDS rc=0
  first_line=$(($(wc -l <"$log") + 1))
  # The subshell keeps bash's own "Aborted"/"Killed" notices in the log too.
  (timeout --kill-after=10 "$limit" "$@"; exit $?) >>"$log" 2>&1 </dev/null || rc=$?
  local dt=$((SECONDS - t0))
  echo "==== $name: exit status $rc after ${dt}s" >>"$log"
  if ((rc == 0)); then
    record "$name" PASS "$dt"
  elif ((rc == 124 || rc == 137)); then
    record "$name" TIMEOUT "$dt" "(killed after ${limit}s; log: $(basename "$log"))"
  else
    record "$name" FAIL "$dt" "(exit $rc; log: $(basename "$log"))"
  fi
  if ((rc != 0)); then
    note "$name failed (exit $rc); its last lines in $(basename "$log"):"
    tail -n "+$first_line" "$log" | tail -n 15 | sed 's/^/    /'
  fi
}

# need NAME LOG FILE: records a failure when a binary the step needs was not built.
need() {
  if [[ -x "$3" ]]; then return 0; fi
  echo "==== $1: $3 was not built" >>"$2"
  record "$1" FAIL 0 "(${3#"$ROOT"/} not built)"
  return 1
}

# --- environment ---------------------------------------------------------------------------------
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname) cores: $(nproc)"
  echo "revision: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" \
    "$(git -C "$ROOT" status --porcelain 2>/dev/null | grep -q . && echo '(with local changes)')"
  echo "quick: $QUICK  budget: ${BUDGET}s  build jobs: $JOBS  ctest jobs: $CTEST_JOBS"
  echo "sanitizer tests: $SAN_TESTS  filter: $SAN_FILTER  api errors: $SAN_API_ERRORS"
  echo
  nvidia-smi 2>&1 || true
  echo
  nvcc --version 2>&1 | tail -2 || true
  cmake --version 2>&1 | head -1 || true
  echo "ninja $(ninja --version 2>&1 || true)"
  echo "compute-sanitizer: ${SANITIZER:-not found}"
  [[ -n "$SANITIZER" ]] && "$SANITIZER" --version 2>&1 | tail -1
} >>"$LOG_ENV" 2>&1
echo "GPU:"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee -a "$LOG_ENV" ||
  echo "nvidia-smi failed: no usable GPU?"

# --- build ---------------------------------------------------------------------------------------
step configure "$LOG_BUILD" 180 cmake --preset cuda
step build "$LOG_BUILD" 420 cmake --build --preset cuda -j "$JOBS"

if ((SAN_ONLY)); then QUICK=0; fi

# --- tests ---------------------------------------------------------------------------------------
if ((!SAN_ONLY)); then
# Two passes: the tests that assert timing ratios or concurrency (names matching $TIMED) run
# one at a time, since parallel tests would skew them; the rest (most of the ~700 processes,
# each paying for a CUDA context) run $CTEST_JOBS at a time.
if [[ "$TESTS_MODE" == ctest ]]; then
  step ctest "$LOG_CTEST" 300 ctest --preset cuda -j "$CTEST_JOBS" -E "$TIMED"
else
  # The GoogleTest cases batched, many to a process (one CUDA context each), then whatever
  # failed in a batch and the other tests alone through ctest (scripts/ctest_shards.py).
  # A batch that hangs is stopped after 150 s, its cases then run alone.
  step ctest "$LOG_CTEST" 300 python3 "$ROOT/scripts/ctest_shards.py" "$BUILD" -j "$CTEST_JOBS" \
    -E "$TIMED" --timeout 150
fi
step ctest-timed "$LOG_CTEST" 200 ctest --preset cuda -j 1 -R "$TIMED"

# --- samples and benchmark ----------------------------------------------------------------------
for s in quickstart seed_streams; do
  need "sample:$s" "$LOG_SAMPLES" "$BUILD/samples/$s" &&
    step "sample:$s" "$LOG_SAMPLES" 120 "$BUILD/samples/$s"
done
need sample:seed_timeline "$LOG_SAMPLES" "$BUILD/samples/seed_timeline" &&
  step sample:seed_timeline "$LOG_SAMPLES" 120 "$BUILD/samples/seed_timeline" "$PICS"
# The Python package (issue 21): the extension built in the same folder, its pytest suite with
# the CuPy tests, samples/python/seed_streams.py and bench/python_overhead.py (RESULT lines).
# Needs python3 with numpy and nanobind (cupy, scipy, pytest where present).
if python3 -c "import nanobind, numpy" 2>/dev/null; then
  # Its seed timelines go with the pictures: python/gpu_test.sh writes them to $OUT, which is
  # also the caller's folder of these logs (a device machine's $OUT holds few files).
  step python "$LOG_SAMPLES" 300 env OUT="$PICS/seed_streams_py" bash "$ROOT/python/gpu_test.sh" "$BUILD"
else
  record python SKIP 0 "(python3 lacks nanobind or numpy)"
fi
need bench_core "$LOG_BENCH" "$BUILD/bench/bench_core" &&
  step bench_core "$LOG_BENCH" 180 "$BUILD/bench/bench_core"

if ((BENCH)); then
  # Every op on 512^3 f32/u16, side by side with cupyx (bench_ops alone when CuPy is missing).
  need bench_ops "$LOG_BENCH" "$BUILD/bench/ops/bench_ops" &&
    step bench_ops+cupy "$LOG_BENCH" 300 python3 "$ROOT/bench/cupy_compare.py" \
      "$BUILD/bench/ops/bench_ops"
  # The filter sweep of every size, sigma and type (issue 16), side by side with cupyx and cuCIM
  # where installed, on an 8-stream set; its per-family worst ratios are in the summary.
  need bench_ops "$LOG_BENCH" "$BUILD/bench/ops/bench_ops" &&
    step bench_sweep+cupy "$LOG_BENCH" 300 python3 "$ROOT/bench/cupy_compare.py" \
      "$BUILD/bench/ops/bench_ops" --sweep --streams 8
  # The same ops on a one-stream set (the table above is on 32 streams): RESULT lines say which.
  need bench_ops "$LOG_BENCH" "$BUILD/bench/ops/bench_ops" &&
    step bench_ops_1_stream "$LOG_BENCH" 120 "$BUILD/bench/ops/bench_ops" --streams 1
  # Issue 17: every op on a 1- and a 32-stream set side by side, on the same inputs, for the
  # 110 MB uint16 volume (384x448x320; 220 MB as float) and 512^3: device ms, user ms (enqueue +
  # synchronize) and host enqueue us (RESULT sets / sets_ratio lines), then RESULT sets_summary:
  # the worst 32/1 ratios and host time against the targets (<= 1.05x, <= 20 us).
  need bench_ops "$LOG_BENCH" "$BUILD/bench/ops/bench_ops" &&
    step bench_ops_sets "$LOG_BENCH" 240 "$BUILD/bench/ops/bench_ops" --sets 1,32
  # The same for the 3D Gaussian through the fused one-kernel path (not yet the default): its
  # host enqueue time and 32/1 ratios (RESULT sets_summary ... gaussian=fused).
  need bench_ops "$LOG_BENCH" "$BUILD/bench/ops/bench_ops" &&
    step bench_ops_sets_gauss_fused "$LOG_BENCH" 60 "$BUILD/bench/ops/bench_ops" --sets 1,32 \
      --gauss-fused --filter gaussian
  # The library's own host time per op around its kernels (plan, ledger, event records) on 1 and
  # 32 streams (RESULT ledger lines, in the summary).
  need bench_ledger "$LOG_BENCH" "$BUILD/bench/bench_ledger" &&
    step bench_ledger "$LOG_BENCH" 60 "$BUILD/bench/bench_ledger"
  # What the host spends enqueuing a few ops on 32 streams: their CUDA runtime calls, recorded
  # by a timeline with api_calls (RESULT ops_api lines, in the summary).
  need bench_ops "$LOG_BENCH" "$BUILD/bench/ops/bench_ops" &&
    step bench_ops_api "$LOG_BENCH" 90 "$BUILD/bench/ops/bench_ops" --api \
      --filter "threshold|median size=3|sum|gaussian sigma=2"
  # Issue 20: label, EDT, fill holes, ball erosion and region stats on 512^3 masks, side by
  # side with cupyx (and cuCIM where installed) on the same masks (RESULT segment_cmp lines).
  need bench_ops "$LOG_BENCH" "$BUILD/bench/ops/bench_ops" &&
    step bench_segment+cupy "$LOG_BENCH" 300 python3 "$ROOT/bench/segment_compare.py" \
      "$BUILD/bench/ops/bench_ops"
  need bench_small_slices "$LOG_BENCH" "$BUILD/bench/bench_small_slices" &&
    step bench_small_slices "$LOG_BENCH" 150 "$BUILD/bench/bench_small_slices"
  # Programmatic dependent launch against plain launches and a graph (issue 17; RESULT pdl).
  need bench_pdl "$LOG_BENCH" "$BUILD/bench/bench_pdl" &&
    step bench_pdl "$LOG_BENCH" 60 "$BUILD/bench/bench_pdl"
  if [[ -x "$BUILD/bench/bench_stream" ]]; then
    step bench_stream "$LOG_BENCH" 150 "$BUILD/bench/bench_stream" "$PICS"
  fi
  if [[ -x "$BUILD/tools/voxstream/voxstream" ]]; then
    step demo "$LOG_SAMPLES" 150 bash "$ROOT/scripts/demo.sh" cuda
    cp "$BUILD/demo/demo_mip.png" "$PICS/" 2>/dev/null || true
  else
    echo "==== demo: the voxstream tool was not built (CLI11 not found at configure time)" \
      >>"$LOG_SAMPLES"
    record demo SKIP 0 "(no CLI11: tool not built)"
  fi
fi
fi  # !SAN_ONLY

# --- compute-sanitizer ---------------------------------------------------------------------------
if ((QUICK)); then
  record memcheck SKIP 0 "(--quick)"
  record synccheck SKIP 0 "(--quick)"
  record racecheck SKIP 0 "(--quick)"
elif [[ -z "$SANITIZER" ]]; then
  echo "compute-sanitizer not found" >>"$LOG_MEMCHECK"
  record memcheck FAIL 0 "(compute-sanitizer not found)"
  record synccheck FAIL 0 "(compute-sanitizer not found)"
  record racecheck FAIL 0 "(compute-sanitizer not found)"
else
  for tool in memcheck synccheck; do
    log="$LOG_MEMCHECK"
    [[ $tool == synccheck ]] && log="$LOG_SYNCCHECK"
    for t in $SAN_TESTS; do
      name=$tool
      [[ $SAN_TESTS == *" "* ]] && name="$tool:$(basename "$t")"
      need "$name" "$log" "$BUILD/$t" &&
        step "$name" "$log" 240 "$SANITIZER" --tool "$tool" --error-exitcode 1 \
          --report-api-errors "$SAN_API_ERRORS" "$BUILD/$t" "--gtest_filter=$SAN_FILTER" \
          --gtest_brief=1
    done
  done
  # racecheck (shared-memory hazards) over the tests of the newest shared-memory kernel, the
  # fused Gaussian (uint8 and float; its log goes with synccheck's, to keep the log count).
  need racecheck "$LOG_SYNCCHECK" "$BUILD/tests/ops/voxstream_ops_tests" &&
    step racecheck "$LOG_SYNCCHECK" 180 "$SANITIZER" --tool racecheck --error-exitcode 1 \
      --report-api-errors "$SAN_API_ERRORS" "$BUILD/tests/ops/voxstream_ops_tests" \
      "--gtest_filter=FilterTyped/0.GaussianInOneKernel*:FilterTyped/4.GaussianInOneKernel*:*TheFusedGaussianIsOneLaunchPerSlab*" \
      --gtest_brief=1
fi

# --- pictures ------------------------------------------------------------------------------------
if compgen -G "$PICS/*" >/dev/null; then
  tar -C "$PICS" -cf "$ARTIFACTS" . 2>/dev/null || true
fi

# --- summary (printed last) ----------------------------------------------------------------------
{
  echo
  echo "==================== gpu_check summary ($((SECONDS - START))s) ===================="
  printf '%s\n' "${STEPS[@]}"
  echo "---- results"
  grep -h '^RESULT ' "$LOG_SAMPLES" "$LOG_BENCH" 2>/dev/null | grep -vE '^RESULT (ops|sweep|sets|sets_ratio|segment) ' ||
    echo "(no RESULT lines)"
  echo "(bench_ops: $(grep -c '^RESULT ops ' "$LOG_BENCH" 2>/dev/null) RESULT ops lines in" \
    "$(basename "$LOG_BENCH"))"
  echo "---- compute-sanitizer"
  if ((QUICK)); then
    echo "(skipped: --quick)"
  else
    for log in "$LOG_MEMCHECK" "$LOG_SYNCCHECK"; do
      tag=$(basename "$log" .log)
      found=0
      while IFS= read -r l; do
        echo "$tag: $l"
        found=1
      done < <(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" 2>/dev/null)
      ((found)) || echo "$tag: no ERROR SUMMARY line"
    done
  fi
  echo "---- ctest"
  grep -h -A 30 '^The following tests FAILED:' "$LOG_CTEST" 2>/dev/null | grep -E '^\s+[0-9]+ - ' || true
  c=$(grep -hE '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$LOG_CTEST")
  echo "${c:-no ctest summary line (see 02-ctest.log)}"
  if ((FAILED)); then echo "gpu_check: FAILED"; else echo "gpu_check: all steps passed"; fi
} >"$OUT_DIR/.summary.tmp"
mv "$OUT_DIR/.summary.tmp" "$SUMMARY_FILE"
cat "$SUMMARY_FILE"
exit "$FAILED"
