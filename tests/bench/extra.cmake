# tests/bench/extra.cmake - benchmarks of the later modules: token decoding (.namesym),
# the log worker's render cost with and without names, crash ingest beside bsdtar, and
# telemetry decode/record costs, and telemetry ingest as a run grows.
add_executable(bench_namesym bench_namesym.c)
target_link_libraries(bench_namesym PRIVATE nwb::common)
nwb_target_warnings(bench_namesym)

# The server's renderer in-process (server/src/server_int.h), like the server unit tests.
add_executable(bench_render bench_render.c)
target_include_directories(bench_render PRIVATE ${PROJECT_SOURCE_DIR}/server/src)
target_link_libraries(bench_render PRIVATE nwb::server_core)
nwb_target_warnings(bench_render)

if(TARGET nwb_crash)
  add_executable(bench_crash_ingest bench_crash_ingest.c)
  target_link_libraries(bench_crash_ingest PRIVATE nwb_bench_util nwb::crash)
  target_compile_definitions(bench_crash_ingest PRIVATE
    NWB_BENCH_SERVER_EXE="$<TARGET_FILE:nwb-logserver>")
  add_dependencies(bench_crash_ingest nwb-logserver)
  nwb_target_warnings(bench_crash_ingest)
endif()

if(TARGET nwb_telemetry)
  add_executable(bench_telemetry bench_telemetry.c)
  target_link_libraries(bench_telemetry PRIVATE nwb_bench_util nwb::telemetry)
  nwb_target_warnings(bench_telemetry)
endif()

# Telemetry ingest as a run grows: a real nwb-logserver, the same segment uploaded N times.
if(TARGET nwb_telemetry)
  add_executable(bench_tel_ingest bench_tel_ingest.c)
  target_link_libraries(bench_tel_ingest PRIVATE nwb_bench_util nwb::telemetry PkgConfig::ZSTD)
  target_compile_definitions(bench_tel_ingest PRIVATE
    NWB_BENCH_SERVER_EXE="$<TARGET_FILE:nwb-logserver>")
  add_dependencies(bench_tel_ingest nwb-logserver)
  nwb_target_warnings(bench_tel_ingest)
endif()

# The cost of --forward-clickhouse against a real clickhouse-server (bench_forward.c): it
# starts one with the tests' helper, compiled in here (the bench build has no test targets).
add_executable(bench_forward bench_forward.c bench_forward_load.c
  ${PROJECT_SOURCE_DIR}/tests/support/clickhouse_server.c
  ${PROJECT_SOURCE_DIR}/tests/support/test_support.c)
target_include_directories(bench_forward PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
target_link_libraries(bench_forward PRIVATE nwb_bench_util nwb::common Threads::Threads)
target_compile_definitions(bench_forward PRIVATE
  NWB_BENCH_SERVER_EXE="$<TARGET_FILE:nwb-logserver>"
  NWB_TEST_SERVER_EXE="$<TARGET_FILE:nwb-logserver>")
add_dependencies(bench_forward nwb-logserver)
nwb_target_warnings(bench_forward)
