#!/usr/bin/env bash
# Installs everything ringscope needs on a fresh Debian 12 machine (as root;
# idempotent: already-installed packages are skipped), makes the Python
# virtual environment .venv with TensorFlow, and builds everything in Release
# into build/. Called by run-main-job.sh and run-tests.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libopenmpi-dev openmpi-bin libsqlite3-dev
          libeigen3-dev catch2 nlohmann-json3-dev libcli11-dev clang-format python3-venv
          libimgui-dev libglfw3-dev libgl-dev libegl-dev libstb-dev libegl-mesa0 libgl1-mesa-dri
          fonts-dejavu-core xvfb xauth procps iproute2 util-linux)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  # Through env: sudo's env_reset would drop a variable set before it.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python side: a project virtual environment with TensorFlow from PyPI (one
# pinned version: the op library is built against its headers).
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv || { rm -rf .venv; echo "setup: python3 -m venv failed (install python3-venv)"; exit 1; }
fi
if ! .venv/bin/python -c "import tensorflow, sklearn, numpy" 2>/dev/null; then
  # TensorFlow unpacks to about 1.7 GiB; pip also unpacks the wheel under
  # TMPDIR. Say so before pip fails half-way with ENOSPC.
  need_kib=$((3 * 1024 * 1024))
  for dir in . "${TMPDIR:-/tmp}"; do
    free_kib=$(df -Pk "$dir" | awk 'NR==2 {print $4}')
    if [ -n "$free_kib" ] && [ "$free_kib" -lt "$need_kib" ]; then
      echo "setup: only $((free_kib / 1024)) MiB free on $(df -P "$dir" | awk 'NR==2 {print $6}') (for $dir);" \
           "installing TensorFlow into .venv needs about 3 GiB. Free some space and run again." >&2
      exit 1
    fi
  done
  echo "setup: installing Python packages into .venv (tensorflow-cpu, numpy, scikit-learn)"
  # --no-cache-dir: a cached copy of the ~600 MiB wheel would only cost disk.
  .venv/bin/pip install -q --disable-pip-version-check --no-cache-dir -r tf_ops/requirements.txt
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
