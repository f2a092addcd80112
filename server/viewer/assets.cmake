# server/viewer/assets.cmake - the viewer's asset list: what nwb-logserver embeds and serves.
# Read by viewer.cmake (configure) and vendor.cmake (build). Add a file here to serve it.

# Our own files, under src/, served as /assets/<name>; index.html is also the answer to GET /.
set(NWB_VIEWER_OWN_ASSETS
  index.html
  viewer.css
  favicon.svg
  main.js
  api.js
  dom.js
  router.js
  sse.js
  token.js
  format.js
  views/runs.js
  views/runs_events.js
  views/runs_follow.js
  views/runs_format.js
  views/runs_keys.js
  views/runs_run.js
  views/log.js
  views/log_lines.js
  views/log_pane.js
  views/log_search.js
  views/log_store.js
  views/frames.js
  views/frames_chart.js
  views/frames_detail.js
  views/frames_flame.js
  views/frames_graph.js
  views/frames_lists.js
  views/frames_memory.js
  views/frames_scopes.js
  views/frames_table.js
  views/frames_util.js
  views/crashes.js
  views/crashes_page.js
  views/crashes_files.js
  views/crashes_text.js
  views/crashes_logpos.js)

# Third-party files, "<npm package>|<path in the package>|<served name>": copied from
# node_modules (installed by npm ci from package-lock.json) into the build at build time,
# never into the repository. uPlot's LICENSE travels with its code.
set(NWB_VIEWER_VENDOR_ASSETS
  "uplot|dist/uPlot.esm.js|uPlot.esm.js"
  "uplot|dist/uPlot.min.css|uPlot.min.css"
  "uplot|LICENSE|uPlot.LICENSE.txt")

# The packages whose installed version must be the lockfile's.
set(NWB_VIEWER_VENDOR_PACKAGES uplot)
set(NWB_VIEWER_FIX_COMMAND "scripts/install-deps viewer")
