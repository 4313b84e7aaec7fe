# Build settings shared by every torch-backend package's own CMakeLists.txt.
# Included after project(); needs TORCH_ROOT (the installed `torch` package
# folder), which the shared hatch build hook passes in.

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()

# C++ builds are the slow part: reuse objects across builds when possible.
find_program(TORCH_BACKEND_CCACHE ccache)
if(TORCH_BACKEND_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${TORCH_BACKEND_CCACHE}")
endif()
# With CCACHE_BASEDIR set (CI sets the repository), ccache hands the compiler
# source paths relative to the build folder ("../../csrc/x.cpp"), so that the
# same sources built in another folder or clone are the same compilations.
# __FILE__ follows; map that relative prefix to the package's folder name, as
# an absolute path reads from csrc/'s parent on (runtime/Warn.h's source_name).
file(RELATIVE_PATH _torch_backend_source_from_build "${CMAKE_BINARY_DIR}" "${CMAKE_SOURCE_DIR}")
string(REGEX REPLACE "/$" "" _torch_backend_source_from_build "${_torch_backend_source_from_build}")
get_filename_component(_torch_backend_source_name "${CMAKE_SOURCE_DIR}" NAME)
if(_torch_backend_source_from_build)  # empty for an in-source build: no relative prefix to map
  set(_torch_backend_macro_map "${_torch_backend_source_from_build}/=${_torch_backend_source_name}/")
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fmacro-prefix-map=${_torch_backend_macro_map}>")
  # Without ccache a source included by a unity unit in the build folder reads
  # ".../build/x/../../csrc/x.cpp" (the compiler keeps the "..").
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fmacro-prefix-map=${CMAKE_BINARY_DIR}/${_torch_backend_macro_map}>")
  # ccache (4.7) leaves -fmacro-prefix-map out of its hash: the same text as a
  # definition keys the cached objects on it.
  add_compile_definitions("TORCH_BACKEND_MACRO_PREFIX_MAP=\"${_torch_backend_macro_map}\"")
endif()

include("${CMAKE_CURRENT_LIST_DIR}/TorchBackendTorch.cmake")
