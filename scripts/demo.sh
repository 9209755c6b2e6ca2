#!/usr/bin/env bash
# Builds voxstream and runs the demo: the quick start, the seed experiment (ANCHORS.md §1), and
# the `voxstream` command-line tool on a 3D Shepp-Logan phantom, which ends in a picture: the
# phantom is made with noise, denoised (median, Gaussian), its gradient magnitude thresholded
# into an edge mask, and a slab maximum-intensity projection of the mask written as a PNG.
# Uses the CUDA backend when a usable NVIDIA GPU and nvcc are present, else the host backend,
# and says which.
#
# It does its own set-up on a fresh Debian/Ubuntu machine: the Debian packages it needs are
# installed when missing and it can (root, apt-get); otherwise it prints the one command to run
# and stops before building anything. The CUDA toolkit 13 (nvcc and its Thrust/CUB headers,
# needed by both backends) is not a Debian package: it is looked for on PATH, in $CUDA_HOME,
# $CUDA_PATH and /usr/local/cuda. An existing build/<backend> (e.g. from
# `cmake --workflow --preset host`) is reused.
#
# Usage: scripts/demo.sh [cuda|host] [docs]
#   cuda|host  force a backend
#   docs       also copy the picture to docs/demo_mip.png
# Environment:
#   VOXSTREAM_DEMO_SIZE        the phantom's size in voxels along each axis (default 256 on the
#                              cuda backend, 128 on the host backend)
#   VOXSTREAM_DEMO_NO_INSTALL  1: never install packages, only say what is missing
set -euo pipefail
cd "$(dirname "$0")/.."
t_start=$SECONDS

backend=""
docs=0
for arg in "$@"; do
  case "$arg" in
    cuda | host) backend="$arg" ;;
    docs) docs=1 ;;
    *)
      echo "usage: scripts/demo.sh [cuda|host] [docs]" >&2
      exit 2
      ;;
  esac
done

# --- set-up: Debian packages -------------------------------------------------------------------
# What the build needs (libtiff-dev is optional and not installed here; CI installs it).
packages=(cmake ninja-build g++ libgtest-dev libgmock-dev zlib1g-dev libpng-dev libcli11-dev)

pkg_installed() {
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = installed ]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "== set-up: this is not a Debian/Ubuntu system, so nothing is installed here." >&2
  echo "   The build needs: CMake >= 3.25, Ninja, g++ (C++17, OpenMP), GoogleTest + GoogleMock," >&2
  echo "   zlib, libpng and CLI11 (Debian names: ${packages[*]})." >&2
  for c in cmake ninja g++; do
    command -v "$c" >/dev/null 2>&1 || { echo "   missing: $c" >&2; exit 1; }
  done
else
  missing=()
  for p in "${packages[@]}"; do
    pkg_installed "$p" || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 \
       && [ "${VOXSTREAM_DEMO_NO_INSTALL:-0}" != 1 ]; then
      echo "== set-up: installing ${missing[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt_install() {
        apt-get update -qq &&
          apt-get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}"
      }
      apt_install || { sleep 15; apt_install; } || {
        echo "== set-up failed: could not install ${missing[*]} (see apt-get's message above)" >&2
        exit 1
      }
    else
      echo "== set-up: missing Debian packages: ${missing[*]}" >&2
      echo "   Run this first (it needs root), then run scripts/demo.sh again:" >&2
      echo "" >&2
      echo "   sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
  else
    echo "== set-up: Debian packages present (${packages[*]})"
  fi
fi

