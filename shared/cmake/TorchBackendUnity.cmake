# Unity builds, asked for with TORCH_BACKEND_UNITY_BUILD=1 (every nox session
# sets it): a library's sources compiled as one unit, so torch's headers are
# parsed, and their inline functions and templates compiled and optimised, once
# per library instead of once per file (the linker keeps one copy of each either
# way: the linked libraries are the same size). CI pays this once per torch
# release; a developer's build without the setting recompiles only the file that
# changed. Used by core's libraries, by every backend's device library (through
# core's CMake package, torch_backend_add_device_library) and by the ACL
# emulator. A unit shares one namespace: helpers in anonymous namespaces need
# names unique across the library.
#
# The units are written here rather than by CMake's UNITY_BUILD, whose units
# include each source by its absolute path: a unit's text, and so ccache's key,
# then differs in every clone, and a fresh clone compiled everything again with
# a warm cache. These include each source by its path relative to the unit,
# which sits in the build folder itself so that __FILE__ reads "../../csrc/..."
# as a plain build's does (the toolchain's prefix map). A source with compile
# settings of its own is compiled alone, as is anything not a .cpp file.
include_guard(GLOBAL)

function(torch_backend_unity_build target)
  get_target_property(sources ${target} SOURCES)
  set(alone "")
  set(text "")
  foreach(source IN LISTS sources)
    get_source_file_property(own_includes "${source}" INCLUDE_DIRECTORIES)
    get_source_file_property(own_options "${source}" COMPILE_OPTIONS)
    get_source_file_property(own_definitions "${source}" COMPILE_DEFINITIONS)
    if(NOT source MATCHES "\\.cpp$" OR own_includes OR own_options OR own_definitions)
      list(APPEND alone "${source}")
    else()
      get_filename_component(absolute "${source}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      file(RELATIVE_PATH from_unit "${CMAKE_CURRENT_BINARY_DIR}" "${absolute}")
      string(APPEND text "#include \"${from_unit}\"\n")
    endif()
  endforeach()
  set(unit "${CMAKE_CURRENT_BINARY_DIR}/${target}_unity.cpp")
  # Rewritten only when its text changes, so a reconfigure rebuilds nothing.
  file(CONFIGURE OUTPUT "${unit}" CONTENT "${text}")
  set_property(TARGET ${target} PROPERTY SOURCES ${alone} "${unit}")
endfunction()

# torch_backend_unity_build(target) when the environment asks for unity builds.
function(torch_backend_unity_build_if_asked target)
  if("$ENV{TORCH_BACKEND_UNITY_BUILD}" STREQUAL "1")
    torch_backend_unity_build(${target})
  endif()
endfunction()
