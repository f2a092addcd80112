# tests/build/run_configure_check.cmake - the build.configure_* tests (cmake -P): configures this
# source tree into a scratch build dir (configure step only) and checks the outcome.
#   NWB_CHECK=bad_telemetry  -DNWB_TELEMETRY=BOGUS must fail, naming the value.
#   NWB_CHECK=definitions    -DNWB_CONFIG=${NWB_CHECK_CONFIG} -DNWB_TELEMETRY=${NWB_CHECK_TELEMETRY}
#                            must configure, and every compile command that can include an nwb
#                            header (-I.../common/include) must carry NWB_TELEMETRY_LEVEL=
#                            ${NWB_CHECK_LEVEL} and, exactly when NWB_CHECK_FINAL, NWB_FINAL=1.
# Inputs (-D): NWB_SOURCE_DIR, NWB_WORK_DIR, NWB_C_COMPILER, NWB_GENERATOR, NWB_CHECK, and for
#              definitions NWB_CHECK_CONFIG, NWB_CHECK_TELEMETRY, NWB_CHECK_LEVEL, NWB_CHECK_FINAL.
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/NwbRequireDefined.cmake)
nwb_require_defined(run_configure_check.cmake
  NWB_SOURCE_DIR NWB_WORK_DIR NWB_C_COMPILER NWB_GENERATOR NWB_CHECK)
# One configure of the whole tree takes a few seconds; the bound leaves room on a loaded machine.
set(configure_timeout 90)

file(REMOVE_RECURSE ${NWB_WORK_DIR})

# configure(<args>...) - configure NWB_SOURCE_DIR into NWB_WORK_DIR/build; sets rc and log.
macro(configure)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${NWB_SOURCE_DIR} -B ${NWB_WORK_DIR}/build
      -G "${NWB_GENERATOR}" -DCMAKE_C_COMPILER=${NWB_C_COMPILER} ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT ${configure_timeout})
  set(log "${out}\n${err}")
endmacro()

if(NWB_CHECK STREQUAL "bad_telemetry")
  configure(-DNWB_TELEMETRY=BOGUS -DNWB_BUILD_TESTS=OFF -DNWB_BUILD_BENCH=OFF)
  if(rc EQUAL 0)
    message(FATAL_ERROR "configure check: -DNWB_TELEMETRY=BOGUS was accepted:\n${log}")
  endif()
  set(want "NWB_TELEMETRY='BOGUS' is not valid: use OFF, STATS or FULL")
  string(FIND "${log}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "configure check: configure failed (${rc}) without \"${want}\":\n${log}")
  endif()
  message(STATUS "configure check: -DNWB_TELEMETRY=BOGUS fails with \"${want}\": ok")
  return()
endif()

if(NOT NWB_CHECK STREQUAL "definitions")
  message(FATAL_ERROR "run_configure_check.cmake: unknown NWB_CHECK '${NWB_CHECK}'")
endif()
nwb_require_defined(run_configure_check.cmake
  NWB_CHECK_CONFIG NWB_CHECK_TELEMETRY NWB_CHECK_LEVEL NWB_CHECK_FINAL)
# The viewer needs server/viewer/node_modules, which has nothing to do with these definitions.
configure(-DNWB_CONFIG=${NWB_CHECK_CONFIG} -DNWB_TELEMETRY=${NWB_CHECK_TELEMETRY}
  -DNWB_BUILD_VIEWER=OFF -DNWB_BUILD_TESTS=ON -DNWB_BUILD_BENCH=ON)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure check: configure failed (${rc}):\n${log}")
endif()

file(READ ${NWB_WORK_DIR}/build/compile_commands.json db)
string(JSON n LENGTH "${db}")
if(n EQUAL 0)
  message(FATAL_ERROR "configure check: compile_commands.json lists no compile commands")
endif()
math(EXPR last "${n} - 1")
set(checked 0)
set(seen "")
foreach(i RANGE ${last})
  string(JSON cmd GET "${db}" ${i} command)
  string(JSON file GET "${db}" ${i} file)
  if(NOT cmd MATCHES "(^| )-I[^ ]*/common/include( |$)")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  if(NOT cmd MATCHES "(^| )-DNWB_TELEMETRY_LEVEL=${NWB_CHECK_LEVEL}( |$)")
    message(FATAL_ERROR "configure check: ${file} compiles without "
      "-DNWB_TELEMETRY_LEVEL=${NWB_CHECK_LEVEL}:\n${cmd}")
  endif()
  if(cmd MATCHES "-DNWB_TELEMETRY_LEVEL=.* -DNWB_TELEMETRY_LEVEL=")
    message(FATAL_ERROR "configure check: ${file} gets NWB_TELEMETRY_LEVEL twice:\n${cmd}")
  endif()
  if(NWB_CHECK_FINAL AND NOT cmd MATCHES "(^| )-DNWB_FINAL=1( |$)")
    message(FATAL_ERROR "configure check: ${file} compiles without -DNWB_FINAL=1:\n${cmd}")
  endif()
  if(NOT NWB_CHECK_FINAL AND cmd MATCHES "-DNWB_FINAL")
    message(FATAL_ERROR "configure check: ${file} gets NWB_FINAL outside fin:\n${cmd}")
  endif()
  file(RELATIVE_PATH rel ${NWB_SOURCE_DIR} ${file})
  list(APPEND seen ${rel})
endforeach()
# Libraries, tools, tests and benchmarks were all among the commands checked.
foreach(f common/src/log.c server/src/main.c client/tools/nwb_log.c tests/client/test_eval.c
    tests/support/test_support.c tests/bench/bench_client_nwb.c)
  if(NOT f IN_LIST seen)
    message(FATAL_ERROR "configure check: no compile command with the nwb include path for ${f}")
  endif()
endforeach()
message(STATUS "configure check: ${checked} of ${n} compile commands see the nwb headers, each "
  "with NWB_TELEMETRY_LEVEL=${NWB_CHECK_LEVEL} and NWB_FINAL=1 ${NWB_CHECK_FINAL}: ok")
