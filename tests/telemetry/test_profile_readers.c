/* SPDX-License-Identifier: MIT */
/*
 * test_profile_readers.c - the readers of format 1.1 (thread, stringTable, counterFrame and
 * mark events) on streams built with the encoders: the report's threads, cpuByThread,
 * counters, marks and profiler sections, their bounds at the edge, names from the stream's
 * string tables before the sidecar, a 1.0 stream's report, the Chrome trace's tracks,
 * counters and marks, the dump's lines and the frame detail's names, counters and marks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/namesym.h"
#include "nwb/telemetry_report.h"
#include "tel_test_util.h"

#define MS         1000000ull /* ns */
#define START_MONO 1000ull    /* tel_put_header()'s start_mono_ns */

static nwb_name_t nm(const char *s)
{
    return nwb_name_hash(s, strlen(s));
}

static void put_thread(nwb_buf_t *b, uint64_t frame, uint32_t id, const char *name,
                       uint64_t records, uint64_t dropped, uint64_t malformed)
{
    nwb_tel_thread_info_t t;

    t.thread = id;
    t.name = name;
    t.name_len = name != NULL ? (uint16_t)strlen(name) : 0;
    t.records = records;
    t.dropped = dropped;
    t.malformed = malformed;
    assert_int_equal(nwb_tel_encode_thread(b, START_MONO + frame * 20 * MS, frame, &t), 0);
}

static void put_strings(nwb_buf_t *b, uint64_t frame, const char *const *strs, uint32_t n)
{
    nwb_tel_string_t s[16];

    assert_true(n <= 16);
    for (uint32_t i = 0; i < n; i++) {
        s[i].str = strs[i];
        s[i].len = (uint16_t)strlen(strs[i]);
        s[i].name = nm(strs[i]);
    }
    assert_int_equal(nwb_tel_encode_strings(b, START_MONO + frame * 20 * MS, frame, s, n), 0);
}

static void put_counter(nwb_buf_t *b, uint64_t frame, const char *name, double v, uint32_t thread)
{
    nwb_tel_counter_t c;

    c.name = nm(name);
    c.ts_ns = START_MONO + frame * 20 * MS + 5 * MS;
    c.value = v;
    c.thread = thread;
    assert_int_equal(nwb_tel_encode_counters(b, c.ts_ns, frame, &c, 1), 0);
}

static void put_mark(nwb_buf_t *b, uint64_t ts, uint64_t frame, uint32_t thread, const char *text)
{
    assert_int_equal(nwb_tel_encode_mark(b, ts, frame, thread, text, strlen(text)), 0);
}

static nwb_tel_cpu_scope_t scope(const char *name, uint64_t start_ms, uint64_t end_ms,
                                 uint32_t thread, uint16_t depth)
{
    nwb_tel_cpu_scope_t s;

    s.name = nm(name);
    s.start_ns = START_MONO + start_ms * MS;
    s.end_ns = START_MONO + end_ms * MS;
    s.thread = thread;
    s.depth = depth;
    return s;
}

static void put_perf(nwb_buf_t *b, uint64_t frame, const nwb_tel_cpu_scope_t *cpu, uint32_t n)
{
    nwb_tel_perf_frame_t pf;

    memset(&pf, 0, sizeof(pf));
    pf.frame_start_ns = START_MONO + frame * 20 * MS;
    pf.frame_duration_ns = 16 * MS;
    pf.cpu = cpu;
    pf.cpu_count = n;
    assert_int_equal(nwb_tel_encode_perf(b, pf.frame_start_ns + pf.frame_duration_ns, frame, &pf),
                     0);
}

/*
 * Two segments: thread 10 "main" (frame > render > render/shadows), thread 20 named only in the
 * second segment, thread 30 seen only in a CPU scope; counters "draws" and "voices"; two
 * marks; then the first segment sent again (a duplicate, counted once).
 */
