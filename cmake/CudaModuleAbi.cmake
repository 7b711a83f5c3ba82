# INFERDESK_CUDA_MODULE_ABI: an id of the types that cross the dlopen boundary between the
# programs and libinferdesk-cuda.so (the headers below, the version, the compiler). A module whose
# id differs is refused with a reason instead of being called through mismatched layouts.
set(_abi_headers
  core/backend/backend.h core/backend/quant.h core/backend/cuda_options.h core/backend/cuda_module_abi.h
  core/sample/sampling_params.h core/util/dtype.h core/util/host_tensor.h core/util/error.h)
set(_abi_text "${PROJECT_VERSION};${CMAKE_CXX_COMPILER_ID};${CMAKE_CXX_COMPILER_VERSION}")
foreach(h ${_abi_headers})
  file(SHA256 ${PROJECT_SOURCE_DIR}/${h} _h)
  string(APPEND _abi_text ";${_h}")
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${PROJECT_SOURCE_DIR}/${h})
endforeach()
string(SHA256 _abi "${_abi_text}")
string(SUBSTRING "${_abi}" 0 16 _abi)
set(INFERDESK_CUDA_MODULE_ABI "${PROJECT_VERSION}-${_abi}")
