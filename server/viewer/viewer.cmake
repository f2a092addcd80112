# server/viewer/viewer.cmake - included by server/CMakeLists.txt: embeds the web viewer into
# nwb_server_core. At build time vendor.cmake checks server/viewer/node_modules against the
# lockfile and copies uPlot's files into the build folder, then cmake/NwbEmbedAssets.cmake
# turns every file of assets.cmake into viewer_assets.c (byte arrays + a table) that
# viewer_endpoint.c serves. docs/viewer.md, "Build and embedding".
option(NWB_BUILD_VIEWER
  "Embed the web viewer in nwb-logserver (needs server/viewer/node_modules: scripts/install-deps viewer)"
  ON)

include(${CMAKE_CURRENT_LIST_DIR}/assets.cmake)
set(nwb_viewer_dir ${CMAKE_CURRENT_LIST_DIR})
set(nwb_viewer_gen ${CMAKE_CURRENT_BINARY_DIR}/viewer)
set(nwb_viewer_c ${nwb_viewer_gen}/viewer_assets.c)
set(nwb_viewer_list ${nwb_viewer_gen}/assets.txt)
set(nwb_viewer_embed ${PROJECT_SOURCE_DIR}/cmake/NwbEmbedAssets.cmake)

set(nwb_viewer_lines "")
set(nwb_viewer_own_files "")
set(nwb_viewer_vendor_files "")
if(NWB_BUILD_VIEWER)
  # At configure time too, so a missing npm ci fails here with the command that fixes it.
  execute_process(COMMAND ${CMAKE_COMMAND} -DNWB_VIEWER_DIR=${nwb_viewer_dir}
    -DNWB_VIEWER_CHECK_ONLY=ON -P ${nwb_viewer_dir}/vendor.cmake RESULT_VARIABLE nwb_viewer_rc)
  if(NOT nwb_viewer_rc EQUAL 0)
    message(FATAL_ERROR "The web viewer cannot be built (see above): run "
      "${NWB_VIEWER_FIX_COMMAND}, or configure with -DNWB_BUILD_VIEWER=OFF for a server "
      "without it.")
  endif()
  foreach(name IN LISTS NWB_VIEWER_OWN_ASSETS)
    list(APPEND nwb_viewer_own_files ${nwb_viewer_dir}/src/${name})
    string(APPEND nwb_viewer_lines "${name}|${nwb_viewer_dir}/src/${name}\n")
  endforeach()
  foreach(entry IN LISTS NWB_VIEWER_VENDOR_ASSETS)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 2 name)
    list(APPEND nwb_viewer_vendor_files ${nwb_viewer_gen}/vendor/${name})
    string(APPEND nwb_viewer_lines "${name}|${nwb_viewer_gen}/vendor/${name}\n")
  endforeach()
  add_custom_target(nwb_viewer_vendor
    COMMAND ${CMAKE_COMMAND} -DNWB_VIEWER_DIR=${nwb_viewer_dir}
      -DNWB_VIEWER_VENDOR_OUT=${nwb_viewer_gen}/vendor -P ${nwb_viewer_dir}/vendor.cmake
    BYPRODUCTS ${nwb_viewer_vendor_files}
    COMMENT "Checking server/viewer/node_modules against package-lock.json"
    VERBATIM)
  add_dependencies(nwb_server_core nwb_viewer_vendor)
endif()
# Rewritten only when the list changes (a reconfigure embeds nothing again by itself).
file(GENERATE OUTPUT ${nwb_viewer_list} CONTENT "${nwb_viewer_lines}")

add_custom_command(OUTPUT ${nwb_viewer_c}
  COMMAND ${CMAKE_COMMAND} -DNWB_EMBED_LIST=${nwb_viewer_list} -DNWB_EMBED_OUT=${nwb_viewer_c}
    -DNWB_EMBED_HEADER=viewer_int.h -DNWB_EMBED_STRUCT=nwb__viewer_asset
    -DNWB_EMBED_SYMBOL=nwb__viewer_assets -P ${nwb_viewer_embed}
  DEPENDS ${nwb_viewer_own_files} ${nwb_viewer_vendor_files} ${nwb_viewer_list}
    ${nwb_viewer_embed}
  COMMENT "Embedding the web viewer's assets"
  VERBATIM)
target_sources(nwb_server_core PRIVATE ${nwb_viewer_c})
target_include_directories(nwb_server_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
