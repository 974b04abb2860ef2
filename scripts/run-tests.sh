#!/usr/bin/env bash
# Builds and runs every test (unit, mpirun at np=1..4, trace) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd build
ctest --output-on-failure --timeout 900 "$@"
