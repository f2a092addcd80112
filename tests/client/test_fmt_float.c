/* SPDX-License-Identifier: MIT */
/*
 * test_fmt_float.c - the worker's exact %f fast path (client_fmt_float.h) against glibc's
 * snprintf: edge values, exact ties, random values over every supported flag, width and
 * precision, cut output, fallbacks (NaN, inf, range, rounding modes), through nwb__fmt_render;
 * and the parser's short cut for bare conversions ("%d", "%f", ...).
 */
#define _GNU_SOURCE
#undef NWB_FINAL
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_fmt.h"
#include "client_fmt_float.h"

/* Random values per run; NWB_TEST_FMTF_N=N overrides (e.g. 50000000 for a long soak). */
#define RANDOM_DEFAULT 1000000u

/* A spec and whether it carries a '*' width and/or a '*' precision. */
struct spec {
    const char *fmt;
    int star_w;
    int star_p;
};

/* Specs inside the fast path (for in-range values). */
static const struct spec fast_specs[] = {
    {"%f", 0, 0},       {"%.0f", 0, 0},    {"%.1f", 0, 0},   {"%.2f", 0, 0},   {"%.3f", 0, 0},
    {"%.4f", 0, 0},     {"%.5f", 0, 0},    {"%.6f", 0, 0},   {"%.7f", 0, 0},   {"%.8f", 0, 0},
    {"%.9f", 0, 0},     {"%.10f", 0, 0},   {"%.12f", 0, 0},  {"%.15f", 0, 0},  {"%.16f", 0, 0},
    {"%.17f", 0, 0},    {"%.f", 0, 0},     {"%F", 0, 0},     {"%lf", 0, 0},    {"%.3lf", 0, 0},
    {"%10.3f", 0, 0},   {"%-10.3f", 0, 0}, {"%+f", 0, 0},    {"% f", 0, 0},    {"%010.2f", 0, 0},
    {"%-+08.1f", 0, 0}, {"%#.0f", 0, 0},   {"%#f", 0, 0},    {"%+ .2f", 0, 0}, {"% 012.4f", 0, 0},
    {"%-0 9.0f", 0, 0}, {"%100.1f", 0, 0}, {"%*.*f", 1, 1},  {"%.*f", 0, 1},   {"%*f", 1, 0},
    {"%-*.*f", 1, 1},   {"%0*.3f", 1, 0},  {"%#*.*F", 1, 1}, {"%+.17f", 0, 0}, {"%3.3f", 0, 0},
};

/* Specs the fast path must refuse. */
static const struct spec slow_specs[] = {
    {"%.18f", 0, 0}, {"%.30f", 0, 0}, {"%101f", 0, 0}, {"%'f", 0, 0},
    {"%'.2f", 0, 0}, {"%e", 0, 0},    {"%g", 0, 0},    {"%Lf", 0, 0},
};

#define NSPECS (sizeof(fast_specs) / sizeof(fast_specs[0]))

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1du;
}

static double from_bits(uint64_t b)
{
    double v;

    memcpy(&v, &b, sizeof(v));
    return v;
}

struct tally {
    uint64_t compared;
    uint64_t fast;
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int ref_snprintf(char *dst, size_t room, const struct spec *sp, int w, int p, double v)
{
    if (sp->star_w && sp->star_p) {
        return snprintf(dst, room, sp->fmt, w, p, v);
    }
    if (sp->star_w) {
        return snprintf(dst, room, sp->fmt, w, v);
    }
    if (sp->star_p) {
        return snprintf(dst, room, sp->fmt, p, v);
    }
    return snprintf(dst, room, sp->fmt, v);
}
#pragma GCC diagnostic pop

/*
 * Compare one spec/value with snprintf (full room and a cut room). Fails the
 * test on any difference. Returns 1 when the fast path took it.
 */
static int check_one(const struct spec *sp, int w, int p, double v, size_t cut_room,
                     struct tally *t)
{
    char ref[512];
    char got[512];
    int rn;
    int gn;