static void profile_stream(nwb_buf_t *b)
{
    static const char *const strs[] = {"frame", "render", "render/shadows", "audio.mix", "draws",
                                       "voices"};
    const nwb_tel_cpu_scope_t f0[] = {
        scope("frame", 0, 10, 10, 0),     scope("render", 2, 8, 10, 1),
        scope("render/shadows", 3, 4, 10, 2), scope("audio.mix", 1, 3, 20, 0),
        scope("render", 4, 5, 30, 0)};
    const nwb_tel_cpu_scope_t f1[] = {scope("frame", 20, 32, 10, 0)};
    size_t seg1;
    size_t seg1_end;

    seg1 = b->len;
    tel_put_header(b, 1);
    put_strings(b, 0, strs, 6);
    put_counter(b, 0, "draws", 100.0, 10);
    {
        nwb_tel_counter_t c[2] = {{nm("voices"), START_MONO + 6 * MS, 4.0, 20},
                                  {nm("voices"), START_MONO + 7 * MS, 8.0, 20}};

        assert_int_equal(nwb_tel_encode_counters(b, START_MONO + 7 * MS, 0, c, 2), 0);
    }
    put_mark(b, START_MONO + 2500000, 0, 10, "level loaded");
    put_perf(b, 0, f0, 5);
    put_thread(b, 0, 10, "main", 5, 0, 1);
    put_thread(b, 0, 20, NULL, 3, 1, 0);
    seg1_end = b->len;

    tel_put_header(b, 2);
    put_strings(b, 1, strs, 2);
    put_counter(b, 1, "draws", 300.0, 10);
    put_mark(b, START_MONO + 20 * MS, 1, 30, "boss");
    put_perf(b, 1, f1, 1);
    put_thread(b, 1, 20, "audio", 6, 2, 0);
    put_thread(b, 1, 10, "main", 9, 0, 1);

    /* The first upload resent. */
    {
        uint8_t *copy = malloc(seg1_end - seg1);

        assert_non_null(copy);
        memcpy(copy, b->data + seg1, seg1_end - seg1);
        assert_int_equal(nwb_buf_append(b, copy, seg1_end - seg1), 0);
        free(copy);
    }
}

static void test_profile_report_threads_counters_marks_and_profiler(void **state)
{
    nwb_buf_t b;
    nwb_buf_t pieces;
    size_t cuts[4];
    size_t ncuts;
    char *json;

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    profile_stream(&b);
    json = tel_built_report(b.data, b.len, NULL);
    tel_expect(json, "\"thread\":4,\"stringTable\":2,\"counterFrame\":3,\"mark\":2,\"unknown\":0}");
    tel_expect(json, "\"duplicateSegments\":1,");
    tel_expect(json,
               "\"threads\":[{\"thread\":10,\"name\":\"main\",\"records\":9,\"dropped\":0,"
               "\"malformed\":1,\"scopes\":4,\"cpuMs\":22.000000},"
               "{\"thread\":20,\"name\":\"audio\",\"records\":6,\"dropped\":2,\"malformed\":0,"
               "\"scopes\":1,\"cpuMs\":2.000000},"
               "{\"thread\":30,\"name\":null,\"records\":0,\"dropped\":0,\"malformed\":0,"
               "\"scopes\":1,\"cpuMs\":1.000000}],");
    /* The scope table split per thread, rows like those of "cpu". */
    tel_expect(json, "\"cpuByThread\":[{\"thread\":10,\"name\":\"main\",\"cpu\":[{\"name\":\"frame\","
                     "\"samples\":2,\"totalMs\":22.000000,\"minMs\":10.000000,\"maxMs\":12.000000,"
                     "\"meanMs\":11.000000,");
    tel_expect(json, "{\"name\":\"render\",\"samples\":1,\"totalMs\":6.000000,");
    tel_expect(json, "{\"name\":\"render/shadows\",\"samples\":1,\"totalMs\":1.000000,");
    tel_expect(json, "{\"thread\":20,\"name\":\"audio\",\"cpu\":[{\"name\":\"audio.mix\","
                     "\"samples\":1,\"totalMs\":2.000000,");
    tel_expect(json, "{\"thread\":30,\"name\":null,\"cpu\":[{\"name\":\"render\",\"samples\":1,"
                     "\"totalMs\":1.000000,\"minMs\":1.000000,\"maxMs\":1.000000,"
                     "\"meanMs\":1.000000,\"p95Ms\":1.000000,\"p99Ms\":1.000000,"
                     "\"firstSourceFrame\":0,\"lastSourceFrame\":0}]}]}");
    /* ... and the whole table still counts "render" of both threads. */
    tel_expect(json, "\"cpu\":[{\"name\":\"frame\",\"samples\":2,");
    tel_expect(json, "{\"name\":\"render\",\"samples\":2,\"totalMs\":7.000000,");
    tel_expect(json,
               "\"counters\":[{\"name\":\"draws\",\"samples\":2,\"frames\":2,\"min\":100.000000,"
               "\"max\":300.000000,\"mean\":200.000000,\"last\":300.000000,\"series\":["
               "{\"frame\":0,\"min\":100.000000,\"max\":100.000000,\"mean\":100.000000},"
               "{\"frame\":1,\"min\":300.000000,\"max\":300.000000,\"mean\":300.000000}]},"
               "{\"name\":\"voices\",\"samples\":2,\"frames\":1,\"min\":4.000000,"
               "\"max\":8.000000,\"mean\":6.000000,\"last\":8.000000,\"series\":["
               "{\"frame\":0,\"min\":4.000000,\"max\":8.000000,\"mean\":6.000000}]}],");
    tel_expect(json, "\"marks\":{\"count\":2,\"listed\":["
                     "{\"frame\":0,\"tsMs\":2.500000,\"thread\":10,\"threadName\":\"main\","
                     "\"text\":\"level loaded\"},"
                     "{\"frame\":1,\"tsMs\":20.000000,\"thread\":30,\"threadName\":null,"
                     "\"text\":\"boss\"}],\"notListed\":0},");
    tel_expect(json, "\"profiler\":{\"dropped\":2,\"malformed\":1,\"namesNotKept\":0,"
                     "\"countersNotKept\":0,\"threadsNotKept\":0,\"threadScopesNotKept\":0}}");
    /* Fed one upload at a time, plainly and atomically: the same bytes. */
    ncuts = tel_segment_offsets(b.data, b.len, cuts, 4);
    assert_int_equal(ncuts, 3);
    for (unsigned flags = 0; flags <= NWB_TEL_FEED_ATOMIC; flags += NWB_TEL_FEED_ATOMIC) {
        nwb_buf_init(&pieces, NWB_TEL_REPORT_JSON_MAX);
        assert_int_equal(tel_report_in_pieces(b.data, b.len, cuts, ncuts, flags, NULL, &pieces), 0);
        assert_int_equal(pieces.len, strlen(json));
        assert_memory_equal(pieces.data, json, pieces.len);
        nwb_buf_cleanup(&pieces);
    }
    free(json);
    nwb_buf_cleanup(&b);
}

