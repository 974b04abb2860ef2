#!/usr/bin/env bash
# Builds the TensorFlow op library, GPU kernels included, against the
# CUDA-enabled `tensorflow` wheel from PyPI too (the version of the
# tensorflow-cpu in .venv): compile and link only, since no machine here has
# a GPU. Downloads the wheel (~570 MB, no dependencies) into
# build/tf-cuda-wheel, unpacks its headers and libtensorflow_framework.so.2,
# then:
#   1. says which CUDA the wheel expects (its and-cuda requirements);
#   2. compares the op sources preprocessed against either wheel's headers:
#      the same text means the library built against tensorflow-cpu is the
#      same code as one built against the CUDA wheel;
#   3. builds target ringscope_tf_ops_cuda_wheel against the CUDA wheel,
#      linked with --no-undefined (every symbol resolved by that wheel's
#      framework library), and checks that it binds its own CUDA runtime
#      and NCCL, not the ones that wheel's framework library exports.
# Run after scripts/setup.sh (CI runs it after the tests). Exits non-zero
# with the reason when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."

py=.venv/bin/python
version=$("$py" -c "import tensorflow as tf; print(tf.__version__)" 2>/dev/null) || {
  echo "tf-cuda-wheel: TensorFlow is not importable from .venv (run scripts/setup.sh)" >&2
  exit 1
}
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "tf-cuda-wheel: no CUDA toolkit here, so the op library has no GPU kernels to check; skipped"
  exit 0
fi
dir=build/tf-cuda-wheel
mkdir -p "$dir"
wheel=$(ls "$dir"/tensorflow-"$version"-*.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ]; then
  echo "tf-cuda-wheel: downloading tensorflow==$version (the CUDA-enabled wheel, no dependencies)"
  "$py" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$dir" "tensorflow==$version"
  wheel=$(ls "$dir"/tensorflow-"$version"-*.whl | head -1)
fi
unpacked="$dir/unpacked"
if [ ! -f "$unpacked/tensorflow/libtensorflow_framework.so.2" ]; then
  rm -rf "$unpacked"
  "$py" - "$wheel" "$unpacked" <<'EOF'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist()
             if n.startswith("tensorflow/include/") or n == "tensorflow/libtensorflow_framework.so.2"
             or n.endswith(".dist-info/METADATA")]
    z.extractall(out, names)
EOF
fi

echo "tf-cuda-wheel: tensorflow $version expects, with pip's [and-cuda] extra:"
grep -h '^Requires-Dist: nvidia-\(cuda-runtime\|nccl\|cudnn\)' "$unpacked"/tensorflow-*.dist-info/METADATA |
  sed 's/^Requires-Dist: /  /; s/; extra == "and-cuda"//'

# Preprocessed sources against either wheel's headers.
cpu_include=$("$py" -c "import tensorflow as tf; print(tf.sysconfig.get_include())")
cuda_include="$unpacked/tensorflow/include"
nvcc_include=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/../include
same=1
for src in tf_ops/src/ringscope_ops.cc tf_ops/src/gpu_placement.cc; do
  for which in cpu cuda; do
    inc=$cpu_include
    [ "$which" = cuda ] && inc=$cuda_include
    g++ -std=c++17 -E -P -DRINGSCOPE_TF_GPU=1 -D_GLIBCXX_USE_CXX11_ABI=1 -DEIGEN_MAX_ALIGN_BYTES=64 \
      -I"$inc" -Iruntime/include -Iruntime/planning/include -Ibase/include -Itrace_db/include -Itf_ops/src -I"$nvcc_include" "$src" |
      sed "s#$inc#TF_INCLUDE#g" >"$dir/$(basename "$src").$which.i"
  done
  if cmp -s "$dir/$(basename "$src").cpu.i" "$dir/$(basename "$src").cuda.i"; then
    echo "tf-cuda-wheel: $src preprocesses to the same text against both wheels' headers"
  else
    echo "tf-cuda-wheel: $src differs between the wheels' headers:" \
         "diff $dir/$(basename "$src").cpu.i $dir/$(basename "$src").cuda.i" >&2
    same=0
  fi
done

cmake -S . -B build -DRINGSCOPE_TF_CUDA_WHEEL="$(pwd)/$unpacked/tensorflow" >/dev/null
cmake --build build -j"$(nproc)" --target ringscope_tf_ops_cuda_wheel
lib=build/tf_cuda_wheel/ringscope_tf_ops_cuda_wheel.so
echo "tf-cuda-wheel: built $lib against the CUDA wheel"
# Its own CUDA runtime and NCCL ahead of the wheel's, which its framework
# library exports (tests/tf/check_op_library.py).
"$py" tests/tf/check_op_library.py "$lib" --gpu yes
[ "$same" = 1 ] || exit 1
