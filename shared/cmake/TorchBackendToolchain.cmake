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

include("${CMAKE_CURRENT_LIST_DIR}/TorchBackendTorch.cmake")