/* A sidecar that says "RENDER" for the hash of "render": a reader that reads the stream's
 * string first says "render". */
static nwb_namesym_table_t *lying_sidecar(uint8_t **img)
{
    nwb_namesym_builder_t nb;
    nwb_namesym_table_t *t = NULL;
    nwb_namesym_view_t v;
    size_t len = 0;
    char err[128];
    uint8_t *p;

    nwb_namesym_builder_init(&nb);
    assert_int_equal(nwb_namesym_builder_add(&nb, "render", 6), 0);
    assert_int_equal(nwb_namesym_builder_add(&nb, "gpu.only", 8), 0);
    assert_int_equal(nwb_namesym_builder_serialize(&nb, "b", img, &len, err, sizeof(err)), 0);
    p = NULL;
    for (size_t i = 0; i + 6 <= len && p == NULL; i++) {
        p = memcmp(*img + i, "render", 6) == 0 ? *img + i : NULL;
    }
    assert_non_null(p);
    memcpy(p, "RENDER", 6);
    assert_int_equal(nwb_namesym_view_open(&v, *img, len, NULL, NULL), 0);
    assert_int_equal(nwb_namesym_table_create(&t), 0);
    assert_int_equal(nwb_namesym_table_add(t, &v, "test", NULL, NULL), 2);
    nwb_namesym_builder_cleanup(&nb);
    return t;
}

