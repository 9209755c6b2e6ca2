#!/usr/bin/env bash
# Generates the voxstream API reference (HTML) from the public headers' doc comments with
# Doxygen, configured by docs/Doxyfile, into build/api/html (open build/api/html/index.html).
# Doxygen's warnings go to build/api/warnings.log; they do not fail the run.
#
# Usage: scripts/api_docs.sh
# Needs Doxygen (Debian/Ubuntu: apt-get install doxygen); as root with apt-get, it is installed
# when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v doxygen >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing doxygen"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 doxygen
  else
    echo "api_docs.sh: Doxygen is not installed. Run this first, then this script again:" >&2
    echo "" >&2
    echo "   sudo apt-get install -y doxygen" >&2
    exit 1
  fi
fi

mkdir -p build/api
rm -rf build/api/html
doxygen docs/Doxyfile
if [ ! -f build/api/html/index.html ]; then
  echo "api_docs.sh: Doxygen wrote no build/api/html/index.html" >&2
  exit 1
fi
warnings=$(grep -c . build/api/warnings.log 2>/dev/null || true)
echo "== API reference: $(pwd)/build/api/html/index.html (${warnings:-0} warning lines in build/api/warnings.log)"
