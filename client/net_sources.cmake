# client/net_sources.cmake - the client's network side: the HTTP output, its
# request/response codec, the spool, the start-up probe and the server launcher.
set(NWB_CLIENT_NET_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/src/http_out.c
  ${CMAKE_CURRENT_SOURCE_DIR}/src/net_http.c
  ${CMAKE_CURRENT_SOURCE_DIR}/src/net_util.c
  ${CMAKE_CURRENT_SOURCE_DIR}/src/spool.c
  ${CMAKE_CURRENT_SOURCE_DIR}/src/probe.c
  ${CMAKE_CURRENT_SOURCE_DIR}/src/launcher.c)
