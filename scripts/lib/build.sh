# shellcheck shell=bash
# scripts/lib/build.sh - configure and build helpers shared by scripts/serve, test and fuzz:
# the repository root, the job count, and an incremental configure + build of one build dir.

NWB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Two cores on the shared machines: never more than -j2 unless asked.
NWB_JOBS=${NWB_JOBS:-2}

# nwb_configure DIR CMAKE_ARGS... - configure DIR from the repository root. Re-running with the
# same arguments is cheap and changes nothing, so callers always call it (idempotent: a build
# dir left configured with other options is put back to these).
nwb_configure() {
    local dir=$1
    shift
    cmake -S "$NWB_ROOT" -B "$dir" "$@"
}

# nwb_build DIR [TARGET...] - incremental build of DIR (all targets when none are given). With
# NWB_KEEP_GOING=1 it builds everything that can be built past a failure (make -k / ninja -k 0)
# and still returns non-zero.
nwb_build() {
    local dir=$1 t args=() native=()
    shift
    for t in "$@"; do
        args+=(--target "$t")
    done
    if [ "${NWB_KEEP_GOING:-0}" = 1 ]; then
        if grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt" 2>/dev/null; then
            native=(-- -k 0)
        else
            native=(-- -k)
        fi
    fi
    cmake --build "$dir" -j "$NWB_JOBS" "${args[@]}" "${native[@]}"
}
