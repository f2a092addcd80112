#!/usr/bin/env bash
# gen_http_conn_corpus.sh - writes the seeds of fuzz_http_conn.c into corpus/http_conn/: one
# control byte (split point, pause, pipelined health marker; see the target) then raw request
# bytes: every route, keep-alive and pipelined, chunked, Expect, and malformed requests.
# Bodies come from the other targets' corpora. Run by hand from anywhere; regress-* are kept.
# Usage: tests/fuzz/gen_http_conn_corpus.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="$here/corpus/http_conn"
c="$here/corpus"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
find "$out" -maxdepth 1 -type f ! -name 'regress-*' -delete

# Control bytes: S = split at 0 and SHUT_WR; H = split in the middle; P = pause after the first
# part; M = end with the pipelined "GET /v1/health ... Connection: close" marker.
S=0
H=32
P=$((0x40 | 32))
M=$((0x80))

# seed NAME CTRL - the request bytes come from stdin.
seed() {
    { printf "\\x$(printf %02x "$2")"; cat; } >"$out/$1"
}
# post PATH FILE [EXTRA_HEADER_LINES] - a POST with Content-Length on stdout.
post() {
    # The extra lines are part of the format so their \\r\\n escapes are expanded.
    printf "POST %s HTTP/1.1\\r\\nHost: fuzz\\r\\nX-NWB-Program: fuzz\\r\\nX-NWB-Run: r1\\r\\n${3:-}Content-Length: %d\\r\\n\\r\\n" \
        "$1" "$(stat -c %s "$2")"
    cat "$2"
}
# chunked FILE - FILE's bytes as two chunks and the last-chunk on stdout.
chunked() {
    local n half
    n=$(stat -c %s "$1")
    half=$((n / 2))
    printf '%x\r\n' "$half"
    head -c "$half" "$1"
    printf '\r\n%x\r\n' $((n - half))
    tail -c +$((half + 1)) "$1"
    printf '\r\n0\r\n\r\n'
}

printf 'hello from the fuzzer\nsecond line\n' >"$tmp/text"
tail -c +3 "$c/tel_unzstd/valid_one_frame" >"$tmp/tel.zst"

# Every route, valid.
printf 'GET /v1/health HTTP/1.1\r\nHost: fuzz\r\n\r\n' | seed get_health $S
printf 'GET /v1/health?x=1 HTTP/1.1\r\nHost: fuzz\r\n\r\n' | seed get_health_query $H
printf 'GET /metrics HTTP/1.1\r\nHost: fuzz\r\n\r\n' | seed get_metrics $S
printf 'GET /v1/crashes HTTP/1.1\r\nHost: fuzz\r\n\r\n' | seed get_crashes $S
printf 'GET /v1/crashes/0123456789abcdef0123456789abcdef HTTP/1.1\r\nHost: fuzz\r\n\r\n' |
    seed get_crash_unknown $H
printf 'GET /v1/crashes/../../etc HTTP/1.1\r\nHost: fuzz\r\n\r\n' | seed get_crash_bad_id $S
post /v1/log "$tmp/text" 'Content-Type: text/plain; charset=utf-8\r\nX-NWB-Seq: 1\r\n' |
    seed post_log_text $S
post /v1/log "$c/log_batch/valid_three" 'Content-Type: application/x-nwb-log-batch\r\n' |
    seed post_log_batch $H
post /v1/log "$c/log_batch/valid_ext_record" 'Content-Type: application/x-nwb-log-batch\r\n' |
    seed post_log_batch_ext $M
post /v1/log "$c/log_batch/bad_level" 'Content-Type: application/x-nwb-log-batch\r\n' |
    seed post_log_batch_bad $S
{
    printf 'POST /v1/log HTTP/1.1\r\nHost: fuzz\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n'
    chunked "$tmp/text"
} | seed post_log_chunked $H
{
    printf 'POST /v1/log HTTP/1.1\r\nHost: fuzz\r\nContent-Type: text/plain\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n' \
        "$(stat -c %s "$tmp/text")"
    cat "$tmp/text"
} | seed post_log_expect $P
post /v1/telemetry "$c/telemetry/one_frame.nwbs" 'X-NWB-Seq: 7\r\n' | seed post_telemetry_raw $S
post /v1/telemetry "$tmp/tel.zst" 'Content-Encoding: zstd\r\n' | seed post_telemetry_zstd $H
post /v1/telemetry "$c/telemetry/truncated.nwbs" '' | seed post_telemetry_bad $S
post /v1/telemetry "$tmp/text" 'Content-Encoding: gzip\r\n' | seed post_telemetry_gzip $S
post /v1/crash "$c/crash_ingest/valid_tar" '' | seed post_crash_tar $S
post /v1/crash "$c/crash_ingest/bad_traversal" '' | seed post_crash_traversal $M
# The symbol store: a tiny ELF stored (then its JSON answer and a GET), a refused one.
post /v1/symbols "$c/elf_check/tiny_debug_info.elf" '' | seed post_symbols_tiny $H
post '/v1/symbols?build_id=a0a1' "$c/elf_check/tiny_note_section.elf" '' |
    seed post_symbols_mismatch $M
post /v1/symbols "$c/elf_check/bad_truncated_note.elf" '' | seed post_symbols_bad $S
{
    post /v1/symbols "$c/elf_check/tiny_pt_note.elf" ''
    printf 'GET /v1/symbols/a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3 HTTP/1.1\r\nHost: fuzz\r\n\r\n'
} | seed pipelined_symbols_get $M