# No `| head` under pipefail: an early-exiting reader can kill the writer with SIGPIPE.
cmake_version=$(cmake --version)
cmake_version=${cmake_version%%$'\n'*}
cmake_version=${cmake_version##* }
if ! printf '3.25\n%s\n' "$cmake_version" | sort -V -C; then
  echo "== set-up: CMake $cmake_version is too old: the presets need CMake 3.25 or newer" >&2
  echo "   (Debian 12 and Ubuntu 24.04 ship one; on older systems: pip install cmake)." >&2
  exit 1
fi

# --- set-up: the CUDA toolkit (as .ci/run's find_cuda) ------------------------------------------
if ! command -v nvcc >/dev/null 2>&1; then
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then
      export PATH="$d/bin:$PATH"
      break
    fi
  done
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "== set-up: the CUDA toolkit 13 was not found (no nvcc on PATH, in \$CUDA_HOME," >&2
  echo "   \$CUDA_PATH or /usr/local/cuda). voxstream needs it for both backends (the host" >&2
  echo "   backend compiles its Thrust/CUB headers with g++). Install it from" >&2
  echo "   https://developer.nvidia.com/cuda-downloads, or set CUDA_HOME to where it is, and run" >&2
  echo "   scripts/demo.sh again." >&2
  exit 1
fi
export CUDA_HOME="${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}"
export CUDA_PATH="${CUDA_PATH:-$CUDA_HOME}"
echo "== set-up: CUDA toolkit in $CUDA_HOME ($(nvcc --version | tail -n 1))"

# --- backend -------------------------------------------------------------------------------------
if [ -z "$backend" ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || true)
  gpu=${gpu%%$'\n'*}
  if [ -n "$gpu" ]; then
    backend=cuda
    why="found $gpu and nvcc"
  else
    backend=host
    why="no usable NVIDIA GPU here"
  fi
else
  why="asked for on the command line"
fi
echo "== voxstream demo: ${backend} backend (${why})"

# --- build ---------------------------------------------------------------------------------------
build="build/${backend}"
jobs=$(nproc 2>/dev/null || echo 2)
if [ -f "$build/CMakeCache.txt" ]; then
  echo "== reusing $build"
fi
mkdir -p "$build"
configure_log="$build/demo-configure.log"
cmake --preset "$backend" >"$configure_log" 2>&1 || {
  cat "$configure_log" >&2
  echo "== configuring $build failed (above)" >&2
  exit 1
}
# tools/voxstream/CMakeLists.txt records whether it builds the tool in the cache. Reading the
# file cannot race (unlike `--target help | grep -q` under pipefail).
if ! grep -qx 'VOXSTREAM_TOOL_BUILT:INTERNAL=ON' "$build/CMakeCache.txt"; then
  grep -i 'voxstream tool' "$configure_log" >&2 || true
  echo "== the voxstream tool is not configured in $build: CLI11 was not found by CMake" >&2
  echo "   (apt-get install libcli11-dev, or copy a CLI11 (its CLI/ include directory) into" >&2
  echo "   build/cli11/, then run this script again)" >&2
  exit 1
fi
t_build=$SECONDS
echo "== building (quickstart, seed_streams, voxstream) with $jobs jobs"
cmake --build --preset "$backend" -j "$jobs" --target seed_streams quickstart voxstream_cli
echo "   built in $((SECONDS - t_build)) s"

echo
echo "== quickstart"
"$build/samples/quickstart"
echo
echo "== seed_streams: one kernel per z-slice on 1 stream vs 32 streams"
"$build/samples/seed_streams"
echo

tool="$build/tools/voxstream/voxstream"
out="$build/demo"
if [ "$backend" = cuda ]; then
  n="${VOXSTREAM_DEMO_SIZE:-256}"
else
  n="${VOXSTREAM_DEMO_SIZE:-256}"
fi
mkdir -p "$out"
# The slab: the middle eighth of the head along z, where the skull's walls run along z.
z0=$((n * 7 / 16))
z1=$((n * 9 / 16))
run() {
  echo "\$ voxstream $*"
  "$tool" "$@"
}
echo "== the voxstream tool: a ${n}^3 Shepp-Logan phantom to a picture of its edges"
run phantom -o "$out/phantom.nrrd" --size "$n" --noise 0.1
run info "$out/phantom.nrrd"
run run "$out/phantom.nrrd" -o "$out/edges.nrrd" \
  --median 3 --gaussian 1.5 --gradient-magnitude --threshold 0.6
run mip "$out/edges.nrrd" -o "$out/demo_mip.png" --slab "$z0:$z1"
if [ "$docs" -eq 1 ]; then
  cp "$out/demo_mip.png" docs/demo_mip.png
  echo "copied to docs/demo_mip.png"
fi
echo
echo "== picture: $(pwd)/$out/demo_mip.png"
echo "== demo done in $((SECONDS - t_start)) s"
