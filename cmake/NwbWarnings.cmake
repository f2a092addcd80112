# cmake/NwbWarnings.cmake - the project warning set, applied per target (docs/building.md).
function(nwb_target_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wpointer-arith -Wcast-qual -Wcast-align -Wformat=2 -Wundef -Wvla
    -Wwrite-strings -Wredundant-decls
    -Werror=implicit-function-declaration
    -Werror=incompatible-pointer-types
    -Werror=format)
  if(NWB_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
