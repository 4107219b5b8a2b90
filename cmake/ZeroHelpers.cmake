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

# ---------------------------------------------------------------- chapters

# zero_add_chapter(NAME 01_cuda_kernels SOURCES main.cpp [CUDA_SOURCES k.cu] [QUICK_ARGS --quick])
# Makes the program `ch01_cuda_kernels`. CUDA_SOURCES are compiled only when the
# CUDA backend is built (the program then sees ZERO_CHAPTER_HAS_CUDA=1 and should
# run its GPU half; otherwise it runs the CPU half and says what it skipped). The
# chapter's exercise folder (solutions/ or, in a learner build, exercises/) is on
# the include path, beside the repository root that `zero` exports (so a chapter
# includes the shared timer as "tools/gpu_median.h", as the tools/ programs do). A
# CTest test `chapter.NAME` (label `chapter`) runs the program with QUICK_ARGS, so a
# chapter that stops working fails the suite. When the chapter has an exercise,
# `chNAME_learner` is the same program on exercises/ code.
function(zero_add_chapter)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;CUDA_SOURCES;QUICK_ARGS" ${ARGN})
  set(target ch${ARG_NAME})
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE zero)
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
    ${ZERO_EXERCISE_ROOT}/${ARG_NAME})
  if(ZERO_HAS_CUDA AND ARG_CUDA_SOURCES)
    target_sources(${target} PRIVATE ${ARG_CUDA_SOURCES})
    target_link_libraries(${target} PRIVATE CUDA::cudart)
    target_compile_definitions(${target} PRIVATE ZERO_CHAPTER_HAS_CUDA=1)
    target_compile_features(${target} PRIVATE cuda_std_17)
  endif()
  zero_target_warnings(${target})
  # The same program built with the learner's exercises/ code (not built by default;
  # tools/check_exercise builds it once the chapter's exercise tests pass).
  set(learner_dir ${PROJECT_SOURCE_DIR}/exercises/${ARG_NAME})
  if(EXISTS ${learner_dir})
    add_executable(${target}_learner EXCLUDE_FROM_ALL ${ARG_SOURCES})
    target_link_libraries(${target}_learner PRIVATE zero)
    target_include_directories(${target}_learner PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${learner_dir})
    if(ZERO_HAS_CUDA AND ARG_CUDA_SOURCES)
      target_sources(${target}_learner PRIVATE ${ARG_CUDA_SOURCES})
      target_link_libraries(${target}_learner PRIVATE CUDA::cudart)
      target_compile_definitions(${target}_learner PRIVATE ZERO_CHAPTER_HAS_CUDA=1)
      target_compile_features(${target}_learner PRIVATE cuda_std_17)
    endif()
    zero_target_warnings(${target}_learner)
  endif()
  if(ZERO_BUILD_TESTS)
    add_test(NAME chapter.${ARG_NAME} COMMAND ${target} ${ARG_QUICK_ARGS})
    set_tests_properties(chapter.${ARG_NAME} PROPERTIES LABELS chapter TIMEOUT 300)
  endif()
endfunction()

# ---------------------------------------------------------------- exercises

