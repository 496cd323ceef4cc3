# A compile-fail check: builds TARGET (excluded from `all`) in BUILD_DIR and
# passes only if the build fails with exactly one compiler error, and that
# error contains SENTENCE (a static_assert's text), so that a user who
# makes the mistake reads one plain sentence, not pages of template errors.
# Usage: cmake -DBUILD_DIR=... -DTARGET=... -DSENTENCE=... -P CheckCompileFails.cmake
execute_process(COMMAND ${CMAKE_COMMAND} --build "${BUILD_DIR}"
                        --target "${TARGET}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled, but must not:\n${out}")
endif()
string(FIND "${out}" "${SENTENCE}" at)
if(at EQUAL -1)
  message(FATAL_ERROR
    "${TARGET} failed without the sentence \"${SENTENCE}\":\n${out}")
endif()
string(REGEX MATCHALL "error:" errors "${out}")
list(LENGTH errors count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "${TARGET}: ${count} errors instead of one:\n${out}")
endif()
message(STATUS "${TARGET} fails as it should, with one error: ${SENTENCE}")
