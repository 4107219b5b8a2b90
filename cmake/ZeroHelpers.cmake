# Helpers that make a target and register it, so each CMakeLists.txt below is short.
#   zero_add_test(NAME <name> SOURCES <files...> [LABELS <labels...>])
#   zero_add_program(NAME <name> SOURCES <files...>)

# Warnings for every Zero target (never global flags).
function(zero_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
endfunction()

function(zero_add_program)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE zero)
  zero_target_warnings(${ARG_NAME})
endfunction()

function(zero_add_test)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;LABELS;LIBS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE zero zero_test_support GTest::gtest GTest::gtest_main ${ARG_LIBS})
  zero_target_warnings(${ARG_NAME})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  # Tests whose full name contains "Cuda" (e.g. the CUDA instance of a test
  # parameterised over devices) get the label `cuda` instead of `unit`, so
  # `ctest -L cuda` runs exactly the GPU half. A test that calls GTEST_SKIP()
  # (a CUDA test on a machine without a GPU) is reported as skipped, not passed.
  # ".  SKIPPED . " matches gtest's "[  SKIPPED ] " with no brackets or backslashes,
  # which different CMake versions escape differently in the generated files.
  set(_skip ".  SKIPPED . ")
  list(TRANSFORM ARG_LABELS REPLACE "^unit$" "cuda" OUTPUT_VARIABLE _cuda_labels)
  gtest_discover_tests(${ARG_NAME} TEST_FILTER "-*Cuda*"
    PROPERTIES LABELS "${ARG_LABELS}" SKIP_REGULAR_EXPRESSION "${_skip}" DISCOVERY_TIMEOUT 60)
  gtest_discover_tests(${ARG_NAME} TEST_FILTER "*Cuda*"
    PROPERTIES LABELS "${_cuda_labels};cuda" SKIP_REGULAR_EXPRESSION "${_skip}" DISCOVERY_TIMEOUT 60)
endfunction()
