# Fails when the README's quickstart snippet differs from
# examples/quickstart.cpp, so the snippet users copy always compiles.
# Usage: cmake -DREADME=... -DEXAMPLE=... -P CheckReadmeSnippet.cmake
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(FIND "${readme}" "```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "README has no ```cpp block")
endif()
math(EXPR start "${start} + 7")
string(SUBSTRING "${readme}" ${start} -1 rest)
string(FIND "${rest}" "```" stop)
string(SUBSTRING "${rest}" 0 ${stop} snippet)
if(NOT snippet STREQUAL example)
  message(FATAL_ERROR
    "README quickstart differs from ${EXAMPLE}: copy the example into the README")
endif()
