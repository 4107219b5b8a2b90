# Decides whether multi-GPU training through NCCL is built (option ZERO_NCCL) and
# where NCCL is. Result: ZERO_HAS_NCCL (ON/OFF) and, when ON, the imported target
# Zero::nccl. NCCL needs the CUDA backend; without either, zero/distributed/no_nccl/ gives the
# same API with every NCCL entry throwing "Zero was built without NCCL".
# Searched, in order: $NCCL_HOME, the CUDA toolkit's folders, the pip wheel
# `nvidia-nccl-cu*` that PyTorch installs (python3 -c "import nvidia.nccl").
set(ZERO_NCCL AUTO CACHE STRING "Build multi-GPU training with NCCL: AUTO (if found), ON, OFF")
set_property(CACHE ZERO_NCCL PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${ZERO_NCCL}" _zero_nccl)
if(NOT _zero_nccl MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "ZERO_NCCL must be AUTO, ON or OFF, got '${ZERO_NCCL}'")
endif()

set(ZERO_HAS_NCCL OFF)
if(NOT _zero_nccl STREQUAL "OFF" AND ZERO_HAS_CUDA)
  set(_nccl_hints "$ENV{NCCL_HOME}" ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_DIR})
  if(Python3_EXECUTABLE)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c
                    "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))"
                    OUTPUT_VARIABLE _wheel RESULT_VARIABLE _rc ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(_rc EQUAL 0 AND _wheel)
      list(APPEND _nccl_hints ${_wheel})
    endif()
  endif()
  find_path(ZERO_NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
  # The wheel ships only libnccl.so.2 (no unversioned link), so ask for both names.
  find_library(ZERO_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints}
               PATH_SUFFIXES lib lib64)
  if(ZERO_NCCL_INCLUDE_DIR AND ZERO_NCCL_LIBRARY)
    set(ZERO_HAS_NCCL ON)
    add_library(Zero::nccl UNKNOWN IMPORTED)
    set_target_properties(Zero::nccl PROPERTIES IMPORTED_LOCATION ${ZERO_NCCL_LIBRARY}
                          INTERFACE_INCLUDE_DIRECTORIES ${ZERO_NCCL_INCLUDE_DIR})
  endif()
endif()

if(ZERO_HAS_NCCL)
  message(STATUS "Zero: NCCL ${ZERO_NCCL_LIBRARY} (headers in ${ZERO_NCCL_INCLUDE_DIR})")
elseif(_zero_nccl STREQUAL "ON")
  message(FATAL_ERROR "ZERO_NCCL=ON but NCCL was not found (it needs the CUDA backend too). "
    "Set NCCL_HOME to a folder with include/nccl.h and lib/libnccl.so, or configure with "
    "-DZERO_NCCL=OFF.")
elseif(_zero_nccl STREQUAL "OFF")
  message(STATUS "Zero: NCCL off (ZERO_NCCL=OFF), multi-GPU training disabled")
elseif(NOT ZERO_HAS_CUDA)
  message(STATUS "Zero: NCCL not used (no CUDA backend), multi-GPU training disabled")
else()
  message(STATUS "Zero: NCCL not found, multi-GPU training disabled")
endif()
