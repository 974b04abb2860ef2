"""Checks how the TensorFlow op library is linked and which kernels it registers.

The CUDA-enabled TensorFlow wheel's framework library exports a CUDA runtime
(12.x) and NCCL of its own. In a build with the GPU path the op library must
bind every CUDA runtime call inside itself (no undefined cuda* symbol left for
the loader to find in TensorFlow's), and must need ringscope's NCCL before
TensorFlow's framework library, so that the loader's search of the library's
dependencies finds ringscope's NCCL first. With --import the library is
loaded through ringscope.tensorflow and its kernels are listed: GPU kernels
for allreduce, grouped allreduce, allgather and broadcast (for the types NCCL
has) and the in-place broadcast (the resource handles in host memory)
exactly when built with the GPU path; reducescatter and alltoall on the CPU
only.

usage: check_op_library.py LIBRARY --gpu yes|no [--import]
"""
import argparse
import subprocess
import sys

GPU_OPS = ["RingscopeAllreduce", "RingscopeGroupedAllreduce", "RingscopeAllgather",
           "RingscopeBroadcast", "RingscopeBroadcastInplace"]
CPU_ONLY_OPS = ["RingscopeReducescatter", "RingscopeAlltoall"]
# The types NCCL reduces; 16-bit integers take the CPU kernel.
NCCL_TYPES = sorted(["DT_UINT8", "DT_INT8", "DT_INT32", "DT_INT64", "DT_HALF", "DT_BFLOAT16",
                     "DT_FLOAT", "DT_DOUBLE"])


def needed(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line]


def undefined(lib):
    out = subprocess.run(["nm", "-D", "--undefined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("library")
    ap.add_argument("--gpu", choices=["yes", "no"], required=True)
    ap.add_argument("--import", dest="do_import", action="store_true")
    args = ap.parse_args()
    problems = []

    libs = needed(args.library)
    print("needed:", " ".join(libs))
    cuda_left = [s for s in undefined(args.library)
                 if s.startswith("cuda") or s.startswith("__cuda")]
    if cuda_left:
        problems.append("CUDA runtime symbols left for the loader to bind (TensorFlow's would "
                        "answer): " + ", ".join(sorted(cuda_left)[:8]))
    if any(l.startswith("libcudart") for l in libs):
        problems.append("needs a shared CUDA runtime: " + ", ".join(l for l in libs
                                                                     if l.startswith("libcudart")))
    nccl = [i for i, l in enumerate(libs) if l.startswith("libnccl")]
    framework = [i for i, l in enumerate(libs) if l.startswith("libtensorflow_framework")]
    if args.gpu == "yes":
        if not nccl:
            problems.append("built with the GPU path but does not need libnccl")
        elif framework and nccl[0] > framework[0]:
            problems.append("libnccl comes after libtensorflow_framework among the needed "
                            "libraries: the framework's NCCL would be found first")
    elif nccl:
        problems.append("built without the GPU path but needs " + libs[nccl[0]])

    if args.do_import:
        import ringscope.tensorflow  # noqa: F401  (loads the library)
        from tensorflow.core.framework import types_pb2
        from tensorflow.python.framework import kernels
        for op in GPU_OPS + CPU_ONLY_OPS:
            found = kernels.get_registered_kernels_for_op(op).kernel
            devices = {k.device_type: list(k.host_memory_arg) for k in found}
            gpu_types = sorted(types_pb2.DataType.Name(t) for k in found if k.device_type == "GPU"
                               for c in k.constraint for t in c.allowed_values.list.type)
            print(op, devices)
            if "CPU" not in devices:
                problems.append(op + " has no CPU kernel")
            want_gpu = args.gpu == "yes" and op in GPU_OPS
            if ("GPU" in devices) != want_gpu:
                problems.append(op + (" has no GPU kernel" if want_gpu else
                                      " has a GPU kernel it should not"))
            if want_gpu and op != "RingscopeBroadcastInplace" and gpu_types != NCCL_TYPES:
                problems.append(op + "'s GPU kernel takes " + ", ".join(gpu_types) +
                                "; want NCCL's types " + ", ".join(NCCL_TYPES))
            if want_gpu and op == "RingscopeBroadcastInplace" and \
                    devices.get("GPU") != ["variables"]:
                problems.append("RingscopeBroadcastInplace's GPU kernel must take its resource "
                                "handles in host memory")

    for p in problems:
        print("FAIL:", p)
    print("ok" if not problems else "%d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
