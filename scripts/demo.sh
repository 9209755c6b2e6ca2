#!/usr/bin/env bash
# Builds voxstream and runs the demo: the seed experiment (ANCHORS.md §1) and the quick start.
# Uses the CUDA backend when a usable NVIDIA GPU and nvcc are present, else the host backend,
# and says which. Usage: scripts/demo.sh [cuda|host]
set -euo pipefail
cd "$(dirname "$0")/.."

backend="${1:-}"
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
cmake --build --preset "$backend" -j "$jobs" --target seed_streams quickstart
echo
echo "== quickstart"
"build/${backend}/samples/quickstart"
echo
echo "== seed_streams: one kernel per z-slice on 1 stream vs 32 streams"
"build/${backend}/samples/seed_streams"
