# cmake/NwbLlhttp.cmake - builds llhttp from Debian's node-llhttp sources into
# the static library nwb_llhttp. The sources are never copied into the repo.
set(NWB_LLHTTP_SRC_DIR "/usr/share/llhttp" CACHE PATH "llhttp generated C sources (Debian node-llhttp)")
set(NWB_LLHTTP_INCLUDE_DIR "/usr/share/include/llhttp" CACHE PATH "llhttp.h (Debian node-llhttp)")

foreach(f api.c http.c llhttp.c)
  if(NOT EXISTS "${NWB_LLHTTP_SRC_DIR}/${f}")
    message(FATAL_ERROR
      "llhttp source ${NWB_LLHTTP_SRC_DIR}/${f} not found. "
      "Install the Debian package 'node-llhttp' (apt-get install -y node-llhttp), "
      "or point NWB_LLHTTP_SRC_DIR at llhttp's generated C sources.")
  endif()
endforeach()
if(NOT EXISTS "${NWB_LLHTTP_INCLUDE_DIR}/llhttp.h")
  message(FATAL_ERROR
    "llhttp.h not found in ${NWB_LLHTTP_INCLUDE_DIR}. "
    "Install the Debian package 'node-llhttp' (apt-get install -y node-llhttp).")
endif()

add_library(nwb_llhttp STATIC
  ${NWB_LLHTTP_SRC_DIR}/api.c
  ${NWB_LLHTTP_SRC_DIR}/http.c
  ${NWB_LLHTTP_SRC_DIR}/llhttp.c)
target_include_directories(nwb_llhttp SYSTEM PUBLIC
  $<BUILD_INTERFACE:${NWB_LLHTTP_INCLUDE_DIR}>)
# Generated third-party code: its own quiet warning set (docs/building.md, "llhttp").
target_compile_options(nwb_llhttp PRIVATE -w)
set_target_properties(nwb_llhttp PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
add_library(nwb::llhttp ALIAS nwb_llhttp)
