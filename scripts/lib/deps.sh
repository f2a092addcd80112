# shellcheck shell=bash
# scripts/lib/deps.sh - the one list of Debian packages nwb needs, and the function that
# installs whatever of it is missing. Sourced by scripts/install-deps, serve, test and fuzz.

# shellcheck disable=SC2034 # the groups are read indirectly, as NWB_DEPS_<group>.
# Package groups. Edit only here: every script asks for groups, never for packages.
#   build: compile nwb and its test suite (llhttp comes as generated C sources in node-llhttp).
#   bench: peers the benchmarks under tests/bench compare against (spdlog, bsdtar).
#   test:  tools the test suite runs besides the build (python3 for ../shared/contract_smoke.py,
#          binutils for addr2line in the crash tests, util-linux for prlimit in fault_loris_flood).
#   tsan:  the tsan stage of scripts/test: gcc's ThreadSanitizer runtime (libtsan2, also pulled
#          in by gcc), setarch (util-linux) and sysctl (procps) for the kernels where TSan needs
#          address randomisation off or vm.mmap_rnd_bits lowered.
#   valgrind: the valgrind stage of scripts/test (memcheck).
#   soak:  scripts/soak's samplers: curl (GET /metrics), ps (procps).
#   fuzz:  clang and its libFuzzer runtime for scripts/fuzz.
NWB_DEPS_build="gcc libc6-dev make cmake pkg-config libuv1-dev libzstd-dev libarchive-dev
    libcmocka-dev node-llhttp"
NWB_DEPS_bench="g++ libspdlog-dev libarchive-tools"
NWB_DEPS_test="python3 binutils util-linux"
NWB_DEPS_tsan="libtsan2 util-linux procps"
NWB_DEPS_valgrind="valgrind"
NWB_DEPS_soak="curl procps"
NWB_DEPS_fuzz="clang libclang-rt-14-dev"

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

# nwb_deps_ensure GROUP... - install the missing packages of the groups with apt-get
# (apt-get update first, only when something is missing; sudo when not root).
# Returns 0 when everything is installed afterwards.
nwb_deps_ensure() {
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
