# pool_warnings: an INTERFACE target carrying the project's warning flags.
add_library(pool_warnings INTERFACE)
add_library(pool::warnings ALIAS pool_warnings)
set_target_properties(pool_warnings PROPERTIES EXPORT_NAME warnings)
target_compile_options(pool_warnings INTERFACE
  $<BUILD_INTERFACE:$<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>>)
