# CMake package of torch-backend-core, installed inside its wheel.
# A backend package does:
#   find_package(TorchBackendCore REQUIRED)
#   torch_backend_add_device_library(torch_backend_mydev SOURCES MyDevice.cpp)
include("${CMAKE_CURRENT_LIST_DIR}/TorchBackendCoreTargets.cmake")

# Builds a backend's device library: its device symbols, linked to core, and
# installed as <backend package>/lib/ next to core's torch_backend/lib/.
function(torch_backend_add_device_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${name} SHARED ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE TorchBackendCore::torch_backend_core)
  set_target_properties(${name} PROPERTIES
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    CXX_VISIBILITY_PRESET hidden
    INSTALL_RPATH "$ORIGIN/../../torch_backend/lib;$ORIGIN/../../torch/lib")
  install(TARGETS ${name} LIBRARY DESTINATION lib)
endfunction()
