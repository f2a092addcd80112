# tests/client/net.cmake - unit tests of the client's network side: the HTTP
# output against a scripted loopback responder, the spool files, the probe and
# launcher (with fake servers and the real nwb-logserver), and the nwb-log tool.
add_library(nwb_test_responder STATIC ${CMAKE_CURRENT_SOURCE_DIR}/test_http_out_responder.c)
target_link_libraries(nwb_test_responder PUBLIC nwb_test_support nwb::common Threads::Threads)
target_include_directories(nwb_test_responder PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
nwb_target_warnings(nwb_test_responder)

foreach(name http_out spool launcher)
  nwb_add_test(client ${name} unit nwb::client_internal nwb::llhttp nwb_test_responder)
  target_include_directories(test_client_${name} PRIVATE ${PROJECT_SOURCE_DIR}/client/src)
endforeach()

nwb_add_test(client nwb_log unit nwb::client_internal nwb::llhttp nwb_test_responder)
target_include_directories(test_client_nwb_log PRIVATE ${PROJECT_SOURCE_DIR}/client/src)
target_compile_definitions(test_client_nwb_log PRIVATE NWB_TEST_NWB_LOG_EXE="$<TARGET_FILE:nwb-log>")
add_dependencies(test_client_nwb_log nwb-log)

# Label "threads": the client's worker against a responder thread (run under ThreadSanitizer).
set_property(TEST client.http_out client.launcher client.nwb_log APPEND PROPERTY LABELS threads)
