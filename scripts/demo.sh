#!/usr/bin/env bash
# Builds voxstream and runs the demo: the quick start, the seed experiment (ANCHORS.md §1), and
# the `voxstream` command-line tool on a 3D Shepp-Logan phantom, which ends in a picture: the
# phantom is made with noise, denoised (median, Gaussian), its gradient magnitude thresholded
# into an edge mask, and a slab maximum-intensity projection of the mask written as a PNG.
# Uses the CUDA backend when a usable NVIDIA GPU and nvcc are present, else the host backend,
# and says which.
#
# Usage: scripts/demo.sh [cuda|host] [docs]
#   cuda|host  force a backend
#   docs       also copy the picture to docs/demo_mip.png
# VOXSTREAM_DEMO_SIZE (default 256) sets the phantom's size in voxels along each axis.
set -euo pipefail
cd "$(dirname "$0")/.."

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
if [ -z "$backend" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU' \
     && command -v nvcc >/dev/null 2>&1; then
    backend=cuda
    why="found $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1) and nvcc"
  else
    backend=host
    why="no usable NVIDIA GPU (or no nvcc) here"
  fi
else
  why="asked for on the command line"
fi
echo "== voxstream demo: ${backend} backend (${why})"
jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset "$backend" >/dev/null
targets=(seed_streams quickstart)
have_tool=0
if cmake --build --preset "$backend" --target help 2>/dev/null | grep -q '^voxstream_cli:'; then
  have_tool=1
  targets+=(voxstream_cli)
fi
cmake --build --preset "$backend" -j "$jobs" --target "${targets[@]}"
echo
echo "== quickstart"
"build/${backend}/samples/quickstart"
echo
echo "== seed_streams: one kernel per z-slice on 1 stream vs 32 streams"
"build/${backend}/samples/seed_streams"
echo

if [ "$have_tool" -ne 1 ]; then
  echo "== the voxstream tool was not built: CLI11 was not found when configuring" >&2
  echo "   (apt-get install libcli11-dev, or copy a CLI11 (its CLI/ include directory) into" >&2
  echo "   build/cli11/, then run this script again)" >&2
  exit 1
fi

tool="build/${backend}/tools/voxstream/voxstream"
out="build/${backend}/demo"
n="${VOXSTREAM_DEMO_SIZE:-256}"
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
