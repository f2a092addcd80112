# telemetry/demo.cmake - nwb-demo (tools/nwb_demo.c), the small fake game of the README's quick
# start and of tests/telemetry/test_demo_e2e.c: logger client, telemetry recorder and crash
# capture together. Included (OPTIONAL) from telemetry/CMakeLists.txt.
if(TARGET nwb_crash AND TARGET nwb_telemetry_client)
  add_executable(nwb-demo tools/nwb_demo.c)
  target_link_libraries(nwb-demo PRIVATE nwb::telemetry_client nwb::client nwb::crash
    Threads::Threads)
  nwb_target_warnings(nwb-demo)
  # In a build tree nwb-crash is not next to nwb-demo: tell the demo where its uploader is
  # (used only when neither $NWB_CRASH_HELPER nor a neighbouring nwb-crash exists).
  if(TARGET nwb-crash)
    target_compile_definitions(nwb-demo PRIVATE NWB_DEMO_CRASH_HELPER="$<TARGET_FILE:nwb-crash>")
    add_dependencies(nwb-demo nwb-crash)
  endif()
endif()
