# cmake/NwbInstall.cmake - installs the libraries a game links (client; crash and telemetry where
# built), their headers, nwb-logserver and the tools, a relocatable pkg-config file
# (nwb-client.pc) and a CMake package, so a game can find_package(nwb) and link nwb::client. Included at the end of the top-level CMakeLists.txt.
include(CMakePackageConfigHelpers)

set(NWB_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/nwb)

# nwb_install_closure(<out> <target>...) - the targets and every nwb library they link,
# directly or not, in static link order (libraries others depend on last: common, llhttp).
function(nwb_install_closure out)
  set(done "")
  set(pending ${ARGN})
  while(pending)
    list(POP_FRONT pending t)
    get_target_property(real ${t} ALIASED_TARGET)
    if(real)
      set(t ${real})
    endif()
    get_target_property(imported ${t} IMPORTED)
    if(imported OR t IN_LIST done)
      continue()
    endif()
    list(APPEND done ${t})
    get_target_property(libs ${t} LINK_LIBRARIES)
    if(libs)
      foreach(lib IN LISTS libs)
        string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
        if(TARGET ${lib})
          list(APPEND pending ${lib})
        endif()
      endforeach()
    endif()
  endwhile()
  foreach(t nwb_common nwb_llhttp)
    if(t IN_LIST done)
      list(REMOVE_ITEM done ${t})
      list(APPEND done ${t})
    endif()
  endforeach()
  set(${out} ${done} PARENT_SCOPE)
endfunction()

# What a game links: the client, and where they are built the crash capture and telemetry
# libraries. The CMake package exports them and everything they link; nwb-client.pc covers
# nwb_client and what it links.
set(nwb_game_libs nwb_client)
foreach(t nwb_crash nwb_telemetry nwb_telemetry_client)
  if(TARGET ${t})
    list(APPEND nwb_game_libs ${t})
  endif()
endforeach()
nwb_install_closure(nwb_exported ${nwb_game_libs})
nwb_install_closure(nwb_pc_closure nwb_client)
# Exported names drop the prefix: nwb::client, nwb::common, nwb::llhttp (as the in-tree aliases).
foreach(t IN LISTS nwb_exported)
  string(REGEX REPLACE "^nwb_" "" name ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${name})
endforeach()
message(STATUS "nwb install: exporting ${nwb_exported}")

# A sanitized build's static libraries need the sanitizer runtime in whatever links them.
set(nwb_pc_link_flags "")
if(NWB_SANITIZE)
  list(JOIN NWB_SANITIZE "," nwb_install_san)
  target_link_options(nwb_common INTERFACE $<INSTALL_INTERFACE:-fsanitize=${nwb_install_san}>)
  string(APPEND nwb_pc_link_flags " -fsanitize=${nwb_install_san}")
endif()

# Third-party libraries the exported targets link: imported pkg-config targets (recreated by
# the package config and required by the .pc file), Threads, and plain system libraries (-lm).
# nwb_install_deps(<prefix> <target>...) sets <prefix>_pkg (PREFIX:module pairs),
# <prefix>_threads and <prefix>_syslibs.
function(nwb_install_deps prefix)
  set(pkg "")
  set(threads OFF)
  set(syslibs "")
  foreach(t ${ARGN})
    get_target_property(libs ${t} LINK_LIBRARIES)
    get_target_property(ilibs ${t} INTERFACE_LINK_LIBRARIES)
    foreach(lib IN LISTS libs ilibs)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
      if(lib MATCHES "^PkgConfig::(LIBUV|ZSTD|LIBARCHIVE)$")
        set(p ${CMAKE_MATCH_1})
        string(REPLACE "LIBUV" "libuv" m ${p})
        string(REPLACE "ZSTD" "libzstd" m ${m})
        string(REPLACE "LIBARCHIVE" "libarchive" m ${m})
        list(APPEND pkg "${p}:${m}")
      elseif(lib STREQUAL "Threads::Threads")
        set(threads ON)
      elseif(lib MATCHES "^[A-Za-z0-9_+.-]+$" AND NOT TARGET ${lib} AND NOT lib MATCHES "NOTFOUND")
        list(APPEND syslibs ${lib})
      endif()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES pkg)
  list(REMOVE_DUPLICATES syslibs)
  set(${prefix}_pkg "${pkg}" PARENT_SCOPE)
  set(${prefix}_threads ${threads} PARENT_SCOPE)
  set(${prefix}_syslibs "${syslibs}" PARENT_SCOPE)