    rn = ref_snprintf(ref, sizeof(ref), sp, w, p, v);
    memset(got, 'Z', sizeof(got));
    gn = nwb__fmt_float_f(got, sizeof(got), sp->fmt, strlen(sp->fmt), w, p, v);
    t->compared++;
    if (gn < 0) {
        return 0;
    }
    t->fast++;
    if (gn != rn || strcmp(got, ref) != 0) {
        print_error("mismatch: spec %s w %d p %d value %a (%.17g): snprintf \"%s\" (%d), fast "
                    "\"%s\" (%d)\n",
                    sp->fmt, w, p, v, v, ref, rn, got, gn);
        fail();
    }
    /* Cut output: the same prefix, a NUL, nothing written past the room. */
    rn = ref_snprintf(ref, cut_room, sp, w, p, v);
    memset(got, 'Z', sizeof(got));
    gn = nwb__fmt_float_f(got, cut_room, sp->fmt, strlen(sp->fmt), w, p, v);
    if (gn != rn || (cut_room > 0 && strcmp(got, ref) != 0) || got[cut_room] != 'Z') {
        print_error("cut mismatch: spec %s room %zu value %a: \"%s\" vs \"%s\"\n", sp->fmt,
                    cut_room, v, ref, got);
        fail();
    }
    return 1;
}

/* Every fast spec, with '*' arguments drawn around the edges. */
static void check_all_specs(double v, struct tally *t)
{
    for (size_t i = 0; i < NSPECS; i++) {
        const int w = (int)(rnd() % 41u) - 20;
        const int p = (int)(rnd() % 21u) - 3; /* -3..17: negative means "none" */

        (void)check_one(&fast_specs[i], w, p, v, (size_t)(rnd() % 24u), t);
    }
}

static void test_fmt_float_matches_snprintf_on_edge_values(void **state)
{
    static const double edges[] = {0.0,
                                   1.0,
                                   0.5,
                                   1.5,
                                   2.5,
                                   0.125,
                                   0.375,
                                   0.0625,
                                   1e15,
                                   1e16,
                                   123456789.125,
                                   0.1,
                                   0.2,
                                   0.3,
                                   0.05,
                                   0.005,
                                   0.0005,
                                   0.00005,
                                   0.000005,
                                   0.0000005,
                                   0.0000001,
                                   0.9999995,
                                   0.99999949999999994,
                                   9.5,
                                   99.5,
                                   999999.5,
                                   4503599627370495.5,
                                   4503599627370496.0,
                                   9007199254740991.0,
                                   9007199254740992.0, /* 2^53: outside, falls back */
                                   1e300,
                                   DBL_MIN,
                                   DBL_TRUE_MIN,
                                   DBL_EPSILON,
                                   18446744073.709551615,
                                   184467440737.09551615,
                                   3.14159265358979323846,
                                   2.718281828459045,
                                   16.666666666666668};
    struct tally t = {0, 0};

    (void)state;
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        check_all_specs(edges[i], &t);
        check_all_specs(-edges[i], &t);
        check_all_specs(nextafter(edges[i], 0.0), &t);
        check_all_specs(nextafter(edges[i], INFINITY), &t);
        check_all_specs(-nextafter(edges[i], INFINITY), &t);
    }
    /* Around the bound round(|x| * 10^p) < 2^64 for each precision. */
    for (int p = 0; p <= NWB__FMTF_PREC_MAX; p++) {
        const double b = 18446744073709551616.0 / pow(10.0, p);
        const struct spec sp = {"%.*f", 0, 1};
        double v = b;

        for (int k = 0; k < 40; k++) {
            (void)check_one(&sp, 0, p, v, 7, &t);
            (void)check_one(&sp, 0, p, -v, 7, &t);
            v = nextafter(v, 0.0);
        }
    }
    print_message("edge values: %llu compared, %llu by the fast path\n",
                  (unsigned long long)t.compared, (unsigned long long)t.fast);
    assert_true(t.fast > t.compared / 2);
}

