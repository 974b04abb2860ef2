# Finds CUDA and NCCL for the GPU path. Sets RINGSCOPE_HAVE_CUDA (ON when the
# CUDA compiler, the CUDA runtime and NCCL were all found and
# RINGSCOPE_WITH_CUDA is ON) and, when ON, the imported target
# ringscope::nccl. Without them the runtime is built CPU-only and device
# tensors fail at submission with a message saying why (docs/gpu.md).
option(RINGSCOPE_WITH_CUDA "Build the GPU path (CUDA + NCCL) when both are found" ON)
# 80-real: machine code for compute capability 8.x (A100, and the 8.6/8.9
# cards, which run 8.0 code); 90: machine code and PTX for Hopper (H100/H200),
# the PTX also serving later GPUs through the driver's JIT.
set(RINGSCOPE_CUDA_ARCHITECTURES "80-real;90" CACHE STRING
    "GPU architectures for the copy kernels (CMake CUDA_ARCHITECTURES syntax)")
set(RINGSCOPE_HAVE_CUDA OFF)
set(RINGSCOPE_CUDA_PROBLEM "RINGSCOPE_WITH_CUDA=OFF")

if(RINGSCOPE_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    set(RINGSCOPE_CUDA_PROBLEM "no CUDA compiler (nvcc) found at configure time")
  else()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    find_path(RINGSCOPE_NCCL_INCLUDE_DIR nccl.h
              HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include /usr/include)
    find_library(RINGSCOPE_NCCL_LIBRARY nccl
                 HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu)
    if(NOT CUDAToolkit_FOUND)
      set(RINGSCOPE_CUDA_PROBLEM "the CUDA toolkit (cudart) was not found at configure time")
    elseif(NOT RINGSCOPE_NCCL_INCLUDE_DIR OR NOT RINGSCOPE_NCCL_LIBRARY)
      set(RINGSCOPE_CUDA_PROBLEM "NCCL (nccl.h, libnccl) was not found at configure time")
    else()
      set(RINGSCOPE_HAVE_CUDA ON)
      set(RINGSCOPE_CUDA_PROBLEM "")
      add_library(ringscope::nccl UNKNOWN IMPORTED)
      set_target_properties(ringscope::nccl PROPERTIES
        IMPORTED_LOCATION ${RINGSCOPE_NCCL_LIBRARY}
        INTERFACE_INCLUDE_DIRECTORIES ${RINGSCOPE_NCCL_INCLUDE_DIR})
    endif()
  endif()
endif()

if(RINGSCOPE_HAVE_CUDA)
  message(STATUS "ringscope GPU path: ON (CUDA ${CUDAToolkit_VERSION}, NCCL ${RINGSCOPE_NCCL_LIBRARY}, "
                 "architectures ${RINGSCOPE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "ringscope GPU path: OFF (${RINGSCOPE_CUDA_PROBLEM})")
endif()
