# FindCAF: locates the C++ Actor Framework 0.17 as packaged by Debian
# (libcaf-dev), which ships headers and shared libraries but no CMake package.
#
# Components: core (always), io, openssl.
# Creates the imported targets CAF::core, CAF::io and CAF::openssl and sets
# CAF_FOUND, CAF_VERSION and CAF_INCLUDE_DIR.

find_path(CAF_INCLUDE_DIR NAMES caf/config.hpp)
if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_version_line
       REGEX "^#define CAF_VERSION [0-9]+")
  if(_caf_version_line MATCHES "CAF_VERSION ([0-9]+)")
    math(EXPR _caf_major "${CMAKE_MATCH_1} / 10000")
    math(EXPR _caf_minor "(${CMAKE_MATCH_1} / 100) % 100")
    math(EXPR _caf_patch "${CMAKE_MATCH_1} % 100")
    set(CAF_VERSION "${_caf_major}.${_caf_minor}.${_caf_patch}")
  endif()
endif()

set(_caf_components core ${CAF_FIND_COMPONENTS})
list(REMOVE_DUPLICATES _caf_components)
set(_caf_required_vars CAF_INCLUDE_DIR)
foreach(_comp IN LISTS _caf_components)
  find_library(CAF_${_comp}_LIBRARY NAMES caf_${_comp})
  if(CAF_${_comp}_LIBRARY)
    set(CAF_${_comp}_FOUND TRUE)
  endif()
  if(CAF_FIND_REQUIRED_${_comp} OR _comp STREQUAL "core")
    list(APPEND _caf_required_vars CAF_${_comp}_LIBRARY)
  endif()
endforeach()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS ${_caf_required_vars}
  VERSION_VAR CAF_VERSION
  HANDLE_COMPONENTS)

if(CAF_FOUND)
  find_package(Threads REQUIRED)
  foreach(_comp IN LISTS _caf_components)
    if(CAF_${_comp}_FOUND AND NOT TARGET CAF::${_comp})
      add_library(CAF::${_comp} UNKNOWN IMPORTED)
      set_target_properties(CAF::${_comp} PROPERTIES
        IMPORTED_LOCATION "${CAF_${_comp}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}")
      if(_comp STREQUAL "core")
        set_property(TARGET CAF::core APPEND PROPERTY
                     INTERFACE_LINK_LIBRARIES Threads::Threads)
      else()
        set_property(TARGET CAF::${_comp} APPEND PROPERTY
                     INTERFACE_LINK_LIBRARIES CAF::core)
      endif()
    endif()
  endforeach()
endif()
mark_as_advanced(CAF_INCLUDE_DIR CAF_core_LIBRARY CAF_io_LIBRARY
                 CAF_openssl_LIBRARY)
