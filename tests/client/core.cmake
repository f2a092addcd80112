# tests/client/core.cmake - tests of the client core: macros, evaluation counts, the compile-time
# format check, rings and drop/block policy, the worker, the standalone file output,
# configuration and the client's lifecycle. Included from tests/client/CMakeLists.txt.

set(nwb_core_tests macros eval ring worker standalone config lifecycle clock capture)
foreach(name IN LISTS nwb_core_tests)
  nwb_add_test(client ${name} unit nwb::client_internal)
  # The tests reach the core's private header (client_core.h) and its test hooks.
  target_include_directories(test_client_${name} PRIVATE ${PROJECT_SOURCE_DIR}/client/src)
endforeach()

# The same evaluation-count source built with NWB_FINAL: INFO/WARNING/ERROR compile out.
add_executable(test_client_eval_fin ${CMAKE_CURRENT_SOURCE_DIR}/test_eval.c)
target_link_libraries(test_client_eval_fin PRIVATE nwb::client_internal nwb_test_support
  PkgConfig::CMOCKA)
target_include_directories(test_client_eval_fin PRIVATE ${PROJECT_SOURCE_DIR}/client/src)
target_compile_definitions(test_client_eval_fin PRIVATE NWB_TEST_WANT_FINAL=1 ${NWB_TEST_DEFS})
nwb_target_warnings(test_client_eval_fin)
add_test(NAME client.eval_fin COMMAND test_client_eval_fin)
set_tests_properties(client.eval_fin PROPERTIES LABELS unit TIMEOUT 120)

# Compile-time format checking: a mismatched format must fail to compile with a format
# diagnostic under the project's flags (in normal and in fin builds, where the call compiles
# out but is still type-checked); a control file of correct calls must compile.
set(nwb_format_flags -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wformat=2 -Werror
  -I${PROJECT_SOURCE_DIR}/common/include -fsyntax-only)
add_test(NAME client.format_mismatch_fails
  COMMAND ${CMAKE_C_COMPILER} ${nwb_format_flags} -UNWB_FINAL
          ${CMAKE_CURRENT_SOURCE_DIR}/test_format_mismatch.c)
add_test(NAME client.format_mismatch_fails_fin
  COMMAND ${CMAKE_C_COMPILER} ${nwb_format_flags} -DNWB_FINAL=1
          ${CMAKE_CURRENT_SOURCE_DIR}/test_format_mismatch.c)
# gcc: "[-Werror=format=]"; clang: "[-Werror,-Wformat]". A failure for any other reason (a
# missing header, say) does not match, so the test cannot pass by accident.
set_tests_properties(client.format_mismatch_fails client.format_mismatch_fails_fin PROPERTIES
  LABELS unit TIMEOUT 60 PASS_REGULAR_EXPRESSION "-Werror[=,](-W)?format")
add_test(NAME client.format_control_compiles
  COMMAND ${CMAKE_C_COMPILER} ${nwb_format_flags} -UNWB_FINAL
          ${CMAKE_CURRENT_SOURCE_DIR}/test_format_control.c)
add_test(NAME client.format_control_compiles_fin
  COMMAND ${CMAKE_C_COMPILER} ${nwb_format_flags} -DNWB_FINAL=1
          ${CMAKE_CURRENT_SOURCE_DIR}/test_format_control.c)
set_tests_properties(client.format_control_compiles client.format_control_compiles_fin
  PROPERTIES LABELS unit TIMEOUT 60)

# The worker's exact %f fast path against glibc's snprintf (client_fmt_float.h); libm for
# fesetround/nextafter. NWB_TEST_FMTF_N=N runs N random values instead of the default.
nwb_add_test(client fmt_float unit nwb::client_internal m)
target_include_directories(test_client_fmt_float PRIVATE ${PROJECT_SOURCE_DIR}/client/src)

# Label "threads": tests whose point includes concurrency (the worker thread, producers on
# several threads, destroy while logging); scripts/test also runs them under ThreadSanitizer.
set_property(TEST client.worker client.lifecycle client.ring client.standalone client.config
  client.macros APPEND PROPERTY LABELS threads)
