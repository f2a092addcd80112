# cmake/NwbInstall.cmake - installs libraries, headers, tools, a pkg-config
# file and a CMake package so a game can find_package(nwb) and link nwb::client.
include(CMakePackageConfigHelpers)

install(TARGETS nwb_common nwb_client nwb_llhttp
  EXPORT nwbTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS nwb-logserver nwb-log RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY common/include/nwb client/include/nwb DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(EXPORT nwbTargets NAMESPACE nwb:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nwb)
configure_package_config_file(cmake/nwbConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/nwbConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nwb)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/nwbConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/nwbConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/nwbConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nwb)

configure_file(cmake/nwb-client.pc.in ${CMAKE_CURRENT_BINARY_DIR}/nwb-client.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/nwb-client.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
