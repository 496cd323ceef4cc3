# Fails when the README does not quote each example verbatim in a ```cpp
# block, so that the snippets users copy always compile.
# Usage: cmake -DREADME=... "-DEXAMPLES=a.cpp;b.cpp" -P CheckReadmeSnippet.cmake
# (EXAMPLE=... for one file is accepted too.)
file(READ "${README}" readme)
if(EXAMPLE)
  list(APPEND EXAMPLES "${EXAMPLE}")
endif()
foreach(path IN LISTS EXAMPLES)
  file(READ "${path}" example)
  string(FIND "${readme}" "```cpp\n${example}```" at)
  if(at EQUAL -1)
    get_filename_component(name "${path}" NAME)
    message(FATAL_ERROR
      "README does not quote ${path} verbatim: copy the whole file into a "
      "```cpp block of the README (the one that links ${name})")
  endif()
endforeach()