static void test_profile_stream_strings_beat_the_sidecar(void **state)
{
    static const char *const strs[] = {"render"};
    nwb_tel_report_options_t ro = NWB_TEL_REPORT_OPTIONS_INIT;
    const nwb_tel_cpu_scope_t cpu[] = {scope("render", 0, 2, 1, 0), scope("gpu.only", 0, 1, 1, 1),
                                       scope("nowhere", 0, 1, 1, 1)};
    uint8_t *img = NULL;
    nwb_namesym_table_t *sidecar = lying_sidecar(&img);
    char tok[NWB_NAME_TOKEN_SIZE];
    char msg[96];
    nwb_buf_t with;
    nwb_buf_t without;
    char *json;
    int n;

    (void)state;
    ro.names = sidecar;
    nwb_name_token(nm("render"), tok);
    n = snprintf(msg, sizeof(msg), "pass %s took long", tok);
    nwb_buf_init(&with, 1 << 20);
    tel_put_header(&with, 1);
    put_perf(&with, 0, cpu, 3);
    assert_int_equal(nwb_tel_encode_text(&with, 2, 0, 1, 1, msg, (size_t)n), 0);
    nwb_buf_init(&without, 1 << 20);
    assert_int_equal(nwb_buf_append(&without, with.data, with.len), 0);
    /* The string table may come after its first use: the report reads names when written. */
    put_strings(&with, 0, strs, 1);

    json = tel_built_report(with.data, with.len, &ro);
    tel_expect(json, "{\"name\":\"render\",\"samples\":1,");
    tel_expect(json, "{\"name\":\"gpu.only\",\"samples\":1,"); /* from the sidecar */
    nwb_name_token(nm("nowhere"), tok);
    snprintf(msg, sizeof(msg), "{\"name\":\"%s\",\"samples\":1,", tok); /* in neither */
    tel_expect(json, msg);
    tel_expect(json, "\"message\":\"pass render took long\"");
    assert_null(strstr(json, "RENDER"));
    free(json);
    /* The same without the string table: the sidecar's string. */
    json = tel_built_report(without.data, without.len, &ro);
    tel_expect(json, "{\"name\":\"RENDER\",\"samples\":1,");
    tel_expect(json, "\"message\":\"pass RENDER took long\"");
    free(json);
    /* ... and with no sidecar at all, the stream's strings alone. */
    json = tel_built_report(with.data, with.len, NULL);
    tel_expect(json, "{\"name\":\"render\",\"samples\":1,");
    tel_expect(json, "\"message\":\"pass render took long\"");
    free(json);
    nwb_buf_cleanup(&with);
    nwb_buf_cleanup(&without);
    nwb_namesym_table_destroy(sidecar);
    nwb_free(img);
}

static void test_profile_counter_and_mark_bounds_at_the_edge(void **state)
{
    const uint32_t n = NWB_TEL_REPORT_COUNTERS_MAX + 1;
    nwb_tel_counter_t *c = calloc(n, sizeof(*c));
    char (*names)[16] = calloc(n, sizeof(*names));
    nwb_buf_t b;
    char *json;

    (void)state;
    assert_non_null(c);
    assert_non_null(names);
    nwb_buf_init(&b, 8u << 20);
    tel_put_header(&b, 1);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "c%05u", i);
        c[i].name = nm(names[i]);
        c[i].ts_ns = START_MONO + i;
        c[i].value = (double)i;
        c[i].thread = 1;
    }
    assert_int_equal(nwb_tel_encode_counters(&b, START_MONO, 0, c, n), 0);
    for (uint32_t i = 0; i < NWB_TEL_REPORT_MARKS + 1; i++) {
        char text[32];
        const int len = snprintf(text, sizeof(text), "mark %u", i);

        assert_int_equal(nwb_tel_encode_mark(&b, START_MONO + i, 0, 1, text, (size_t)len), 0);
    }
    json = tel_built_report(b.data, b.len, NULL);
    tel_expect(json, "\"countersNotKept\":1,");
    tel_expect(json, "\"marks\":{\"count\":1001,\"listed\":[{\"frame\":0,\"tsMs\":0.000000,");
    tel_expect(json, "\"text\":\"mark 999\"}],\"notListed\":1}");
    assert_null(strstr(json, "\"mark 1000\""));
    {
        /* 1,024 counters listed: count their "series" keys. */
        size_t k = 0;

        for (const char *p = strstr(json, "\"series\":[{\"frame\""); p != NULL;
             p = strstr(p + 1, "\"series\":[{\"frame\"")) {
            k++;
        }
        assert_int_equal(k, NWB_TEL_REPORT_COUNTERS_MAX);
    }
    free(json);
    nwb_buf_cleanup(&b);
    free(names);
    free(c);
}

