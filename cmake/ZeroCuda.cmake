# Decides whether the CUDA backend is built (option ZERO_CUDA) and for which
# architectures. Result: ZERO_HAS_CUDA (ON/OFF) and, when ON, the CUDA language
# enabled and CUDA::cudart / CUDA::cublas / CUDA::cublasLt available.
include(CheckLanguage)

string(TOUPPER "${ZERO_CUDA}" _zero_cuda)
if(NOT _zero_cuda MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "ZERO_CUDA must be AUTO, ON or OFF, got '${ZERO_CUDA}'")
endif()

set(ZERO_HAS_CUDA OFF)
if(NOT _zero_cuda STREQUAL "OFF")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(ZERO_HAS_CUDA ON)
  elseif(_zero_cuda STREQUAL "ON")
    message(FATAL_ERROR
      "ZERO_CUDA=ON but no CUDA compiler was found. Install the CUDA toolkit and put nvcc on "
      "PATH (or set CMAKE_CUDA_COMPILER), or configure with -DZERO_CUDA=OFF for a CPU-only build.")
  else()
    message(STATUS "Zero: no CUDA toolkit found; building the CPU-only library (ZERO_CUDA=AUTO)")
  endif()
else()
  # OFF skips the search, so say why there is no CUDA rather than that none was found.
  message(STATUS "Zero: CUDA backend disabled by ZERO_CUDA=OFF; building the CPU-only library")
endif()

if(ZERO_HAS_CUDA)
  # Architectures: the user's choice if given (-DCMAKE_CUDA_ARCHITECTURES=... or the
  # CUDAARCHS environment variable); `native` when a GPU is visible now; otherwise
  # Ampere (A100 80, RTX 30xx 86), Ada (RTX 40xx 89) and Hopper (H100/H200 90).
  if((NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
     AND "$ENV{CUDAARCHS}" STREQUAL "")
    find_program(ZERO_NVIDIA_SMI nvidia-smi)
    set(_zero_gpu_seen OFF)
    if(ZERO_NVIDIA_SMI)
      execute_process(COMMAND ${ZERO_NVIDIA_SMI} -L OUTPUT_VARIABLE _smi RESULT_VARIABLE _rc
                      ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(_rc EQUAL 0 AND _smi MATCHES "GPU 0")
        set(_zero_gpu_seen ON)
      endif()
    endif()
    if(_zero_gpu_seen)
      set(CMAKE_CUDA_ARCHITECTURES native)
    else()
      set(CMAKE_CUDA_ARCHITECTURES 80 86 89 90)
    endif()
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "Zero: CUDA ${CUDAToolkit_VERSION}, architectures: ${CMAKE_CUDA_ARCHITECTURES}")
endif()

# Note [The GPU's own conversions] in zero/core/half.h. OFF builds the kernels with the
# portable bit manipulations, to time one against the other (tools/bench_ab.py --cmake).
option(ZERO_CUDA_CONVERT_INSTRUCTIONS
  "CUDA kernels round to BF16 and F16 with the GPU's cvt instructions (core/half.h)" ON)
if(ZERO_HAS_CUDA AND ZERO_CUDA_CONVERT_INSTRUCTIONS)
  add_compile_definitions(ZERO_CUDA_CONVERT_INSTRUCTIONS=1)
endif()
