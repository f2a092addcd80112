# tests/install/run_install_test.cmake - the install.consumer test (cmake -P): installs the build
# tree into a scratch prefix, checks the installed layout, builds tests/install/consumer with
# find_package(nwb) and main.c alone with `cc $(pkg-config --cflags --libs nwb-client)`, and
# runs both (each logs a line in standalone mode and finds it in its log directory). Both must
# compile with the build's NWB_TELEMETRY_LEVEL and NWB_FINAL (the package's interface
# definitions, the .pc file's Cflags): each prints what it saw, compared here with the build's.
# Inputs (-D): NWB_BUILD_DIR, NWB_SOURCE_DIR, NWB_WORK_DIR, NWB_C_COMPILER, NWB_LIBDIR,
#              NWB_INCLUDEDIR, NWB_BINDIR, NWB_SHARED, NWB_EXPECT_FINAL (0/1),
#              NWB_EXPECT_TELEMETRY_LEVEL (0/1/2).
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/NwbRequireDefined.cmake)
nwb_require_defined(run_install_test.cmake NWB_BUILD_DIR NWB_SOURCE_DIR NWB_WORK_DIR
  NWB_C_COMPILER NWB_LIBDIR NWB_INCLUDEDIR NWB_BINDIR NWB_EXPECT_FINAL NWB_EXPECT_TELEMETRY_LEVEL)

set(prefix ${NWB_WORK_DIR}/prefix)
set(consumer_src ${NWB_SOURCE_DIR}/tests/install/consumer)
# Each step is bounded; together they stay well under the test's TIMEOUT.
set(step_timeout 45)

# run(<what> COMMAND...) runs a command, fails the test with its output when it fails.
function(run what)
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT ${step_timeout})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "install test: ${what}: ok")
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

# expect_in(<what> <text> <needle>) fails the test unless <text> contains <needle>.
function(expect_in what text needle)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "install test: ${what}: \"${needle}\" not found in:\n${text}")
  endif()
  message(STATUS "install test: ${what}: ok")
endfunction()

# What the consumers must print, and what the package must report.
set(want_facts
  "NWB_TELEMETRY_LEVEL=${NWB_EXPECT_TELEMETRY_LEVEL} NWB_IS_FINAL=${NWB_EXPECT_FINAL}")
if(NWB_EXPECT_FINAL)
  set(want_package_final ON)
else()
  set(want_package_final OFF)
endif()

file(REMOVE_RECURSE ${NWB_WORK_DIR})
file(MAKE_DIRECTORY ${NWB_WORK_DIR}/logs-cmake ${NWB_WORK_DIR}/logs-pkgconfig)

run("cmake --install" ${CMAKE_COMMAND} --install ${NWB_BUILD_DIR} --prefix ${prefix})

if(NWB_SHARED)
  set(libs libnwb_client.so libnwb_common.so libnwb_llhttp.a)
else()
  set(libs libnwb_client.a libnwb_common.a libnwb_llhttp.a)
endif()
list(TRANSFORM libs PREPEND ${NWB_LIBDIR}/)
foreach(f ${libs}
    ${NWB_INCLUDEDIR}/nwb/client.h ${NWB_INCLUDEDIR}/nwb/log.h ${NWB_INCLUDEDIR}/nwb/common.h
    ${NWB_BINDIR}/nwb-logserver ${NWB_BINDIR}/nwb-log
    ${NWB_LIBDIR}/pkgconfig/nwb-client.pc
    ${NWB_LIBDIR}/cmake/nwb/nwbConfig.cmake ${NWB_LIBDIR}/cmake/nwb/nwbConfigVersion.cmake
    ${NWB_LIBDIR}/cmake/nwb/nwbTargets.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install test: ${f} is not installed under ${prefix}")
  endif()
endforeach()
message(STATUS "install test: installed layout: ok")

# The installed server starts from the prefix (shared builds: its RPATH finds the libraries).
run("installed nwb-logserver --version" ${prefix}/${NWB_BINDIR}/nwb-logserver --version)

# 1. find_package(nwb) + nwb::client, the way a game's CMake build consumes it.
run("configure the find_package consumer" ${CMAKE_COMMAND} -S ${consumer_src}
  -B ${NWB_WORK_DIR}/consumer-build -DCMAKE_C_COMPILER=${NWB_C_COMPILER}
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
expect_in("find_package(nwb) reports the build facts" "${run_out}"
  "nwb_TELEMETRY_LEVEL=${NWB_EXPECT_TELEMETRY_LEVEL} nwb_FINAL=${want_package_final}")
run("build the find_package consumer" ${CMAKE_COMMAND} --build ${NWB_WORK_DIR}/consumer-build)
run("run the find_package consumer" ${NWB_WORK_DIR}/consumer-build/nwb_consumer
  ${NWB_WORK_DIR}/logs-cmake --no-logserver)
message(STATUS "${run_out}")
expect_in("the find_package consumer compiled with ${want_facts}" "${run_out}" "${want_facts}")

# 2. pkg-config nwb-client from the prefix, compiled with the C compiler directly.
set(ENV{PKG_CONFIG_PATH} ${prefix}/${NWB_LIBDIR}/pkgconfig)
unset(ENV{PKG_CONFIG_LIBDIR})
find_program(pkg_config NAMES pkg-config pkgconf REQUIRED)
run("pkg-config --cflags --libs nwb-client" ${pkg_config} --cflags --libs nwb-client)
string(STRIP "${run_out}" pc_flags)
message(STATUS "install test: pkg-config flags: ${pc_flags}")
expect_in("nwb-client.pc carries the telemetry level" " ${pc_flags} "
  " -DNWB_TELEMETRY_LEVEL=${NWB_EXPECT_TELEMETRY_LEVEL} ")
string(FIND " ${pc_flags} " " -DNWB_FINAL=1 " pc_final_at)
if(NWB_EXPECT_FINAL AND pc_final_at EQUAL -1)
  message(FATAL_ERROR "install test: a fin build's nwb-client.pc lacks -DNWB_FINAL=1: ${pc_flags}")
elseif(NOT NWB_EXPECT_FINAL AND NOT pc_final_at EQUAL -1)
  message(FATAL_ERROR "install test: a non-fin build's nwb-client.pc has -DNWB_FINAL=1")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run("cc main.c $(pkg-config --cflags --libs nwb-client)" ${NWB_C_COMPILER} -Wall -Wextra -Werror
  ${consumer_src}/main.c ${pc_flags} -o ${NWB_WORK_DIR}/nwb_consumer_pc)
if(NWB_SHARED)
  set(ENV{LD_LIBRARY_PATH} ${prefix}/${NWB_LIBDIR})
endif()
run("run the pkg-config consumer" ${NWB_WORK_DIR}/nwb_consumer_pc
  ${NWB_WORK_DIR}/logs-pkgconfig --no-logserver)
message(STATUS "${run_out}")
expect_in("the pkg-config consumer compiled with ${want_facts}" "${run_out}" "${want_facts}")
