#!/usr/bin/env bash
# Builds the voxstream Python extension against an existing CUDA build folder and runs, on the
# GPU machine: the pytest suite (python/tests, CuPy tests included when CuPy is there), the seed
# experiment in Python (samples/python/seed_streams.py) and the Python call overhead benchmark
# (bench/python_overhead.py). Creates no virtual environment and installs nothing: it uses
# python3 as it is (numpy, and for the GPU tests cupy; scipy and pytest where present) and
# nanobind from PYTHONPATH or NANOBIND_DIR. From the repository root:
#
#   bash python/gpu_test.sh [BUILD_DIR]          BUILD_DIR: a configured cuda build (build/cuda)
#
# Environment: PYTHON (default python3), NANOBIND_DIR (nanobind's CMake folder; default
# `$PYTHON -m nanobind --cmake_dir`), JOBS (build parallelism, default 16), OUT (folder for the
# seed timelines, default BUILD_DIR/seed_streams_py). Without pytest, the test files run under
# python/tests/mini_runner.py (a small stand-in for the pytest features they use).
# Exit status: non-zero if the build, a test, or the seed sample's check failed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=$(cd "${1:-$root/build/cuda}" && pwd) || { echo "python/gpu_test.sh: no build folder" >&2; exit 2; }
py=${PYTHON:-python3}
jobs=${JOBS:-16}
out=${OUT:-$build/seed_streams_py}
status=0

nb=${NANOBIND_DIR:-$("$py" -m nanobind --cmake_dir 2>/dev/null)}
if [[ -z $nb || ! -d $nb ]]; then
  echo "python/gpu_test.sh: nanobind not found for $py (put it on PYTHONPATH or set NANOBIND_DIR)" >&2
  exit 2
fi
"$py" -c "import numpy" || { echo "python/gpu_test.sh: $py has no numpy" >&2; exit 2; }

echo "== python/gpu_test.sh: building _voxstream in $build (nanobind: $nb)"
start=$(date +%s)
cmake -S "$root" -B "$build" -DVOXSTREAM_PYTHON=ON -DPython_EXECUTABLE="$(command -v "$py")" \
  -Dnanobind_DIR="$nb" >/dev/null || exit 1
cmake --build "$build" --target _voxstream -j "$jobs" || exit 1
echo "== built in $(($(date +%s) - start)) s"

export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
cd "$root"
"$py" - <<'EOF' || exit 1
import voxstream as vs
print("voxstream backend:", vs.backend)
try:
    import cupy
    print("cupy", cupy.__version__)
except ImportError:
    print("cupy: not installed (the CuPy tests and the seed sample are skipped)")
EOF

echo "== tests (python/tests)"
if "$py" -c "import pytest" 2>/dev/null; then
  "$py" -m pytest -q -p no:cacheprovider -rs "$here/tests" || status=1
else
  echo "(pytest is missing: python/tests/mini_runner.py)"
  "$py" "$here/tests/mini_runner.py" "$here/tests" || status=1
fi

echo "== samples/python/seed_streams.py"
"$py" "$root/samples/python/seed_streams.py" --out "$out" || status=1

echo "== bench/python_overhead.py"
"$py" "$root/bench/python_overhead.py" || status=1

echo "== python/gpu_test.sh: $([[ $status == 0 ]] && echo PASS || echo FAIL) in $(($(date +%s) - start)) s"
exit $status
