# tests/bench/extra.cmake - benchmarks of the later modules: token decoding (.namesym),
# crash ingest beside bsdtar, and telemetry decode/record costs.
add_executable(bench_namesym bench_namesym.c)
target_link_libraries(bench_namesym PRIVATE nwb::common)
nwb_target_warnings(bench_namesym)

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
