# CTest `package.consumer`: installs the build under test into a scratch
# prefix, then configures, builds and runs tests/consumer (pool::actors,
# pool::sqlite, pool::postgres, pool::remote, pool::cron and pool::http,
# each alone)
# against it with find_package(pool), and checks with ldd that a program
# links only the store libraries it picked. Run with -P and
# -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... [-DGENERATOR=...].
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  message(STATUS "${out}")
endfunction()

step(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
set(generator_args)
if(GENERATOR)
  set(generator_args -G "${GENERATOR}")
endif()
step(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer" -B "${WORK_DIR}/build"
     ${generator_args} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
     -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
step("${WORK_DIR}/build/consumer")
step("${WORK_DIR}/build/consumer_sqlite" "${WORK_DIR}/consumer.db")
step("${WORK_DIR}/build/consumer_postgres")

# Which shared libraries PROGRAM loads: those matching each of WANTED, none
# matching UNWANTED.
function(check_loads program wanted unwanted)
  execute_process(COMMAND ldd "${WORK_DIR}/build/${program}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ldd ${program} failed (${rc}): ${out}")
  endif()
  foreach(lib IN LISTS wanted)
    if(NOT out MATCHES "${lib}")
      message(FATAL_ERROR "${program} does not load ${lib}:\n${out}")
    endif()
  endforeach()
  foreach(lib IN LISTS unwanted)
    if(out MATCHES "${lib}")
      message(FATAL_ERROR "${program} loads ${lib}, which it never picked:\n"
                          "${out}")
    endif()
  endforeach()
  message(STATUS "${program}: loads ${wanted}; not ${unwanted}")
endfunction()
# pool::core is CAF and fmt only: spdlog and date-tz come with pool::spdlog
# and pool::cron.
check_loads(consumer "" "libpq;libsqlite3;libspdlog;libdate-tz")
check_loads(consumer_sqlite "libsqlite3" "libpq;libspdlog;libdate-tz")
check_loads(consumer_postgres "libpq" "libsqlite3;libspdlog;libdate-tz")
check_loads(consumer_http "" "libpq;libsqlite3;libspdlog;libdate-tz")
check_loads(consumer_cron "libdate-tz" "libpq;libsqlite3;libspdlog")
step("${WORK_DIR}/build/consumer_cron")
step("${WORK_DIR}/build/consumer_remote")
step("${WORK_DIR}/build/consumer_http")
# The package version file refuses a version this build is not.
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer"
                        -B "${WORK_DIR}/build-wrong" ${generator_args}
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DPOOL_WANTED=99.0
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "requested version")
  message(FATAL_ERROR "find_package(pool 99.0) did not refuse this build "
                      "for its version (${rc}):\n${out}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