static void test_fmt_float_rounds_exact_ties_to_even_like_glibc(void **state)
{
    char buf[64];
    struct tally t = {0, 0};

    (void)state;
    /* The documented cases, by value. */
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%.2f", strlen("%.2f"), 0, 0, 0.125), 4);
    assert_string_equal(buf, "0.12");
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%.2f", strlen("%.2f"), 0, 0, 0.375), 4);
    assert_string_equal(buf, "0.38");
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%.0f", strlen("%.0f"), 0, 0, 0.5), 1);
    assert_string_equal(buf, "0");
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%.0f", strlen("%.0f"), 0, 0, 1.5), 1);
    assert_string_equal(buf, "2");
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%.0f", strlen("%.0f"), 0, 0, 2.5), 1);
    assert_string_equal(buf, "2");
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%.1f", strlen("%.1f"), 0, 0, 0.05), 3);
    assert_string_equal(buf, "0.1"); /* 0.05 is a little above 1/20 in binary: not a tie */
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%f", strlen("%f"), 0, 0, -0.0), 9);
    assert_string_equal(buf, "-0.000000");
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%f", strlen("%f"), 0, 0, -0.0000001), 9);
    assert_string_equal(buf, "-0.000000");
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%.0f", strlen("%.0f"), 0, 0, 1e15), 16);
    assert_string_equal(buf, "1000000000000000");

    /* Exact ties at precision p are odd / 2^(p+1): many of them, at p and around it. */
    for (unsigned i = 0; i < 150000u; i++) {
        const int p = (int)(rnd() % (NWB__FMTF_PREC_MAX + 1u));
        const uint64_t odd = (rnd() >> (11 + rnd() % 40u)) | 1u;
        const double v = ldexp((double)odd, -(p + 1));
        const struct spec sp = {"%.*f", 0, 1};

        (void)check_one(&sp, 0, p, v, 5, &t);
        (void)check_one(&sp, 0, p, -v, 5, &t);
        if (p > 0) {
            (void)check_one(&sp, 0, p - 1, v, 5, &t);
        }
        if (p < NWB__FMTF_PREC_MAX) {
            (void)check_one(&sp, 0, p + 1, v, 5, &t);
        }
    }
    print_message("ties: %llu compared, %llu by the fast path\n", (unsigned long long)t.compared,
                  (unsigned long long)t.fast);
    assert_true(t.fast > t.compared / 2);
}

/* A value from one of four families, most of them inside the fast path. */
static double random_value(void)
{
    const uint64_t r = rnd();

    switch (r & 3u) {
    case 0: { /* any finite double with |x| < 2^53: exponent uniform */
        const uint64_t bexp = (r >> 2) % 1076u;

        return from_bits((rnd() & ((UINT64_C(1) << 52) - 1u)) | (bexp << 52) | (r & 1u) << 63);
    }
    case 1: { /* decimal-looking values, the ones logs print: k / 10^j, near decimal ties */
        const double k = (double)(rnd() % 100000000u);
        const double v = k / pow(10.0, (double)((r >> 2) % 12u));

        return (r >> 8) & 1u ? -v : v;
    }
    case 2: { /* millisecond-like durations */
        return (double)(rnd() % 1000000u) * 0.001 + (double)(rnd() % 1000u) * 1e-9;
    }
    default: /* any bit pattern at all: NaN, inf and huge values fall back */
        return from_bits(rnd());
    }
}

