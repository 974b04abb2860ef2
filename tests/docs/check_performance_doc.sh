#!/usr/bin/env bash
# Fails when a generated table of docs/performance.md differs from what the
# measured results in bench/results/ give, naming each such block
# (bench/report.py --check). Fix: python3 bench/report.py --update docs/performance.md
# Usage: check_performance_doc.sh REPO_ROOT
set -euo pipefail
root=${1:?usage: check_performance_doc.sh REPO_ROOT}
python3 "$root/bench/report.py" --results "$root/bench/results" --check "$root/docs/performance.md"
