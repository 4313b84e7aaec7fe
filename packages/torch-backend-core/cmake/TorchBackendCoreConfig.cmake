# CMake package of torch-backend-core, installed inside its wheel.
# A backend package does:
#   find_package(TorchBackendCore REQUIRED)
#   torch_backend_add_device_library(torch_backend_mydev SOURCES MyDevice.cpp)
include("${CMAKE_CURRENT_LIST_DIR}/TorchBackendCoreTargets.cmake")
set(_TORCH_BACKEND_CORE_DIR "${CMAKE_CURRENT_LIST_DIR}")
include("${CMAKE_CURRENT_LIST_DIR}/TorchBackendUnity.cmake")

# Backends name core's headers through a link in their own build folder, not
# through where core is installed (its source tree when editable, a venv's
# site-packages from its wheel): a backend built against either is then the
# same compilation to ccache (CCACHE_BASEDIR), as torch's headers are through
# torch-root (TorchBackendTorch.cmake).
get_filename_component(_TORCH_BACKEND_CORE_INCLUDE "${CMAKE_CURRENT_LIST_DIR}/../../../include" ABSOLUTE)
set(TORCH_BACKEND_CORE_INCLUDE "${CMAKE_BINARY_DIR}/torch-backend-core-include")
file(CREATE_LINK "${_TORCH_BACKEND_CORE_INCLUDE}" "${TORCH_BACKEND_CORE_INCLUDE}" SYMBOLIC)
set_target_properties(TorchBackendCore::torch_backend_core PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${TORCH_BACKEND_CORE_INCLUDE}")

# Builds a backend's device library: its device symbols (SOURCES, torch-free)
# and optional native kernels (KERNEL_SOURCES, compiled against torch), linked
# to core and installed as <backend package>/lib/ next to torch_backend/lib/.
function(torch_backend_add_device_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;KERNEL_SOURCES" ${ARGN})
  add_library(${name} SHARED ${ARG_SOURCES} ${ARG_KERNEL_SOURCES})
  target_link_libraries(${name} PRIVATE TorchBackendCore::torch_backend_core)
  if(ARG_KERNEL_SOURCES)
    include("${_TORCH_BACKEND_CORE_DIR}/TorchBackendTorch.cmake")
    target_link_libraries(${name} PRIVATE TorchBackend::torch)
  endif()
  set_target_properties(${name} PROPERTIES
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    CXX_VISIBILITY_PRESET hidden
    INSTALL_RPATH "$ORIGIN/../../torch_backend/lib;$ORIGIN/../../torch/lib")
  install(TARGETS ${name} LIBRARY DESTINATION lib)
  # At the end of the calling CMakeLists.txt, once its own source settings and
  # target_sources() are known: those decide which sources join the unit. (A
  # deferred call reads its arguments when it runs, outside this function: the
  # name is written into it now.)
  cmake_language(EVAL CODE
    "cmake_language(DEFER CALL torch_backend_unity_build_if_asked [[${name}]])")
endfunction()
