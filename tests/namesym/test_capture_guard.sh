#!/usr/bin/env bash
# test_capture_guard.sh - scripts/namesym-capture's guarantees, on a scratch capture tree:
# (1) an old sidecar that cannot be removed stops capture and publication: no workload runs and
# the published sidecars stay untouched; (2) otherwise stale sidecars are removed before the
# workloads run and only fresh ones are published (temporary file + rename).
set -euo pipefail
capture=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/nwb-capture-guard.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; echo "0 passed, 1 failed"; exit 1; }

mkdir -p "$work/bm/bin" "$work/dest/bin" "$work/dest/server"
echo OLD > "$work/dest/bin/prog.namesym"
# A non-empty directory named like a sidecar: 'rm -f' cannot remove it (a real removal failure).
mkdir -p "$work/bm/bin/stuck.namesym" && touch "$work/bm/bin/stuck.namesym/keep"
if "$capture" --build "$work/bm" --dest "$work/dest" --skip-build \
    --workload "touch $work/ran; echo NEW > bin/prog.namesym" 2>"$work/err"; then
    fail "capture went on although an old sidecar could not be removed"
fi
grep -q "cannot remove old sidecar" "$work/err" || fail "no reason given: $(cat "$work/err")"
[ ! -e "$work/ran" ] || fail "a workload ran after the removal failure"
[ "$(cat "$work/dest/bin/prog.namesym")" = OLD ] || fail "published sidecar changed"

rm -rf "$work/bm/bin/stuck.namesym"
echo STALE > "$work/bm/bin/stale.namesym"
"$capture" --build "$work/bm" --dest "$work/dest" --skip-build \
    --workload "test ! -e bin/stale.namesym && echo NEW > bin/prog.namesym" >/dev/null \
    || fail "capture failed on a clean tree (or the stale sidecar was still there)"
[ "$(cat "$work/dest/bin/prog.namesym")" = NEW ] || fail "fresh sidecar not published"
[ "$(cat "$work/dest/server/prog.namesym")" = NEW ] || fail "not published beside the server"
[ ! -e "$work/dest/bin/stale.namesym" ] || fail "a stale sidecar was published"
ls "$work/dest/bin" | grep -q tmp && fail "temporary file left behind"
echo "2 passed, 0 failed"
