# tests/install/run_install_test.cmake - the install.consumer test (cmake -P): installs the build
# tree into a scratch prefix, checks the installed layout, builds tests/install/consumer with
# find_package(nwb) and main.c alone with `cc $(pkg-config --cflags --libs nwb-client)`, and
# runs both (each logs a line in standalone mode and finds it in its log directory).
# Inputs (-D): NWB_BUILD_DIR, NWB_SOURCE_DIR, NWB_WORK_DIR, NWB_C_COMPILER, NWB_LIBDIR,
#              NWB_INCLUDEDIR, NWB_BINDIR, NWB_SHARED.
cmake_minimum_required(VERSION 3.20)

foreach(v NWB_BUILD_DIR NWB_SOURCE_DIR NWB_WORK_DIR NWB_C_COMPILER NWB_LIBDIR NWB_INCLUDEDIR
    NWB_BINDIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_install_test.cmake: -D${v}=... is required")
  endif()
endforeach()

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
run("build the find_package consumer" ${CMAKE_COMMAND} --build ${NWB_WORK_DIR}/consumer-build)
run("run the find_package consumer" ${NWB_WORK_DIR}/consumer-build/nwb_consumer
  ${NWB_WORK_DIR}/logs-cmake --no-logserver)
message(STATUS "${run_out}")

# 2. pkg-config nwb-client from the prefix, compiled with the C compiler directly.
set(ENV{PKG_CONFIG_PATH} ${prefix}/${NWB_LIBDIR}/pkgconfig)
unset(ENV{PKG_CONFIG_LIBDIR})
find_program(pkg_config NAMES pkg-config pkgconf REQUIRED)
run("pkg-config --cflags --libs nwb-client" ${pkg_config} --cflags --libs nwb-client)
string(STRIP "${run_out}" pc_flags)
message(STATUS "install test: pkg-config flags: ${pc_flags}")
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run("cc main.c $(pkg-config --cflags --libs nwb-client)" ${NWB_C_COMPILER} -Wall -Wextra -Werror
  ${consumer_src}/main.c ${pc_flags} -o ${NWB_WORK_DIR}/nwb_consumer_pc)
if(NWB_SHARED)
  set(ENV{LD_LIBRARY_PATH} ${prefix}/${NWB_LIBDIR})
endif()
run("run the pkg-config consumer" ${NWB_WORK_DIR}/nwb_consumer_pc
  ${NWB_WORK_DIR}/logs-pkgconfig --no-logserver)
message(STATUS "${run_out}")
