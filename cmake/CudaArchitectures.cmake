# Which GPU architectures the CUDA code is compiled for, unless CMAKE_CUDA_ARCHITECTURES is given
# (the one variable to override it; scripts/package.sh passes 80;86;89;90 for the packages):
#   - this machine has an NVIDIA GPU (nvidia-smi lists one): `native`, that GPU's architecture;
#   - no GPU (CI, a machine building for another): 90, enough to compile every kernel once. The
#     sm_90a kernels (cuda/kernels/sm90a) are compiled for sm_90a whatever this says.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(_arch 90)
  find_program(INFERDESK_NVIDIA_SMI nvidia-smi)
  if(INFERDESK_NVIDIA_SMI)
    execute_process(COMMAND ${INFERDESK_NVIDIA_SMI} -L RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                    ERROR_QUIET)
    if(_rc EQUAL 0 AND _out MATCHES "GPU [0-9]")
      set(_arch native)
    endif()
  endif()
  set(CMAKE_CUDA_ARCHITECTURES ${_arch} CACHE STRING
      "CUDA architectures (default: native with a GPU, else 90; packages: 80;86;89;90)")
endif()
