# shellcheck shell=bash
# scripts/lib/deps.sh - the one list of Debian packages nwb needs, and the function that
# installs whatever of it is missing. Sourced by scripts/install-deps, serve, test and fuzz.

# shellcheck disable=SC2034 # the groups are read indirectly, as NWB_DEPS_<group>.
# Package groups. Edit only here: every script asks for groups, never for packages.
#   build: compile nwb and its test suite (llhttp comes as generated C sources in node-llhttp;
#          libdw-dev is elfutils' libdw/libdwfl, nwb-symbolize's unwinder, docs/crash.md;
#          libdebuginfod-dev is elfutils' debuginfod client, nwb-symbolize's optional
#          --debuginfod-urls lookups; libssl-dev is OpenSSL, Debian's standard TLS library and
#          what ClickHouse's own https interface speaks, for an https --forward-clickhouse,
#          docs/operations.md; its libssl3 is what nwb-logserver needs at run time).
#   bench: peers the benchmarks under tests/bench compare against (spdlog, bsdtar, and
#          elfutils' eu-addr2line beside binutils' addr2line for bench_symbolize).
#   test:  tools the test suite runs besides the build (python3 for ../shared/contract_smoke.py,
#          binutils for addr2line in the crash tests, util-linux for prlimit in fault_loris_flood,
#          debuginfod, elfutils' server, which crash.symbolize_debuginfod runs on loopback).
#   tsan:  the tsan stage of scripts/test: gcc's ThreadSanitizer runtime (libtsan2, also pulled
#          in by gcc), setarch (util-linux) and sysctl (procps) for the kernels where TSan needs
#          address randomisation off or vm.mmap_rnd_bits lowered.
#   valgrind: the valgrind stage of scripts/test (memcheck).
#   soak:  scripts/soak's samplers: curl (GET /metrics), ps (procps).
#   fuzz:  clang and its libFuzzer runtime for scripts/fuzz.
#   viewer: what every build of nwb-logserver needs for the web viewer it embeds: Node.js 20
#          with its npm (the image's nodejs package, which brings npm; never Debian's separate
#          npm package, which conflicts with it), then "npm ci" in server/viewer (uPlot, and
#          playwright-core for the browser tests) when node_modules is missing or older than
#          package-lock.json (nwb_deps_npm).
#   browser: Debian's chromium, which the browser tests drive headless (no browser download).
#   clickhouse: the real column store the forwarding tests (label "clickhouse", tests/forward)
#          start on free loopback ports: Debian 12's clickhouse-server 18.16, and its
#          clickhouse-client for looking at a test's data by hand (docs/operations.md,
#          "Forwarding to ClickHouse").
NWB_DEPS_build="gcc libc6-dev make cmake pkg-config libuv1-dev libzstd-dev libarchive-dev
    libcmocka-dev node-llhttp libdw-dev libdebuginfod-dev libssl-dev"
NWB_DEPS_bench="g++ libspdlog-dev libarchive-tools elfutils"
NWB_DEPS_test="python3 binutils util-linux debuginfod"
NWB_DEPS_tsan="libtsan2 util-linux procps"
NWB_DEPS_valgrind="valgrind"
NWB_DEPS_soak="curl procps"
NWB_DEPS_fuzz="clang libclang-rt-14-dev"
NWB_DEPS_viewer="nodejs"
NWB_DEPS_browser="chromium"
NWB_DEPS_clickhouse="clickhouse-server clickhouse-client"

NWB_DEPS_VIEWER_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/server/viewer"

# nwb_deps_packages GROUP... - print the packages of the groups, one per line.
nwb_deps_packages() {
    local group var
    for group in "$@"; do
        var="NWB_DEPS_${group}"
        if [ -z "${!var+x}" ]; then
            echo "deps: unknown package group '$group'" >&2
            return 2
        fi
        # shellcheck disable=SC2086 # split the group into its packages
        printf '%s\n' ${!var}
    done
}

# nwb_deps_missing GROUP... - print the packages of the groups that are not installed.
nwb_deps_missing() {
    local pkgs pkg
    pkgs=$(nwb_deps_packages "$@") || return 2
    for pkg in $pkgs; do
        if ! dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            echo "$pkg"
        fi
    done
}

# nwb_deps_npm - "npm ci" in server/viewer when node_modules is missing or older than
# package-lock.json (npm writes node_modules/.package-lock.json on every install). The lockfile
# pins every package with its integrity hash; server/viewer/.npmrc keeps download addresses out
# of it and install scripts from running. Returns 0 when node_modules is up to date afterwards.
nwb_deps_npm() {
    local dir=$NWB_DEPS_VIEWER_DIR major
    if [ -e "$dir/node_modules/.package-lock.json" ] &&
        ! [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
        return 0
    fi
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "deps: the viewer needs Node.js 20 or newer with its npm (node and npm on PATH);" \
            "Debian's own npm package conflicts with the nodejs package that brings it" >&2
        return 1
    fi
    major=$(node -p 'process.versions.node.split(".")[0]')
    if [ "$major" -lt 20 ]; then
        echo "deps: the viewer needs Node.js 20 or newer, this is $(node --version)" >&2
        return 1
    fi
    echo "deps: npm ci in server/viewer (package-lock.json)" >&2
    # playwright-core never downloads a browser by itself; the variable makes sure of it.
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund) >&2
}

# nwb_deps_ensure GROUP... - install the missing packages of the groups with apt-get
# (apt-get update first, only when something is missing; sudo when not root), then, for the
# viewer group, the viewer's npm packages (nwb_deps_npm).
# Returns 0 when everything is installed afterwards.
nwb_deps_ensure() {
    local group
    nwb_deps_apt "$@" || return $?
    for group in "$@"; do
        if [ "$group" = viewer ]; then
            nwb_deps_npm || return 1
        fi
    done
    return 0
}

# nwb_deps_apt GROUP... - the apt-get half of nwb_deps_ensure.
nwb_deps_apt() {
    local missing sudo=()
    missing=$(nwb_deps_missing "$@") || return 2
    if [ -z "$missing" ]; then
        return 0
    fi
    missing=$(printf '%s' "$missing" | tr '\n' ' ')
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "deps: missing packages: $missing" >&2
            echo "deps: not root and no sudo: install them as root (apt-get install -y $missing)" >&2
            return 1
        fi
        sudo=(sudo)
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "deps: missing packages: $missing; no apt-get here (nwb targets Debian 12)" >&2
        return 1
    fi
    echo "deps: installing $missing" >&2
    # env passes the setting through sudo, which resets the environment.
    local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300)
    "${apt[@]}" update >&2 || return 1
    # shellcheck disable=SC2086 # one argument per package
    "${apt[@]}" install -y --no-install-recommends $missing >&2 || return 1
    missing=$(nwb_deps_missing "$@")
    if [ -n "$missing" ]; then
        echo "deps: still missing after apt-get install: $(printf '%s' "$missing" | tr '\n' ' ')" >&2
        return 1
    fi
    return 0
}