# Keep-alive and pipelining.
{
    printf 'GET /v1/health HTTP/1.1\r\nHost: fuzz\r\n\r\n'
    printf 'GET /metrics HTTP/1.1\r\nHost: fuzz\r\n\r\n'
    post /v1/log "$tmp/text" 'Content-Type: text/plain\r\n'
} | seed pipelined_three $M
# A crash list after an upload: the list's JSON must stay strict (the oracle checks it).
{
    post /v1/crash "$c/crash_ingest/valid_tar" ''
    printf 'GET /v1/crashes HTTP/1.1\r\nHost: fuzz\r\n\r\n'
} | seed pipelined_crash_list $M
{
    post /v1/log "$tmp/text" 'Content-Type: text/plain\r\nX-NWB-Seq: 2\r\n'
    post /v1/log "$tmp/text" 'Content-Type: text/plain\r\nX-NWB-Seq: 2\r\n'
} | seed pipelined_duplicate_seq $P
# A log POST (answered from the worker) with two requests pipelined behind it, then a FIN: the
# server answered only the first when this seed was written (reported; the oracle allows it).
{
    post /v1/log "$tmp/text" 'Content-Type: text/plain\r\n'
    printf 'GET /v1/health HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n'
} | seed pipelined_after_async_fin $S
printf 'GET /v1/health HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /v1/health HTTP/1.0\r\n\r\n' |
    seed http10_keep_alive $M
printf 'GET /v1/health HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n' |
    seed connection_close_then_more $S

# The viewer's page revalidated: a 304 (no body, no Content-Length) between two answers.
printf 'GET / HTTP/1.1\r\nIf-None-Match: *\r\n\r\nGET /assets/main.js HTTP/1.1\r\nIf-None-Match: W/"x", "y\r\n\r\nGET /v1/health HTTP/1.1\r\n\r\n' |
    seed viewer_if_none_match $S

# Malformed and refused requests.
printf 'GET /v1/health HTTP/1.1\nHost: fuzz\n\n' | seed bad_bare_lf $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n' |
    seed bad_cl_and_te $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc' |
    seed bad_two_cl $S
# Transfer codings other than one "chunked": 501 and close (RFC 9112 section 6.1).
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n' |
    seed bad_te_gzip_chunked $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n' |
    seed bad_te_twice $H
printf 'POST /v1/telemetry HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\nabc' |
    seed bad_te_identity $M
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: +3\r\n\r\nabc' |
    seed bad_cl_sign $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n' |
    seed bad_chunk_size $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n' |
    seed bad_chunk_no_crlf $H
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 999999999\r\n\r\n' |
    seed bad_body_too_large $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\n\r\n' | seed bad_no_length $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: image/png\r\nContent-Length: 1\r\n\r\nx' |
    seed bad_media_type $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nX-NWB-Seq: -1\r\nContent-Length: 1\r\n\r\nx' |
    seed bad_seq $S
printf 'GET /v1/health HTTP/2.0\r\n\r\n' | seed bad_version $S
printf 'DELETE /v1/log HTTP/1.1\r\n\r\n' | seed bad_method $S
printf 'GET /nope HTTP/1.1\r\n\r\n' | seed bad_path $S
printf 'GET /v1/health HTTP/1.1\r\nBad Name: x\r\n\r\n' | seed bad_header_name $S
printf 'GET /v1/health HTTP/1.1\r\nX-A: a\001b\r\n\r\n' | seed bad_header_ctl $S
{
    printf 'GET /v1/health HTTP/1.1\r\nX-Long: '
    head -c 17000 /dev/zero | tr '\0' a
    printf '\r\n\r\n'
} | seed bad_head_too_long $S
{
    printf 'GET /v1/health HTTP/1.1\r\n'
    for i in $(seq 1 70); do printf 'X-H%d: v\r\n' "$i"; done
    printf '\r\n'
} | seed bad_too_many_headers $S
printf 'CONNECT fuzz:443 HTTP/1.1\r\nHost: fuzz:443\r\n\r\n' | seed bad_connect $S
printf 'GET /v1/health HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n' |
    seed bad_upgrade $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nX-NWB-Program: ../../../etc\r\nX-NWB-Run: /abs/../x\r\nContent-Length: 2\r\n\r\nx\n' |
    seed hostile_names $S
{
    printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nX-NWB-Program: \xff\xfe.\r\nX-NWB-Run: '
    head -c 300 /dev/zero | tr '\0' r
    printf '\r\nContent-Length: 2\r\n\r\nx\n'
} | seed hostile_names_long $H
printf 'GET /v1/heal' | seed partial_head $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 50\r\n\r\nshort' |
    seed partial_body_timeout $M
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nX-NWB-Seq: 18446744073709551615\r\nContent-Length: 2\r\n\r\nx\n' |
    seed seq_max $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nX-NWB-Seq: 18446744073709551616\r\nContent-Length: 2\r\n\r\nx\n' |
    seed bad_seq_overflow $S
printf 'GET /v1/health HTTP/1.1\r\nAuthorization: Bearer not-a-token\r\n\r\n' | seed auth_header $S
printf 'POST /v1/log HTTP/1.1\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nx\n\r\n0\r\nX-Trailer: t\r\n\r\n' |
    seed chunk_extension_trailer $H
printf 'HEAD /v1/health HTTP/1.1\r\n\r\nOPTIONS * HTTP/1.1\r\n\r\n' | seed head_and_options $M
printf 'GET http://fuzz/v1/health HTTP/1.1\r\n\r\nGET /v1/%%68ealth HTTP/1.1\r\n\r\n' |
    seed absolute_uri_and_percent $M
{
    printf 'GET /v1/health?'
    head -c 9000 /dev/zero | tr '\0' q
    printf ' HTTP/1.1\r\n\r\n'
} | seed long_url $S
: | seed empty_request $S
ls "$out" | wc -l
du -sh "$out"
