#!/usr/bin/env bash
# Runs one of Horovod's own TensorFlow test files against ringscope, under
# mpirun, through the import shim next to this script (shim/horovod: modules
# that forward horovod.tensorflow and horovod.tensorflow.keras to ringscope).
# Horovod's code is not part of ringscope: give a Horovod checkout (or the
# output of `git archive 2626dc87 test` from one); its test/ folder is copied
# to a scratch directory and run there.
#
#   tests/tf/horovod_suite/run.sh HOROVOD_DIR NP TEST_FILE [PYTEST_ARGS...]
#   tests/tf/horovod_suite/run.sh ~/horovod 2 test_tensorflow.py -k allgather
#
# With HOROVOD_SUITE_KERAS3_EDITS=1 the test file first gets the Keras 3
# edits of keras3_edits.py (the ones docs/tensorflow.md lists for a user's
# own script: the tests carry Keras 2 code of their own). Each rank
# writes a JUnit file; the summary at the end reads them (summary.py). The
# test's Python packages (pytest and what Horovod's tests import) are
# installed into the scratch directory, not into .venv.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
if [ $# -lt 3 ] || [ ! -d "${1:-}/test/parallel" ]; then
  echo "usage: $0 HOROVOD_DIR NP TEST_FILE [PYTEST_ARGS...]" >&2
  echo "  HOROVOD_DIR must hold Horovod's test/parallel (a checkout, or 'git archive <commit> test')" >&2
  exit 2
fi
hvd_dir="$1"; np="$2"; test_file="$3"; shift 3
python="$root/.venv/bin/python"
[ -x "$python" ] || { echo "$0: no $python (run scripts/setup.sh)" >&2; exit 2; }
[ -d "$root/build/python/ringscope" ] || { echo "$0: no build/python (run scripts/setup.sh)" >&2; exit 2; }

work="${HOROVOD_SUITE_WORK:-/tmp/ringscope-horovod-suite}"
mkdir -p "$work"
deps="$work/pydeps"
if ! PYTHONPATH="$deps" "$python" -c "import pytest, pytest_timeout, parameterized, mock, cloudpickle, packaging" 2>/dev/null; then
  "$python" -m pip install -q --disable-pip-version-check --target "$deps" \
    pytest pytest-timeout parameterized mock cloudpickle packaging
fi
run="$work/run-$np-${test_file%.py}${HOROVOD_SUITE_KERAS3_EDITS:+-edited}"
rm -rf "$run" && mkdir -p "$run"
cp -r "$hvd_dir/test" "$run/test"
if [ "${HOROVOD_SUITE_KERAS3_EDITS:-0}" = 1 ]; then
  "$python" "$here/keras3_edits.py" "$run/test/parallel/$test_file"
fi

# A test where ranks part ways (one fails an assertion and goes on) would
# wait for the others forever: the stall shutdown fails it after 30 s and
# pytest-timeout ends a test that still hangs.
cd "$run/test/parallel"
set +e
timeout "${HOROVOD_SUITE_TIMEOUT:-3600}" \
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
  -x PYTHONPATH="$here/shim:$root/build/python:$deps" -x TF_CPP_MIN_LOG_LEVEL=2 \
  -x RINGSCOPE_STALL_CHECK_SECONDS=10 -x RINGSCOPE_STALL_SHUTDOWN_SECONDS=30 \
  -x RINGSCOPE_LOG_LEVEL=0 \
  bash -c 'exec "$0" -m pytest -p no:cacheprovider --timeout=300 -q "$1" \
             --junitxml="$2/rank$OMPI_COMM_WORLD_RANK.xml" "${@:3}" > "$2/rank$OMPI_COMM_WORLD_RANK.log" 2>&1' \
  "$python" "$test_file" "$run" "$@"
rc=$?
set -e
"$python" "$here/summary.py" "$run"/rank*.xml
echo "logs: $run/rank*.log (mpirun exit $rc)"
exit $rc