static void test_fmt_float_matches_snprintf_on_random_values(void **state)
{
    const char *env = getenv("NWB_TEST_FMTF_N");
    const uint64_t n = env != NULL ? strtoull(env, NULL, 10) : RANDOM_DEFAULT;
    struct tally t = {0, 0};

    (void)state;
    for (uint64_t i = 0; i < n; i++) {
        const struct spec *sp = &fast_specs[rnd() % NSPECS];
        const int w = (int)(rnd() % 41u) - 20;
        const int p = (int)(rnd() % 21u) - 3;

        (void)check_one(sp, w, p, random_value(), (size_t)(rnd() % 24u), &t);
    }
    print_message("random: %llu compared, %llu by the fast path\n", (unsigned long long)t.compared,
                  (unsigned long long)t.fast);
    assert_true(t.compared == n);
    assert_true(t.fast > n / 2);
}

static void test_fmt_float_falls_back_outside_its_range(void **state)
{
    static const double outside[] = {9007199254740992.0, 1e300, -1e20, DBL_MAX};
    char buf[256];

    (void)state;
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%f", strlen("%f"), 0, 0, NAN), -1);
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%f", strlen("%f"), 0, 0, -NAN), -1);
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%f", strlen("%f"), 0, 0, INFINITY), -1);
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%F", strlen("%F"), 0, 0, -INFINITY), -1);
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
        assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%f", strlen("%f"), 0, 0, outside[i]),
                         -1);
    }
    /* round(|x| * 10^p) must stay below 2^64 */
    assert_int_equal(
        nwb__fmt_float_f(buf, sizeof(buf), "%.6f", strlen("%.6f"), 0, 0, 18446744073709.6), -1);
    assert_true(nwb__fmt_float_f(buf, sizeof(buf), "%.6f", strlen("%.6f"), 0, 0, 18446744073708.0) >
                0);
    for (size_t i = 0; i < sizeof(slow_specs) / sizeof(slow_specs[0]); i++) {
        assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), slow_specs[i].fmt,
                                          strlen(slow_specs[i].fmt), 0, 0, 1.25),
                         -1);
    }
    /* '*' arguments beyond the bounds */
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%*f", strlen("%*f"), 101, 0, 1.25), -1);
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%*f", strlen("%*f"), -101, 0, 1.25), -1);
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%.*f", strlen("%.*f"), 0, 18, 1.25), -1);
    /* the edges that are inside */
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%100f", strlen("%100f"), 0, 0, 1.25), 100);
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%*f", strlen("%*f"), -100, 0, 1.25), 100);
    assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%.17f", strlen("%.17f"), 0, 0, 1.25), 19);
    assert_int_equal(
        nwb__fmt_float_f(buf, sizeof(buf), "%.0f", strlen("%.0f"), 0, 0, 9007199254740991.0), 16);
    assert_string_equal(buf, "9007199254740991");
}

static void test_fmt_float_falls_back_when_rounding_mode_is_not_nearest(void **state)
{
    static const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    char buf[64];
    char ref[64];

    (void)state;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        assert_int_equal(fesetround(modes[i]), 0);
        assert_int_equal(nwb__fmt_float_f(buf, sizeof(buf), "%.2f", strlen("%.2f"), 0, 0, 0.125),
                         -1);
        assert_int_equal(fesetround(FE_TONEAREST), 0);
    }
    /* Through the renderer: the message equals snprintf's in that mode. */
    {
        const double v = 0.125;
        uint8_t slots[8];
        uint8_t flags = 0;

        memcpy(slots, &v, sizeof(v));
        assert_int_equal(fesetround(FE_UPWARD), 0);
        nwb__fmt_render("%.2f", slots, sizeof(slots), NULL, 0, buf, sizeof(buf), &flags);
        snprintf(ref, sizeof(ref), "%.2f", v);
        assert_int_equal(fesetround(FE_TONEAREST), 0);
        assert_string_equal(ref, "0.13");
        assert_string_equal(buf, ref);
    }
    assert_true(nwb__fmt_float_f(buf, sizeof(buf), "%.2f", strlen("%.2f"), 0, 0, 0.125) == 4);
}