endfunction()
nwb_install_deps(nwb_cfg ${nwb_exported})
nwb_install_deps(nwb_pc ${nwb_pc_closure})

# find_package(nwb COMPONENTS client crash ...) checks these.
set(NWB_CONFIG_COMPONENTS "")
foreach(t IN LISTS nwb_exported)
  string(REGEX REPLACE "^nwb_" "" name ${t})
  string(APPEND NWB_CONFIG_COMPONENTS "set(nwb_${name}_FOUND TRUE)\n")
endforeach()

set(NWB_CONFIG_DEPENDENCIES "")
if(nwb_cfg_threads)
  string(APPEND NWB_CONFIG_DEPENDENCIES "find_dependency(Threads)\n")
endif()
if(nwb_cfg_pkg)
  string(APPEND NWB_CONFIG_DEPENDENCIES "find_dependency(PkgConfig)\n")
endif()
foreach(dep IN LISTS nwb_cfg_pkg)
  string(REPLACE ":" ";" dep "${dep}")
  list(GET dep 0 prefix)
  list(GET dep 1 module)
  string(APPEND NWB_CONFIG_DEPENDENCIES
    "if(NOT TARGET PkgConfig::${prefix})\n"
    "  pkg_check_modules(${prefix} REQUIRED IMPORTED_TARGET ${module})\n"
    "endif()\n")
endforeach()

set(nwb_pc_modules "")
foreach(dep IN LISTS nwb_pc_pkg)
  string(REPLACE ":" ";" dep "${dep}")
  list(GET dep 1 module)
  list(APPEND nwb_pc_modules ${module})
endforeach()
list(JOIN nwb_pc_modules " " nwb_pc_modules)
foreach(lib IN LISTS nwb_pc_syslibs)
  string(APPEND nwb_pc_link_flags " -l${lib}")
endforeach()
if(nwb_pc_threads)
  string(APPEND nwb_pc_link_flags " -pthread")
endif()

