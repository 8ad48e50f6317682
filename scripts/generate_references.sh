#!/usr/bin/env bash
# Builds kjitd and kjit, then writes the generated references into docs/
# (configuration, metrics, CLI): scripts/generate_references.py says how.
#   scripts/generate_references.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target kjitd kjit -j "${JOBS:-$(nproc)}"
exec python3 scripts/generate_references.py "$@"
