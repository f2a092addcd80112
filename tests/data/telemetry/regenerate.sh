#!/bin/sh
# tests/data/telemetry/regenerate.sh BUILD_DIR - rewrite the golden telemetry streams and their
# expected outputs with BUILD_DIR's nwb-telemetry. Run only after an intended format or report
# change, review the diff, and note the change in docs/telemetry-format.md "Version changes".
set -eu
tool="${1:?usage: regenerate.sh BUILD_DIR}/telemetry/nwb-telemetry"
cd "$(dirname "$0")"

# Small: every kind, three segments, unknown kinds and a newer textLog version; the truncation
# and mutation tests walk it byte by byte.
"$tool" synth -o golden_small.nwbs --namesym-out golden_small.namesym --seed 7 --frames 6 \
    --scopes 12 --gpu 2 --arenas 2 --logs 1 --frames-per-upload 2 --frame-graph-every 3 \
    --diagnostics-every 4 --unknown-kinds
# A run: 90 frames at 60 Hz on two threads, hitches, delayed GPU windows, growing arenas.
"$tool" synth -o golden_run.nwbs --namesym-out golden_run.namesym --seed 1 --frames 90 \
    --scopes 24 --gpu 4 --arenas 3 --logs 1 --frames-per-upload 30 --frame-graph-every 30 \
    --diagnostics-every 45 --unknown-kinds

"$tool" report golden_small.nwbs --namesym golden_small.namesym -o golden_small.report.json
"$tool" dump golden_small.nwbs --namesym golden_small.namesym > golden_small.dump.txt
"$tool" report golden_run.nwbs --namesym golden_run.namesym -o golden_run.report.json
"$tool" report golden_run.nwbs -o golden_run.nonames.report.json