# Static archives need their dependencies on every link; shared ones only privately.
set(nwb_pc_libs "")
set(nwb_pc_static_libs "")
foreach(t IN LISTS nwb_pc_closure)
  get_target_property(type ${t} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    string(APPEND nwb_pc_libs " -l${t}")
  else()
    string(APPEND nwb_pc_static_libs " -l${t}")
  endif()
endforeach()
if(NWB_BUILD_SHARED)
  set(NWB_PC_LIBS "-L\${libdir}${nwb_pc_libs}")
  set(NWB_PC_LIBS_PRIVATE "Libs.private:${nwb_pc_static_libs}${nwb_pc_link_flags}")
  set(NWB_PC_REQUIRES "")
  if(nwb_pc_modules)
    set(NWB_PC_REQUIRES "Requires.private: ${nwb_pc_modules}")
  endif()
else()
  set(NWB_PC_LIBS "-L\${libdir}${nwb_pc_libs}${nwb_pc_static_libs}${nwb_pc_link_flags}")
  set(NWB_PC_LIBS_PRIVATE "")
  set(NWB_PC_REQUIRES "")
  if(nwb_pc_modules)
    set(NWB_PC_REQUIRES "Requires: ${nwb_pc_modules}")
  endif()
endif()

# The .pc file's Cflags carry the interface compile definitions of what it covers (nwb_common's
# NWB_TELEMETRY_LEVEL and, in fin, NWB_FINAL), read from the targets so they cannot drift from
# what the CMake package exports. Only plain NAME or NAME=value with a word value fit a .pc line.
set(NWB_PC_CFLAGS "")
foreach(t IN LISTS nwb_pc_closure)
  get_target_property(defs ${t} INTERFACE_COMPILE_DEFINITIONS)
  if(NOT defs)
    continue()
  endif()
  foreach(def IN LISTS defs)
    if(NOT def MATCHES "^[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_]*)?$")
      message(FATAL_ERROR "NwbInstall: ${t}'s interface definition '${def}' cannot be written "
        "to nwb-client.pc (plain NAME or NAME=word only)")
    endif()
    string(APPEND NWB_PC_CFLAGS " -D${def}")
  endforeach()
endforeach()

# What find_package(nwb) reports besides the targets (which carry the definitions themselves).
set(NWB_CONFIG_BUILD_FACTS
  "set(nwb_BUILD_CONFIG \"${NWB_CONFIG_NAME}\")\n"
  "set(nwb_TELEMETRY \"${nwb_telemetry_uc}\")\n"
  "set(nwb_TELEMETRY_LEVEL ${NWB_TELEMETRY_LEVEL})\n"
  "set(nwb_FINAL ${nwb_final})")
string(JOIN "" NWB_CONFIG_BUILD_FACTS ${NWB_CONFIG_BUILD_FACTS})

# The .pc file finds its prefix from its own location (pkgconf's ${pcfiledir}), so it stays
# right for `cmake --install --prefix` and DESTDIR.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "NwbInstall: CMAKE_INSTALL_LIBDIR must be relative to the prefix")
endif()
file(RELATIVE_PATH NWB_PC_PREFIX_FROM_PCDIR
  "/nwb-prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/nwb-prefix")
string(REGEX REPLACE "/$" "" NWB_PC_PREFIX_FROM_PCDIR "${NWB_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/nwb-client.pc.in
  ${PROJECT_BINARY_DIR}/nwb-client.pc @ONLY)

# Installed executables and libraries find shared nwb libraries without LD_LIBRARY_PATH.
if(NWB_BUILD_SHARED)
  file(RELATIVE_PATH nwb_bin_to_lib "/nwb-prefix/${CMAKE_INSTALL_BINDIR}"
    "/nwb-prefix/${CMAKE_INSTALL_LIBDIR}")
  set_target_properties(${nwb_exported} PROPERTIES INSTALL_RPATH "\$ORIGIN")
endif()

install(TARGETS ${nwb_exported}
  EXPORT nwbTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The server, the client tool, and the other tools where they exist.
foreach(exe nwb-logserver nwb-symbolize nwb-log nwb-namesym nwb-crash nwb-telemetry)
  if(TARGET ${exe})
    if(NWB_BUILD_SHARED)
      set_target_properties(${exe} PROPERTIES INSTALL_RPATH "\$ORIGIN/${nwb_bin_to_lib}")
    endif()
    install(TARGETS ${exe} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
# With -DNWB_BUILD_SHARED=ON the executables also load the other nwb libraries.
if(NWB_BUILD_SHARED)
  foreach(lib nwb_server_core nwb_crash nwb_telemetry)
    if(TARGET ${lib} AND NOT lib IN_LIST nwb_exported)
      get_target_property(type ${lib} TYPE)
      if(type STREQUAL "SHARED_LIBRARY")
        install(TARGETS ${lib} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
      endif()
    endif()
  endforeach()
endif()
# The public headers of every exported module (<module>/include/nwb/*.h).
foreach(t IN LISTS nwb_exported)
  get_target_property(dir ${t} SOURCE_DIR)
  if(EXISTS ${dir}/include/nwb)
    install(DIRECTORY ${dir}/include/nwb DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
      FILES_MATCHING PATTERN "*.h")
  endif()
endforeach()

install(EXPORT nwbTargets NAMESPACE nwb:: DESTINATION ${NWB_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nwbConfig.cmake.in
  ${PROJECT_BINARY_DIR}/nwbConfig.cmake
  INSTALL_DESTINATION ${NWB_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nwbConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nwbConfig.cmake ${PROJECT_BINARY_DIR}/nwbConfigVersion.cmake
  DESTINATION ${NWB_INSTALL_CMAKEDIR})
install(FILES ${PROJECT_BINARY_DIR}/nwb-client.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
