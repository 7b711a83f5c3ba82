# Shared CMake helpers.

# Compile options every target of ours uses.
function(inferdesk_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
endfunction()

# Enables CUDA in the calling directory (languages are per directory) with the project's settings:
# C++20 (CMake 3.25 does not know nvcc's flag; taught here). The architectures come from
# cmake/CudaArchitectures.cmake.
macro(inferdesk_enable_cuda)
  enable_language(CUDA)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endmacro()

# inferdesk_add_library(NAME <target> SOURCES ... DEPS ...)
# A static library of core/ rooted at the repository root for includes ("core/...").
function(inferdesk_add_library)
  cmake_parse_arguments(A "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_library(${A_NAME} STATIC ${A_SOURCES})
  target_include_directories(${A_NAME} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${A_NAME} PUBLIC ${A_DEPS})
  inferdesk_target_defaults(${A_NAME})
endfunction()

# inferdesk_add_test(NAME <name> LABEL <unit|golden|gpu|gui|fuzz> SOURCES ... DEPS ... [TIMEOUT s])
# A GoogleTest executable (statically linked gtest) registered with CTest under one label.
# The environment variable INFERDESK_SHARED_DIR and INFERDESK_SOURCE_DIR are set for the test.
function(inferdesk_add_test)
  cmake_parse_arguments(A "" "NAME;LABEL;TIMEOUT" "SOURCES;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${A_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(${A_NAME} PRIVATE
    INFERDESK_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    INFERDESK_SHARED_DIR="${INFERDESK_SHARED_DIR}"
    INFERDESK_BINARY_DIR="${PROJECT_BINARY_DIR}")
  inferdesk_target_defaults(${A_NAME})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 600)
  endif()
  add_test(NAME ${A_NAME} COMMAND ${A_NAME})
  set_tests_properties(${A_NAME} PROPERTIES LABELS ${A_LABEL} TIMEOUT ${A_TIMEOUT})
endfunction()