static void test_fmt_render_prints_floats_like_snprintf(void **state)
{
    char got[256];
    char ref[256];

    (void)state;
    for (unsigned i = 0; i < 200000u; i++) {
        const int frame = (int)(rnd() % 1000000u);
        const double ms = random_value();
        const char *name = (rnd() & 1u) ? "render" : "audio";
        uint8_t slots[24];
        uint8_t strs[16];
        const uint32_t len = (uint32_t)strlen(name);
        const uint32_t sflags = 0;
        uint8_t flags = 0;
        size_t n;

        memset(slots, 0, sizeof(slots));
        memcpy(slots, &frame, sizeof(frame));
        memcpy(slots + 8, &ms, sizeof(ms));
        memcpy(slots + 16, &len, 4);
        memcpy(slots + 20, &sflags, 4);
        memcpy(strs, name, len + 1u);
        n = nwb__fmt_render("frame %d took %f ms on %s", slots, sizeof(slots), strs, len + 1u, got,
                            sizeof(got), &flags);
        snprintf(ref, sizeof(ref), "frame %d took %f ms on %s", frame, ms, name);
        if (strlen(ref) < sizeof(got) - 4u) {
            assert_string_equal(got, ref);
            assert_int_equal(n, strlen(ref));
            assert_int_equal(flags, 0);
        }
    }
}

static void test_fmt_next_bare_conversions_parse_like_their_long_forms(void **state)
{
    /* Each bare form against the same conversion with a flag, which takes the full parser. */
    static const struct {
        const char *bare;
        const char *full;
    } pairs[] = {{"%d", "%-d"}, {"%i", "%-i"}, {"%o", "%-o"}, {"%u", "%-u"}, {"%x", "%-x"},
                 {"%X", "%-X"}, {"%c", "%-c"}, {"%s", "%-s"}, {"%f", "%-f"}, {"%F", "%-F"},
                 {"%e", "%-e"}, {"%E", "%-E"}, {"%g", "%-g"}, {"%G", "%-G"}, {"%a", "%-a"},
                 {"%A", "%-A"}, {"%p", "%-p"}};

    (void)state;
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        struct nwb__conv b;
        struct nwb__conv f;
        char text[16];

        snprintf(text, sizeof(text), "ab%scd", pairs[i].bare);
        assert_int_equal(nwb__fmt_next(text, &b), 1);
        assert_int_equal(nwb__fmt_next(pairs[i].full, &f), 1);
        assert_ptr_equal(b.start, text + 2);
        assert_int_equal(b.len, 2);
        assert_int_equal(b.kind, f.kind);
        assert_int_equal(b.star_width, 0);
        assert_int_equal(b.star_prec, 0);
        assert_int_equal(b.prec, -1);
        assert_int_equal(f.prec, -1);
    }
    /* Not bare: still the full parser (%%, %n, lengths, flags). */
    {
        struct nwb__conv c;

        assert_int_equal(nwb__fmt_next("%%", &c), 1);
        assert_int_equal(c.kind, 0);
        assert_int_equal(nwb__fmt_next("%n", &c), -2);
        assert_int_equal(nwb__fmt_next("%ld", &c), 1);
        assert_int_equal(c.kind, NWB__ARG_LONG);
        assert_int_equal(nwb__fmt_next("%m", &c), -1);
        assert_int_equal(nwb__fmt_next("no conversion", &c), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt_float_matches_snprintf_on_edge_values),
        cmocka_unit_test(test_fmt_float_rounds_exact_ties_to_even_like_glibc),
        cmocka_unit_test(test_fmt_float_matches_snprintf_on_random_values),
        cmocka_unit_test(test_fmt_float_falls_back_outside_its_range),
        cmocka_unit_test(test_fmt_float_falls_back_when_rounding_mode_is_not_nearest),
        cmocka_unit_test(test_fmt_render_prints_floats_like_snprintf),
        cmocka_unit_test(test_fmt_next_bare_conversions_parse_like_their_long_forms),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
