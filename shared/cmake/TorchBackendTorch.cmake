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

# torch's C++ libraries as one imported target. We skip find_package(Torch):
# it is slow and drags in CUDA/kineto probing that a CPU wheel does not need.
if(NOT TARGET TorchBackend::torch)
  add_library(TorchBackend::torch INTERFACE IMPORTED)
  set_target_properties(TorchBackend::torch PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${TORCH_ROOT}/include;${TORCH_ROOT}/include/torch/csrc/api/include"
    INTERFACE_LINK_LIBRARIES "${TORCH_ROOT}/lib/libc10.so;${TORCH_ROOT}/lib/libtorch_cpu.so"
    INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=1")
endif()