/* A counter sampled over more frames than the series has points: pairs of frames merge, a
 * one-frame spike stays a point's max, the mean stays sample-weighted. */
static void test_profile_counter_series_downsamples_by_frame(void **state)
{
    static const char *const q[] = {"q"};
    nwb_buf_t b;
    char *json;

    (void)state;
    nwb_buf_init(&b, 8u << 20);
    tel_put_header(&b, 1);
    put_strings(&b, 0, q, 1);
    for (uint64_t f = 0; f < 2 * NWB_TEL_REPORT_MEMORY_POINTS + 2; f++) {
        nwb_tel_counter_t c[2] = {{nm("q"), START_MONO + f, f == 77 ? 1000.0 : 1.0, 1},
                                  {nm("q"), START_MONO + f + 1, 3.0, 1}};

        /* Frame 5 has one sample only: the weights differ. */
        assert_int_equal(nwb_tel_encode_counters(&b, START_MONO + f, f, c, f == 5 ? 1 : 2), 0);
    }
    json = tel_built_report(b.data, b.len, NULL);
    /* 258 frames at width 4 (128 points of 2 filled once): 65 points, the first frames 0..3. */
    tel_expect(json, "\"name\":\"q\",\"samples\":515,\"frames\":258,\"min\":1.000000,"
                     "\"max\":1000.000000,");
    /* Frames 4..7: samples 1,3 | 1 | 1,3 | 1,3: 7 samples, sum 13, mean 1.857143. */
    tel_expect(json, "\"series\":[{\"frame\":0,\"min\":1.000000,\"max\":3.000000,"
                     "\"mean\":2.000000},{\"frame\":4,\"min\":1.000000,\"max\":3.000000,"
                     "\"mean\":1.857143},");
    tel_expect(json, "{\"frame\":76,\"min\":1.000000,\"max\":1000.000000,");
    tel_expect(json, "{\"frame\":256,\"min\":1.000000,\"max\":3.000000,\"mean\":2.000000}]}]");
    free(json);
    nwb_buf_cleanup(&b);
}

static void test_profile_string_bounds_at_the_edge(void **state)
{
    nwb_tel_string_t *s = calloc(NWB_TEL_STRINGS_MAX, sizeof(*s));
    char (*text)[NWB_TEL_STRING_MAX + 1] = calloc(NWB_TEL_STRINGS_MAX, sizeof(*text));
    const uint32_t tables = NWB_TEL_REPORT_STRINGS_MAX / NWB_TEL_STRINGS_MAX;
    nwb_buf_t b;
    char *json;

    (void)state;
    assert_non_null(s);
    assert_non_null(text);
    /* 65,536 short strings fill the count; one more is not kept. */
    nwb_buf_init(&b, 64u << 20);
    tel_put_header(&b, 1);
    for (uint32_t t = 0; t <= tables; t++) {
        const uint32_t n = t < tables ? NWB_TEL_STRINGS_MAX : 1;

        for (uint32_t i = 0; i < n; i++) {
            const int len = snprintf(text[i], sizeof(text[i]), "n%u.%u", t, i);

            s[i].str = text[i];
            s[i].len = (uint16_t)len;
            s[i].name = nwb_name_hash(text[i], (size_t)len);
        }
        assert_int_equal(nwb_tel_encode_strings(&b, START_MONO, 0, s, n), 0);
    }
    json = tel_built_report(b.data, b.len, NULL);
    tel_expect(json, "\"namesNotKept\":1,");
    free(json);
    /* 16,384 strings of 256 bytes fill the 4 MiB; one more is not kept. */
    nwb_buf_reset(&b);
    tel_put_header(&b, 1);
    for (uint32_t t = 0; t <= 16; t++) {
        const uint32_t n = t < 16 ? NWB_TEL_STRINGS_MAX : 1;

        for (uint32_t i = 0; i < n; i++) {
            memset(text[i], 'x', NWB_TEL_STRING_MAX);
            snprintf(text[i], sizeof(text[i]), "%u.%u", t, i);
            text[i][strlen(text[i])] = 'x';
            s[i].str = text[i];
            s[i].len = NWB_TEL_STRING_MAX;
            s[i].name = nwb_name_hash(text[i], NWB_TEL_STRING_MAX);
        }
        assert_int_equal(nwb_tel_encode_strings(&b, START_MONO, 0, s, n), 0);
    }
    assert_true(16u * NWB_TEL_STRINGS_MAX * NWB_TEL_STRING_MAX == NWB_TEL_REPORT_STRING_BYTES_MAX);
    json = tel_built_report(b.data, b.len, NULL);
    tel_expect(json, "\"namesNotKept\":1,");
    free(json);
    nwb_buf_cleanup(&b);
    free(text);
    free(s);
}

