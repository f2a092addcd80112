# server/viewer/vendor.cmake - script mode (cmake -P), run on every build before the viewer's
# assets are embedded: checks that server/viewer/node_modules holds the packages the lockfile
# pins, at the lockfile's versions, and copies the third-party assets of assets.cmake into the
# build folder (only when their bytes changed, so nothing is embedded again needlessly).
# With -DNWB_VIEWER_CHECK_ONLY=ON it only checks (configure time, from viewer.cmake).
#
#   cmake -DNWB_VIEWER_DIR=<server/viewer> -DNWB_VIEWER_VENDOR_OUT=<dir> -P vendor.cmake
cmake_minimum_required(VERSION 3.20)

include("${CMAKE_CURRENT_LIST_DIR}/assets.cmake")

set(modules "${NWB_VIEWER_DIR}/node_modules")
set(lockfile "${NWB_VIEWER_DIR}/package-lock.json")
file(READ "${lockfile}" lock)
foreach(pkg IN LISTS NWB_VIEWER_VENDOR_PACKAGES)
  string(JSON want ERROR_VARIABLE err GET "${lock}" packages "node_modules/${pkg}" version)
  if(err)
    message(FATAL_ERROR "${lockfile} does not pin '${pkg}' (${err})")
  endif()
  if(NOT EXISTS "${modules}/${pkg}/package.json")
    message(FATAL_ERROR "The viewer's npm packages are not installed: ${modules}/${pkg} is "
      "missing. Run ${NWB_VIEWER_FIX_COMMAND} (it runs npm ci in server/viewer), then build "
      "again.")
  endif()
  file(READ "${modules}/${pkg}/package.json" manifest)
  string(JSON have ERROR_VARIABLE err GET "${manifest}" version)
  if(err OR NOT have STREQUAL want)
    message(FATAL_ERROR "server/viewer/node_modules has ${pkg} ${have}, package-lock.json pins "
      "${want}. Run ${NWB_VIEWER_FIX_COMMAND} (npm ci in server/viewer), then build again.")
  endif()
endforeach()
if(NWB_VIEWER_CHECK_ONLY)
  return()
endif()

foreach(entry IN LISTS NWB_VIEWER_VENDOR_ASSETS)
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 pkg)
  list(GET parts 1 rel)
  list(GET parts 2 name)
  if(NOT EXISTS "${modules}/${pkg}/${rel}")
    message(FATAL_ERROR "${modules}/${pkg}/${rel} is missing (a partial install?). Run "
      "${NWB_VIEWER_FIX_COMMAND}, then build again.")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${modules}/${pkg}/${rel}"
    "${NWB_VIEWER_VENDOR_OUT}/${name}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot copy ${modules}/${pkg}/${rel} to ${NWB_VIEWER_VENDOR_OUT}")
  endif()
endforeach()
