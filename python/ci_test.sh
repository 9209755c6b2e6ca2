#!/usr/bin/env bash
# Builds the voxstream Python package with the host backend in a fresh virtual environment and
# runs its pytest suite (python/tests). For CI on Debian 12 (python3 3.11 at /usr/bin/python3);
# needs the same compilers and CCCL as the C++ host build. From the repository root:
#   bash python/ci_test.sh                  pip install . (scikit-build-core), then pytest
#   bash python/ci_test.sh --in-tree DIR    the extension built in an existing host build folder
#                                           DIR (configured again with VOXSTREAM_PYTHON=ON, so the
#                                           library is not compiled a second time), then pytest
#                                           against DIR/python: what .ci/run does
# Environment: PYTHON (default /usr/bin/python3), VOXSTREAM_PY_VENV (default build/python-venv),
# CMAKE_BUILD_PARALLEL_LEVEL (default 2).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
py=${PYTHON:-/usr/bin/python3}
venv=${VOXSTREAM_PY_VENV:-$root/build/python-venv}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
start=$(date +%s)
in_tree=""
if [[ ${1:-} == --in-tree ]]; then
  in_tree=${2:?"python/ci_test.sh: --in-tree needs a build folder"}
fi

# Debian's python needs python3-venv for venvs (with pip) and python3-dev for the headers.
missing=()
"$py" -c "import venv, ensurepip" 2>/dev/null || missing+=(python3-venv python3-pip)
"$py" -c "import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" \
  2>/dev/null || missing+=(python3-dev)
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "python/ci_test.sh: installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "python/ci_test.sh: missing ${missing[*]} (apt-get install them)" >&2
    exit 1
  fi
fi

if [[ ! -x $venv/bin/python ]]; then
  "$py" -m venv "$venv"
fi
# Build requirements from PyPI (pyproject.toml), numpy, and the test tools.
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  "scikit-build-core>=0.10" "nanobind>=2.0" numpy scipy pytest

if [[ -n $in_tree ]]; then
  echo "python/ci_test.sh: building the extension in $in_tree"
  cmake -S "$root" -B "$in_tree" -DVOXSTREAM_PYTHON=ON -DPython_EXECUTABLE="$venv/bin/python" >/dev/null
  cmake --build "$in_tree" --target _voxstream
  echo "python/ci_test.sh: venv and build took $(($(date +%s) - start)) s"
  cd "$root"
  PYTHONPATH="$in_tree/python" OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "$venv/bin/python" -m pytest \
    -q -p no:cacheprovider "$here/tests"
  echo "python/ci_test.sh: total $(($(date +%s) - start)) s"
  exit 0
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
echo "python/ci_test.sh: building the package (host backend)"
VOXSTREAM_BACKEND=host "$venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --config-settings=cmake.define.VOXSTREAM_BACKEND=host "${launcher[@]}" "$root"
built=$(date +%s)
echo "python/ci_test.sh: venv and build took $((built - start)) s"

# From the repository root, so that python/voxstream (no extension) cannot shadow the install.
cd "$root"
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$here/tests"
echo "python/ci_test.sh: total $(($(date +%s) - start)) s"