static void test_profile_thread_bounds_at_the_edge(void **state)
{
    const uint32_t n = NWB_TEL_REPORT_THREAD_SCOPES_MAX + 1;
    nwb_tel_cpu_scope_t *cpu = calloc(n, sizeof(*cpu));
    nwb_buf_t b;
    char *json;

    (void)state;
    assert_non_null(cpu);
    nwb_buf_init(&b, 8u << 20);
    tel_put_header(&b, 1);
    /* 257 threads, one scope each (name per thread), then 4,097 names on thread 1: the 257th
     * thread is not kept, nor the 4,097th (thread, name) row. */
    for (uint32_t i = 0; i < n; i++) {
        cpu[i].name = 0x1000 + i;
        cpu[i].start_ns = START_MONO;
        cpu[i].end_ns = START_MONO + 1000;
        cpu[i].thread = i <= NWB_TEL_REPORT_THREADS_MAX ? i + 1 : 1;
        cpu[i].depth = 0;
    }
    put_perf(&b, 0, cpu, n);
    json = tel_built_report(b.data, b.len, NULL);
    tel_expect(json, "\"threadsNotKept\":1,\"threadScopesNotKept\":1}");
    tel_expect(json, "{\"thread\":256,\"name\":null,\"records\":0,");
    assert_null(strstr(json, "{\"thread\":257,\"name\":null,\"records\":0,"));
    free(json);
    nwb_buf_cleanup(&b);
    free(cpu);
}

static void test_profile_a_1_0_stream_has_empty_1_1_sections(void **state)
{
    const nwb_tel_cpu_scope_t cpu[] = {scope("frame", 0, 10, 7, 0), scope("job", 1, 3, 8, 0)};
    nwb_buf_t b;
    char *json;

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    tel_put_header(&b, 1);
    put_perf(&b, 0, cpu, 2);
    json = tel_built_report(b.data, b.len, NULL);
    tel_expect(json, "\"threads\":[{\"thread\":7,\"name\":null,\"records\":0,\"dropped\":0,"
                     "\"malformed\":0,\"scopes\":1,\"cpuMs\":10.000000},{\"thread\":8,"
                     "\"name\":null,\"records\":0,\"dropped\":0,\"malformed\":0,\"scopes\":1,"
                     "\"cpuMs\":2.000000}],\"counters\":[],\"marks\":{\"count\":0,\"listed\":[],"
                     "\"notListed\":0},\"profiler\":{\"dropped\":0,\"malformed\":0,"
                     "\"namesNotKept\":0,\"countersNotKept\":0,\"threadsNotKept\":0,"
                     "\"threadScopesNotKept\":0}}");
    tel_expect(json, "\"thread\":0,\"stringTable\":0,\"counterFrame\":0,\"mark\":0,");
    free(json);
    nwb_buf_cleanup(&b);
}

