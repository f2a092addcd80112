# tests/telemetry/demo.cmake - nwb-demo end to end (test_demo_e2e.c), included (OPTIONAL) from
# tests/telemetry/CMakeLists.txt. One binary, three CTest entries (argv[1] picks the group):
#   telemetry.demo_e2e         against the real nwb-logserver: report and log, and a --crash
#                              package uploaded through nwb-crash; both routes exist, so a 404
#                              or any failed upload fails the test (it never skips)
#   telemetry.demo_standalone  --no-logserver: log.txt, telemetry.nwbs, `nwb-telemetry report`
#   telemetry.demo_crash       --crash segv|abort|stack|gpu and the packages they leave
if(TARGET nwb-demo AND TARGET nwb-telemetry AND TARGET nwb-crash)
  nwb_add_test(telemetry demo_e2e integration nwb::common nwb::crash)
  target_include_directories(test_telemetry_demo_e2e PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(test_telemetry_demo_e2e PRIVATE
    NWB_DEMO_EXE="$<TARGET_FILE:nwb-demo>"
    NWB_TELEMETRY_EXE="$<TARGET_FILE:nwb-telemetry>"
    NWB_DEMO_CRASH_HELPER_EXE="$<TARGET_FILE:nwb-crash>")
  add_dependencies(test_telemetry_demo_e2e nwb-demo nwb-telemetry nwb-crash)

  add_test(NAME telemetry.demo_standalone COMMAND test_telemetry_demo_e2e standalone)
  add_test(NAME telemetry.demo_crash COMMAND test_telemetry_demo_e2e crash)
  set_tests_properties(telemetry.demo_standalone telemetry.demo_crash PROPERTIES
    LABELS integration TIMEOUT 120)
endif()