# zero_add_exercise(CHAPTER 01_cuda_kernels TEST ex01_test.cpp [SOURCES f.cpp] [CUDA_SOURCES k.cu])
# Builds one exercise test source against four copies of the chapter's exercise files:
#   exNN_solutions_tests  solutions/CHAPTER; every test must pass (CTest label exNN).
#   exNN_stub_tests       pristine stubs that tools/make_exercises.py generates from
#                         solutions/ into the build tree; every test must fail (WILL_FAIL,
#                         label exercise-stubs), so no test passes vacuously. Never built
#                         from exercises/, so a learner's finished work cannot fail it.
#   exNN_learner_tests    exercises/CHAPTER, the learner's copy; not built by default and
#                         not a CTest test: tools/check_exercise NN builds and runs it.
#   exNN_mistake_tests    a copy with one plausible mistake written in by
#                         tools/try_mistakes.py (tests/exercises/CHAPTER/mistakes.txt);
#                         not built by default.
function(zero_add_exercise)
  cmake_parse_arguments(ARG "" "CHAPTER;TEST" "SOURCES;CUDA_SOURCES" ${ARGN})
  string(SUBSTRING ${ARG_CHAPTER} 0 2 nn)
  set(solutions ${PROJECT_SOURCE_DIR}/solutions/${ARG_CHAPTER})
  set(pristine ${CMAKE_BINARY_DIR}/exercise_copies/pristine/${ARG_CHAPTER})
  file(GLOB solution_files CONFIGURE_DEPENDS ${solutions}/*)
  set(pristine_files "")
  foreach(file ${solution_files})
    get_filename_component(name ${file} NAME)
    list(APPEND pristine_files ${pristine}/${name})
  endforeach()
  add_custom_command(OUTPUT ${pristine_files}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/make_exercises.py
            --out ${CMAKE_BINARY_DIR}/exercise_copies/pristine --chapter ${ARG_CHAPTER}
    DEPENDS ${solution_files} ${PROJECT_SOURCE_DIR}/tools/make_exercises.py
    COMMENT "Generating the pristine ex${nn} stubs from solutions/${ARG_CHAPTER}")

  foreach(variant solutions stub learner mistake)
    if(variant STREQUAL "solutions")
      set(dir ${solutions})
    elseif(variant STREQUAL "stub")
      set(dir ${pristine})
    elseif(variant STREQUAL "learner")
      set(dir ${PROJECT_SOURCE_DIR}/exercises/${ARG_CHAPTER})
    else()
      set(dir ${CMAKE_BINARY_DIR}/exercise_copies/mistake/${ARG_CHAPTER})
    endif()
    set(target ex${nn}_${variant}_tests)
    list(TRANSFORM ARG_SOURCES PREPEND ${dir}/ OUTPUT_VARIABLE sources)
    set(extra "")
    if(variant STREQUAL "stub")
      set(extra ${pristine_files})  # makes the build run the generator first
    endif()
    if(variant STREQUAL "learner" OR variant STREQUAL "mistake")
      add_executable(${target} EXCLUDE_FROM_ALL ${ARG_TEST} ${sources})
    else()
      add_executable(${target} ${ARG_TEST} ${sources} ${extra})
    endif()
    if(ZERO_HAS_CUDA AND ARG_CUDA_SOURCES)
      list(TRANSFORM ARG_CUDA_SOURCES PREPEND ${dir}/ OUTPUT_VARIABLE cuda_sources)
      target_sources(${target} PRIVATE ${cuda_sources})
      target_link_libraries(${target} PRIVATE CUDA::cudart)
      target_compile_definitions(${target} PRIVATE ZERO_EXERCISE_HAS_CUDA=1)
      target_compile_features(${target} PRIVATE cuda_std_17)
      list(APPEND sources ${cuda_sources})
    endif()
    if(variant STREQUAL "mistake" AND sources)
      set_source_files_properties(${sources} PROPERTIES GENERATED TRUE)
    endif()
    target_include_directories(${target} PRIVATE ${dir} ${PROJECT_SOURCE_DIR}/tests/exercises)
    target_link_libraries(${target} PRIVATE zero zero_test_support GTest::gtest GTest::gtest_main)
    zero_target_warnings(${target})
    set(skip ".  SKIPPED . ")
    if(variant STREQUAL "solutions")
      gtest_discover_tests(${target} TEST_PREFIX "ex${nn}."
        PROPERTIES LABELS "ex${nn}" SKIP_REGULAR_EXPRESSION "${skip}" DISCOVERY_TIMEOUT 60)
    elseif(variant STREQUAL "stub")
      gtest_discover_tests(${target} TEST_PREFIX "ex${nn}-stub."
        PROPERTIES LABELS "exercise-stubs" WILL_FAIL TRUE SKIP_REGULAR_EXPRESSION "${skip}"
        DISCOVERY_TIMEOUT 60)
    endif()
  endforeach()
endfunction()
