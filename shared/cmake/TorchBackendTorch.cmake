# torch's C++ headers and libraries as the imported target TorchBackend::torch.
# Needs TORCH_ROOT (the installed `torch` package folder) or finds it with the
# Python interpreter. Shared by the packages and installed with core's CMake
# package, for backends that write native kernels.
if(NOT TORCH_ROOT)
  find_package(Python REQUIRED COMPONENTS Interpreter)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
            "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])"
    OUTPUT_VARIABLE TORCH_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
endif()

# The torch release being built against, from its own header: the one place
# where the build depends on torch's version.
file(STRINGS "${TORCH_ROOT}/include/torch/headeronly/version.h" _torch_version_line
     REGEX "^#define TORCH_VERSION_(MAJOR|MINOR|PATCH) [0-9]+")
string(REGEX REPLACE ".*MAJOR ([0-9]+);.*MINOR ([0-9]+);.*PATCH ([0-9]+).*" "\\1.\\2.\\3"
       TORCH_BACKEND_TORCH_VERSION "${_torch_version_line}")
if(NOT TORCH_BACKEND_TORCH_VERSION MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
  message(FATAL_ERROR "Cannot read torch's version from ${TORCH_ROOT}/include/torch/headeronly/version.h")
endif()
# torch 2.14's headers need C++20 (operator<=>, std::bit_width, requires);
# older ones build as C++17. Carried as a usage requirement of the torch
# target, so every library that includes torch's headers gets it, backends
# built against core's installed CMake package included.
if(TORCH_BACKEND_TORCH_VERSION VERSION_GREATER_EQUAL 2.14)
  set(TORCH_BACKEND_CXX_STANDARD 20)
else()
  set(TORCH_BACKEND_CXX_STANDARD 17)
endif()

# Compiler command lines name torch's headers through a link in the build
# folder, not through the environment's path: the same sources built against
# the same torch release from another environment (each nox session has its
# own venv) are then the same compilations to ccache, and hit.
set(TORCH_BACKEND_TORCH_INCLUDE "${CMAKE_BINARY_DIR}/torch-root/include")
file(CREATE_LINK "${TORCH_ROOT}" "${CMAKE_BINARY_DIR}/torch-root" SYMBOLIC)

# torch's C++ libraries as one imported target. We skip find_package(Torch):
# it is slow and drags in CUDA/kineto probing that a CPU wheel does not need.
if(NOT TARGET TorchBackend::torch)
  add_library(TorchBackend::torch INTERFACE IMPORTED)
  set_target_properties(TorchBackend::torch PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${TORCH_BACKEND_TORCH_INCLUDE};${TORCH_BACKEND_TORCH_INCLUDE}/torch/csrc/api/include"
    INTERFACE_LINK_LIBRARIES "${TORCH_ROOT}/lib/libc10.so;${TORCH_ROOT}/lib/libtorch_cpu.so"
    # The release is on every compiler command line that reads torch's
    # headers, so ccache (which CI shares across builds, clones and torch
    # releases) never hands one release's object to another's build: its
    # direct mode does not see a __has_include that resolves differently
    # (KinetoProfiler.cpp compiled for 2.11 once came back for 2.13 without
    # its profiler).
    INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=1;TORCH_BACKEND_BUILT_FOR_TORCH=${TORCH_BACKEND_TORCH_VERSION}"
    INTERFACE_COMPILE_FEATURES "cxx_std_${TORCH_BACKEND_CXX_STANDARD}")
endif()
