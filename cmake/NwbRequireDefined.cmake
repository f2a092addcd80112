# cmake/NwbRequireDefined.cmake - for the cmake -P scripts (asset embedding, install and configure
# tests): stop with a message naming the script and the missing -D input.
# nwb_require_defined(<script name> <variable>...)
function(nwb_require_defined script)
  foreach(var IN LISTS ARGN)
    if(NOT DEFINED ${var})
      message(FATAL_ERROR "${script}: -D${var}=... is required")
    endif()
  endforeach()
endfunction()
