# Decides whether the CUDA parts are built (FOVEA_CUDA=AUTO|ON|OFF) and sets FOVEA_HAVE_CUDA.
# ON fails at configure time when the toolkit is missing; AUTO says which way it went.
set(FOVEA_HAVE_CUDA OFF)
if(NOT FOVEA_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Hopper (H100/H200) is the machine we measure on; override with -DCMAKE_CUDA_ARCHITECTURES=...
    # 90a rather than 90: Hopper's arch-specific instructions (wgmma) run the int8 convolutions at
    # twice mma.sync's rate; code for 90a runs on compute capability 9.0 only.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90a)
    endif()
    enable_language(CUDA)
    # CMake 3.25 (Debian bookworm) predates nvcc's C++20 support and would refuse CUDA20 targets;
    # newer CMake sets these itself.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION -std=c++20)
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION -std=c++20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    # cuDNN runs the CUDA executor's convolutions. It comes with the toolkit here and with
    # PyTorch's Python environment on the GPU machine (CUDNN_ROOT, set by .devsys/gpu-env.sh).
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS $ENV{CUDNN_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
    find_library(CUDNN_LIBRARY cudnn HINTS $ENV{CUDNN_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR})
    if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
      message(FATAL_ERROR "cuDNN 9 not found next to the CUDA toolkit or in CUDNN_ROOT; install it, "
                          "or configure with -DFOVEA_CUDA=OFF")
    endif()
    add_library(fovea_cudnn INTERFACE IMPORTED)
    target_include_directories(fovea_cudnn SYSTEM INTERFACE ${CUDNN_INCLUDE_DIR})
    target_link_libraries(fovea_cudnn INTERFACE ${CUDNN_LIBRARY})
    set(FOVEA_HAVE_CUDA ON)
  elseif(FOVEA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FOVEA_CUDA=ON but no CUDA compiler was found. Install the CUDA toolkit "
                        "(nvcc in PATH or /usr/local/cuda) or configure with -DFOVEA_CUDA=AUTO/OFF.")
  else()
    message(STATUS "fovea: CUDA toolkit not found; building CPU-only (FOVEA_CUDA=AUTO)")
  endif()
endif()
