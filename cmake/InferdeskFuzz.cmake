# INFERDESK_FUZZ=ON: the libFuzzer build (tests/fuzz/README.md). Everything compiled here gets
# ASan + UBSan and libFuzzer's coverage instrumentation; the targets link libFuzzer's main
# (-fsanitize=fuzzer, tests/fuzz/CMakeLists.txt). Asserts stay on: they are findings too.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "INFERDESK_FUZZ=ON needs clang with libFuzzer (found ${CMAKE_CXX_COMPILER_ID}). "
          "On Debian 12: apt install clang-14 libclang-rt-14-dev, then configure a separate build "
          "folder with -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 (scripts/fuzz.sh does).")
endif()
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }
]] INFERDESK_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
if(NOT INFERDESK_HAVE_LIBFUZZER)
  message(FATAL_ERROR "clang cannot link -fsanitize=fuzzer,address,undefined: install libclang-rt-14-dev "
          "(libFuzzer and the sanitizer runtimes)")
endif()

set(sanitizers -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
add_compile_options(${sanitizers})
add_link_options(-fsanitize=address,undefined)
# -O1 as OSS-Fuzz builds, line tables for the reports; no NDEBUG.
set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O1 -gline-tables-only")
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O1 -gline-tables-only")