static char *trace_of(const nwb_buf_t *b, const nwb_namesym_table_t *names)
{
    nwb_tel_decode_result_t res;
    char *buf = NULL;
    size_t blen = 0;
    size_t bad = 0;
    FILE *f = open_memstream(&buf, &blen);

    assert_non_null(f);
    assert_int_equal(nwb_tel_chrome_write(b->data, b->len, names, f, &res), 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(res.status, 0);
    if (nwb_test_json_check(buf, blen, &bad) != 0) {
        fail_msg("the trace is not strict JSON at byte %zu", bad);
    }
    return buf;
}

static void test_profile_trace_names_tracks_and_writes_counters_and_marks(void **state)
{
    nwb_buf_t b;
    char *trace;

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    profile_stream(&b);
    trace = trace_of(&b, NULL);
    tel_expect(trace, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
                      "\"args\":{\"name\":\"frames\"}},{\"name\":\"thread_sort_index\","
                      "\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"sort_index\":0}}");
    tel_expect(trace, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":10,"
                      "\"args\":{\"name\":\"main\"}},{\"name\":\"thread_sort_index\","
                      "\"ph\":\"M\",\"pid\":1,\"tid\":10,\"args\":{\"sort_index\":1}}");
    tel_expect(trace, "\"tid\":20,\"args\":{\"name\":\"audio\"}}");
    tel_expect(trace, "\"tid\":30,\"args\":{\"name\":\"thread 30\"}}");
    tel_expect(trace, "\"tid\":30,\"args\":{\"sort_index\":3}}");
    /* Slices on their thread's track, named from the stream's strings. */
    tel_expect(trace, "{\"name\":\"render/shadows\",\"ph\":\"X\",\"cat\":\"cpu\",\"pid\":1,"
                      "\"tid\":10,\"ts\":3000.000,\"dur\":1000.000,");
    tel_expect(trace, "{\"name\":\"draws\",\"ph\":\"C\",\"cat\":\"counter\",\"pid\":1,\"tid\":10,"
                      "\"ts\":5000.000,\"args\":{\"value\":100.000000}}");
    tel_expect(trace, "{\"name\":\"voices\",\"ph\":\"C\",\"cat\":\"counter\",\"pid\":1,"
                      "\"tid\":20,\"ts\":7000.000,\"args\":{\"value\":8.000000}}");
    tel_expect(trace, "{\"name\":\"level loaded\",\"ph\":\"i\",\"cat\":\"mark\",\"pid\":1,"
                      "\"tid\":10,\"s\":\"t\",\"ts\":2500.000,\"args\":{\"frame\":0}}");
    tel_expect(trace, "{\"name\":\"boss\",\"ph\":\"i\",\"cat\":\"mark\",\"pid\":1,\"tid\":30,");
    free(trace);
    nwb_buf_cleanup(&b);
}

static void test_profile_dump_prints_the_new_kinds(void **state)
{
    char *out = NULL;
    size_t olen = 0;
    nwb_buf_t b;
    FILE *f;

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    profile_stream(&b);
    f = open_memstream(&out, &olen);
    assert_non_null(f);
    assert_int_equal(nwb_tel_dump(b.data, b.len, NULL, f), 0);
    assert_int_equal(fclose(f), 0);
    tel_expect(out, " stringTable v1 size=");
    tel_expect(out, " count=6 \"frame\" \"render\" \"render/shadows\" \"audio.mix\" \"draws\" "
                    "\"voices\"\n");
    tel_expect(out, " counterFrame v1 size=40 ts=5001000 frame=0 count=1 \"draws\"=100@10\n");
    tel_expect(out, " count=2 \"voices\"=4@20 \"voices\"=8@20\n");
    tel_expect(out, " mark v1 size=20 ts=2501000 frame=0 thread=10 \"level loaded\"\n");
    tel_expect(out, " thread v1 size=36 ts=1000 frame=0 thread=10 name=\"main\" records=5 "
                    "dropped=0 malformed=1\n");
    tel_expect(out, " thread=20 name=null records=3 dropped=1 malformed=0\n");
    tel_expect(out, "\nstatus=ok ");
    free(out);
    nwb_buf_cleanup(&b);
}

static char *detail_of(const uint8_t *d, size_t len, uint64_t frame)
{
    nwb_buf_t out;
    nwb_json_t j;
    size_t bad = 0;
    char *s;

    nwb_buf_init(&out, 64u << 20);
    nwb_json_init(&j, &out, NULL);
    assert_int_equal(nwb_tel_frame_detail_write(d, len, frame, NULL, &j), 0);
    assert_int_equal(nwb_json_finish(&j), 0);
    s = tel_json_take(&out, &bad);
    if (s == NULL) {
        fail_msg("the frame detail is not strict JSON at byte %zu", bad);
    }
    return s;
}

static void test_profile_frame_detail_names_threads_lists_counters_and_marks(void **state)
{
    nwb_buf_t b;
    char *json;

    size_t cuts[4];

    (void)state;
    nwb_buf_init(&b, 1 << 20);
    profile_stream(&b);
    /* The two uploads, not the resent one (a frame detail reads one upload's bytes). */
    assert_int_equal(tel_segment_offsets(b.data, b.len, cuts, 4), 3);
    json = detail_of(b.data, cuts[2], 0);
    tel_expect(json, "\"threads\":[{\"thread\":10,\"name\":\"main\",\"scopes\":[{\"name\":\"frame\","
                     "\"depth\":0,");
    tel_expect(json, "{\"name\":\"render/shadows\",\"depth\":2,");
    tel_expect(json, "{\"thread\":20,\"name\":\"audio\",\"scopes\":[{\"name\":\"audio.mix\",");
    tel_expect(json, "{\"thread\":30,\"name\":null,\"scopes\":[{\"name\":\"render\",");
    tel_expect(json, "\"frameGraph\":null,\"counters\":["
                     "{\"name\":\"draws\",\"value\":100.000000,\"thread\":10,\"tsMs\":5.000000},"
                     "{\"name\":\"voices\",\"value\":4.000000,\"thread\":20,\"tsMs\":6.000000},"
                     "{\"name\":\"voices\",\"value\":8.000000,\"thread\":20,\"tsMs\":7.000000}],"
                     "\"moreCounters\":0,\"marks\":[{\"thread\":10,\"tsMs\":2.500000,"
                     "\"text\":\"level loaded\"}],\"moreMarks\":0,\"logs\":[],\"moreLogs\":0}");
    free(json);
    /* Only the first upload: thread 20 has no name there. */
    json = detail_of(b.data, cuts[1], 0);
    tel_expect(json, "{\"thread\":20,\"name\":null,\"scopes\":[");
    free(json);
    nwb_buf_cleanup(&b);
}

static void test_profile_frame_detail_bounds_counters_and_marks(void **state)
{
    nwb_tel_counter_t *c = calloc(NWB_TEL_COUNTERS_MAX, sizeof(*c));
    const nwb_tel_cpu_scope_t cpu[] = {scope("frame", 0, 10, 1, 0)};
    nwb_buf_t b;
    char *json;

    (void)state;
    assert_non_null(c);
    nwb_buf_init(&b, 8u << 20);
    tel_put_header(&b, 1);
    for (uint32_t i = 0; i < NWB_TEL_COUNTERS_MAX; i++) {
        c[i].name = nm("x");
        c[i].ts_ns = START_MONO;
        c[i].value = 1.0;
        c[i].thread = 1;
    }
    assert_int_equal(NWB_TEL_FRAME_DETAIL_COUNTERS, NWB_TEL_COUNTERS_MAX);
    assert_int_equal(nwb_tel_encode_counters(&b, START_MONO, 3, c, NWB_TEL_COUNTERS_MAX), 0);
    assert_int_equal(nwb_tel_encode_counters(&b, START_MONO, 3, c, 1), 0);
    for (uint32_t i = 0; i < NWB_TEL_FRAME_DETAIL_MARKS + 1; i++) {
        put_mark(&b, START_MONO + i, 3, 1, "m");
    }
    put_perf(&b, 3, cpu, 1);
    json = detail_of(b.data, b.len, 3);
    tel_expect(json, "\"moreCounters\":1,");
    tel_expect(json, "\"moreMarks\":1,");
    free(json);
    nwb_buf_cleanup(&b);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_report_threads_counters_marks_and_profiler),
        cmocka_unit_test(test_profile_stream_strings_beat_the_sidecar),
        cmocka_unit_test(test_profile_counter_and_mark_bounds_at_the_edge),
        cmocka_unit_test(test_profile_counter_series_downsamples_by_frame),
        cmocka_unit_test(test_profile_string_bounds_at_the_edge),
        cmocka_unit_test(test_profile_thread_bounds_at_the_edge),
        cmocka_unit_test(test_profile_a_1_0_stream_has_empty_1_1_sections),
        cmocka_unit_test(test_profile_trace_names_tracks_and_writes_counters_and_marks),
        cmocka_unit_test(test_profile_dump_prints_the_new_kinds),
        cmocka_unit_test(test_profile_frame_detail_names_threads_lists_counters_and_marks),
        cmocka_unit_test(test_profile_frame_detail_bounds_counters_and_marks),
    };

    return cmocka_run_group_tests_name("telemetry.profile_readers", tests, NULL, NULL);
}
