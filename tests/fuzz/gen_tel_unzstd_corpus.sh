#!/usr/bin/env bash
# gen_tel_unzstd_corpus.sh - writes the seeds of fuzz_tel_unzstd.c into corpus/tel_unzstd/ with
# the zstd CLI: each seed is 2 parameter bytes (window log cap, output cap; see the target) then
# a body. Run by hand from the repository root; regress-* seeds (fuzzer findings) are kept.
# Usage: tests/fuzz/gen_tel_unzstd_corpus.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="$here/corpus/tel_unzstd"
src="$here/corpus/telemetry"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
find "$out" -maxdepth 1 -type f ! -name 'regress-*' -delete

# seed NAME PARAM0 PARAM1 BODY_FILE - byte 0: window log 10 + p0 % 20 (0xff: 0,
# 0xfe: 32, refused); byte 1: cap = {0,1,64,4096,65535,65536,100000,1Mi}[p1 & 7] + (p1 >> 3).
seed() {
    { printf "\\x$(printf %02x "$2")\\x$(printf %02x "$3")"; cat "$4"; } >"$out/$1"
}

zstd -q -c -3 "$src/one_frame.nwbs" >"$tmp/one.zst"
zstd -q -c -19 --no-check "$src/golden_small.nwbs" >"$tmp/golden.zst"
zstd -q -c -1 --check "$src/every_kind.nwbs" >"$tmp/every.zst"
: >"$tmp/empty"
zstd -q -c "$tmp/empty" >"$tmp/empty.zst"
head -c 200000 /dev/zero >"$tmp/zeros"
zstd -q -c -3 "$tmp/zeros" >"$tmp/zeros.zst"                  # 200000 bytes: over most caps
# From stdin the content size is unknown, so the frame declares its 2^24 window.
zstd -q -c --ultra -22 --long=24 <"$tmp/zeros" >"$tmp/w24.zst"
head -c 5000 /dev/urandom >"$tmp/random"
zstd -q -c -1 "$tmp/random" >"$tmp/raw.zst"                   # raw (stored) blocks
cat "$tmp/one.zst" "$tmp/one.zst" >"$tmp/two.zst"             # two frames: refused
{ cat "$tmp/one.zst"; printf 'junk'; } >"$tmp/trailing.zst"
head -c 20 "$tmp/every.zst" >"$tmp/trunc.zst"
# A corrupted checksum: flip the last byte of a --check frame.
cp "$tmp/every.zst" "$tmp/badsum.zst"
last=$(($(stat -c %s "$tmp/badsum.zst") - 1))
printf '\xff' | dd of="$tmp/badsum.zst" bs=1 seek="$last" conv=notrunc status=none
# A skippable frame (magic 0x184D2A50, 4 bytes of user data) alone and before a frame.
printf '\x50\x2a\x4d\x18\x04\x00\x00\x00abcd' >"$tmp/skip.zst"
cat "$tmp/skip.zst" "$tmp/one.zst" >"$tmp/skip_then_frame.zst"
printf 'NWBS not zstd at all' >"$tmp/notzstd"

seed valid_one_frame 13 3 "$tmp/one.zst"             # wlog 23, cap 4096
seed valid_golden_level19 13 5 "$tmp/golden.zst"     # cap 65536
seed valid_checksum 13 7 "$tmp/every.zst"            # cap 1 MiB
seed valid_empty_content 13 0 "$tmp/empty.zst"       # cap 0: an empty frame fits
seed valid_raw_blocks 13 3 "$tmp/raw.zst"
seed cap_below_frame 13 248 "$tmp/one.zst"          # cap 0 + 31: below the content
seed cap_over_zeros 13 6 "$tmp/zeros.zst"            # 200000 > 100000: too big
seed cap_one_byte 13 1 "$tmp/one.zst"
seed window_too_large 13 7 "$tmp/w24.zst"           # needs 2^24 > 2^23
seed window_allowed 14 7 "$tmp/w24.zst"             # wlog 24 allows it; 200000 bytes fit 1 MiB
# Finding: zstd reads windowLogMax 0 as "default" (2^27); the decoder now refuses it itself.
seed regress-window-log-zero 255 7 "$tmp/one.zst"   # wlog 0: refused configuration
seed window_log_32 254 7 "$tmp/one.zst"             # wlog 32: above zstd's range, refused
seed two_frames 13 7 "$tmp/two.zst"
seed trailing_garbage 13 7 "$tmp/trailing.zst"
seed truncated_frame 13 7 "$tmp/trunc.zst"
seed bad_checksum 13 7 "$tmp/badsum.zst"
seed skippable_only 13 7 "$tmp/skip.zst"
seed skippable_then_frame 13 7 "$tmp/skip_then_frame.zst"
seed not_zstd 13 7 "$tmp/notzstd"
seed empty_body 13 7 "$tmp/empty"
ls -l "$out"
