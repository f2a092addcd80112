/* SPDX-License-Identifier: MIT */
/*
 * log_line.c - the one-line text form of a record (nwb/log_line.h) and time
 * helpers. The formatter is on the server's ingest path: the date-time and the
 * "LEVEL THREAD PROGRAM " prefix are cached, digits go two at a time, and the
 * escape scan checks 16 bytes per step (SSE2, 8 with SWAR elsewhere) and copies
 * clean runs as it goes. The server's decoding formatter finds each '#' in the
 * same scan and looks its token up in the name table (namesym_table_int.h).
 */
#include <string.h>
#include <time.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "nwb/log.h"
#include "nwb/log_line.h"
#include "namesym_table_int.h"

uint64_t nwb_time_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t nwb_time_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static char *put_digits(char *p, unsigned v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + width;
}

static void civil_from_seconds(int64_t sec, struct tm *tm)
{
    const time_t t = (time_t)sec;

    gmtime_r(&t, tm);
}

void nwb_time_compact(uint64_t time_ns, char out[16])
{
    struct tm tm;
    char *p = out;

    civil_from_seconds((int64_t)(time_ns / 1000000000u), &tm);
    p = put_digits(p, (unsigned)(tm.tm_year + 1900), 4);
    p = put_digits(p, (unsigned)(tm.tm_mon + 1), 2);
    p = put_digits(p, (unsigned)tm.tm_mday, 2);
    *p++ = '-';
    p = put_digits(p, (unsigned)tm.tm_hour, 2);
    p = put_digits(p, (unsigned)tm.tm_min, 2);
    p = put_digits(p, (unsigned)tm.tm_sec, 2);
    *p = '\0';
}

/* "00" "01" ... "99": two digits per lookup. */
static const char digit_pairs[201] = "00010203040506070809"
                                     "10111213141516171819"
                                     "20212223242526272829"
                                     "30313233343536373839"
                                     "40414243444546474849"
                                     "50515253545556575859"
                                     "60616263646566676869"
                                     "70717273747576777879"
                                     "80818283848586878889"
                                     "90919293949596979899";

static void clock_update(nwb_log_line_clock_t *clock, int64_t sec)
{
    struct tm tm;
    char *p = clock->text;

    civil_from_seconds(sec, &tm);
    p = put_digits(p, (unsigned)(tm.tm_year + 1900), 4);
    *p++ = '-';
    p = put_digits(p, (unsigned)(tm.tm_mon + 1), 2);
    *p++ = '-';
    p = put_digits(p, (unsigned)tm.tm_mday, 2);
    *p++ = 'T';
    p = put_digits(p, (unsigned)tm.tm_hour, 2);
    *p++ = ':';
    p = put_digits(p, (unsigned)tm.tm_min, 2);
    *p++ = ':';
    p = put_digits(p, (unsigned)tm.tm_sec, 2);
    *p++ = '.';
    *p = '\0';
    clock->sec = sec;
}

/* Nine digits of @p v (< 10^9), zero-padded. */
static inline char *put_nine(char *p, unsigned v)
{
    const unsigned hi = v / 100000000u;
    unsigned lo = v % 100000000u;
    const unsigned a = lo / 10000u, b = lo % 10000u;

    *p = (char)('0' + hi);
    memcpy(p + 1, digit_pairs + 2 * (a / 100u), 2);
    memcpy(p + 3, digit_pairs + 2 * (a % 100u), 2);
    memcpy(p + 5, digit_pairs + 2 * (b / 100u), 2);
    memcpy(p + 7, digit_pairs + 2 * (b % 100u), 2);
    return p + 9;
}

static inline unsigned digit_count(uint64_t v)
{
    unsigned n = 1;

    while (v >= 10000u) {
        v /= 10000u;
        n += 4;
    }
    return n + (v >= 10u) + (v >= 100u) + (v >= 1000u);
}

/* The decimal digits of @p v, two per step, written from the end. */
static char *put_u64(char *p, uint64_t v)
{
    const unsigned n = digit_count(v);
    char *e = p + n;

    while (v >= 100u) {
        e -= 2;
        memcpy(e, digit_pairs + 2 * (v % 100u), 2);
        v /= 100u;
    }
    if (v >= 10u) {
        memcpy(e - 2, digit_pairs + 2 * v, 2);
    } else {
        e[-1] = (char)('0' + v);
    }
    return p + n;
}

/* Nonzero when any byte of @p w is below 0x20 or equal to 0x7f (SWAR, Hacker's Delight 6-1).
 * A tab is flagged too; the byte loop lets it through. */
static inline uint64_t word_needs_escape(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    const uint64_t del = w ^ (0x7full * ones);

    return ((w - 0x20u * ones) & ~w & highs) | ((del - ones) & ~del & highs);
}

/* The escaped form of one byte that needs it (a control byte other than tab, or DEL). */
static inline char *put_escape(char *p, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";

    *p++ = '\\';
    if (c == '\n') {
        *p++ = 'n';
    } else if (c == '\r') {
        *p++ = 'r';
    } else {
        *p++ = 'x';
        *p++ = hex[c >> 4];
        *p++ = hex[c & 15];
    }
    return p;
}

static inline int byte_plain(unsigned char c)
{
    return (c >= 0x20 && c != 0x7f) || c == '\t';
}

#if defined(__SSE2__)
/* Byte i 0xff when byte i of @p v must be escaped, else 0. */
static inline __m128i esc_bytes16(__m128i v)
{
    const __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
    const __m128i tab = _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'));
    const __m128i del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f));

    return _mm_or_si128(_mm_andnot_si128(tab, ctl), del);
}

/* Bit i set when byte i of @p v must be escaped. */
static inline unsigned esc_mask16(__m128i v)
{
    return (unsigned)_mm_movemask_epi8(esc_bytes16(v));
}

/*
 * Store the 16 bytes at @p u to @p p as they are, and return the offset of the
 * first that needs a look (an escape), or 16.
 */
static inline NWB_ALWAYS_INLINE unsigned block_copy(char *p, const unsigned char *u)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)u);
    const unsigned m = esc_mask16(v);

    _mm_storeu_si128((__m128i *)(void *)p, v);
    return m != 0 ? (unsigned)__builtin_ctz(m) : 16u;
}

/*
 * block_copy() that also stops at the bytes equal to @p mark's: '#' while
 * decoding, 0 after (a byte esc_mask16() flags anyway), so one movemask
 * serves both and the scan needs no branch on whether it still decodes.
 */
static inline NWB_ALWAYS_INLINE unsigned block_copy_marked(char *p, const unsigned char *u,
                                                           __m128i mark)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)u);
    const unsigned m =
        (unsigned)_mm_movemask_epi8(_mm_or_si128(esc_bytes16(v), _mm_cmpeq_epi8(v, mark)));

    _mm_storeu_si128((__m128i *)(void *)p, v);
    return m != 0 ? (unsigned)__builtin_ctz(m) : 16u;
}
#endif

/*
 * Copy @p len bytes of @p s to @p p, escaping bytes that would break the
 * one-line form. Most text has none: whole 16-byte blocks are checked and
 * stored at once (a block's bytes past an escape are stored too and then
 * overwritten), so stores may run up to 15 bytes past the output, never past
 * @p limit (blocks are used only when it leaves 4 bytes per input byte). The last partial block is
 * checked as the 16 bytes ending at the end of @p s, stored over output that equals its input when
 * it is clean.
 */
static char *put_escaped(char *p, const char *limit, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;

#if defined(__SSE2__)
    /* With 4 bytes of room per input byte (what nwb_log_line_max() gives), a block starting
     * at input i has at least 4 * (len - i) >= 64 bytes of room: no check per block. */
    const size_t blocks = (size_t)(limit - p) >= 4 * len ? len / 16 : 0;

    for (size_t b = 0; b < blocks && i + 16 <= len; b++) {
        const unsigned k = block_copy(p, u + i);

        p += k;
        i += k;
        if (NWB_LIKELY(k == 16)) {
            continue;
        }
        p = put_escape(p, u[i]);
        i++;
    }
    if (i < len && len >= 16 && i + 16 > len) {
        /* The 16 bytes ending at len: when they are clean, [len - 16, i) was copied as it is
         * (no escape there), so those output bytes can be stored again with the rest. */
        const size_t j = len - 16;
        const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(u + j));

        if (esc_mask16(v) == 0) {
            _mm_storeu_si128((__m128i *)(void *)(p - (i - j)), v);
            return p + (len - i);
        }
    }
#else
    (void)limit;
#endif
    while (i + 8 <= len) {
        uint64_t w;

        memcpy(&w, u + i, 8);
        if (word_needs_escape(w) == 0) {
            memcpy(p, &w, 8);
            p += 8;
            i += 8;
            continue;
        }
        for (const size_t e = i + 8; i < e; i++) {
            const unsigned char c = u[i];

            if (byte_plain(c)) {
                *p++ = (char)c;
            } else {
                p = put_escape(p, c);
            }
        }
    }
    for (; i < len; i++) {
        const unsigned char c = u[i];

        if (byte_plain(c)) {
            *p++ = (char)c;
        } else {
            p = put_escape(p, c);
        }
    }
    return p;
}

static const char *const level_text[NWB_LOG_LEVEL_COUNT] = {"INFO    ", "WARNING ", "ERROR   ",
                                                            "FATAL   "};

/* "[NAME]" at @p p, with the bytes that could end the field or the line escaped. */
static char *put_thread_name(char *p, const char *name, size_t len)
{
    *p++ = '[';
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)name[i];

        if (c <= 0x20 || c == 0x7f || c == '[' || c == ']') {
            static const char hex[] = "0123456789abcdef";

            *p++ = '\\';
            *p++ = 'x';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        } else {
            *p++ = (char)c;
        }
    }
    *p++ = ']';
    return p;
}

/* "LEVEL   THREAD[NAME] PROGRAM " at @p p. */
static char *put_prefix(char *p, unsigned level, const nwb_log_record_t *rec, const char *program,
                        size_t program_len)
{
    memcpy(p, level_text[level], 8);
    p += 8;
    p = put_u64(p, rec->thread_id);
    if (rec->thread_name_len > 0) {
        p = put_thread_name(p, rec->thread_name,
                            rec->thread_name_len < NWB_LOG_THREAD_NAME_MAX
                                ? rec->thread_name_len
                                : NWB_LOG_THREAD_NAME_MAX);
    }
    *p++ = ' ';
    memcpy(p, program, program_len);
    p += program_len;
    *p++ = ' ';
    return p;
}

/* The cached prefix for (level, thread, name), made on a miss; NULL when it would not fit. */
static inline NWB_ALWAYS_INLINE const struct nwb_log_line_prefix *
prefix_get(nwb_log_line_clock_t *clock, unsigned level, const nwb_log_record_t *rec,
           const char *program, size_t program_len)
{
    const uint64_t thread = rec->thread_id;
    const size_t name_len = rec->thread_name_len < NWB_LOG_THREAD_NAME_MAX
                                ? rec->thread_name_len
                                : NWB_LOG_THREAD_NAME_MAX;
    struct nwb_log_line_prefix *slot;

    if (clock->prefix_program != program || clock->prefix_program_len != program_len) {
        for (unsigned i = 0; i < NWB_LOG_LINE_PREFIX_SLOTS; i++) {
            clock->prefix[i].len = 0;
        }
        clock->prefix_program = program;
        clock->prefix_program_len = program_len;
    }
    /* 8 + 20 + 2 bytes besides the program and the name (escaped: at most 2 + 4 per byte). */
    if (program_len + (name_len > 0 ? 2u + 4u * name_len : 0u) > NWB_LOG_LINE_PREFIX_MAX - 30u) {
        return NULL;
    }
    slot = &clock->prefix[(thread ^ (thread >> 7) ^ level) % NWB_LOG_LINE_PREFIX_SLOTS];
    if (slot->len == 0 || slot->thread != thread || slot->level != level ||
        slot->name_len != name_len ||
        (name_len > 0 && memcmp(slot->name, rec->thread_name, name_len) != 0)) {
        slot->len =
            (uint32_t)(put_prefix(slot->text, level, rec, program, program_len) - slot->text);
        slot->thread = thread;
        slot->level = (uint8_t)level;
        slot->name_len = (uint8_t)name_len;
        if (name_len > 0) {
            memcpy(slot->name, rec->thread_name, name_len);
        }
    }
    return slot;
}

/* Everything before the message: time, level, thread, program and "file:line: ". */
static inline NWB_ALWAYS_INLINE char *put_head(char *dst, const char *limit,
                                               nwb_log_line_clock_t *clock,
                                               const nwb_log_record_t *rec, const char *program,
                                               size_t program_len)
{
    const int64_t sec = (int64_t)(rec->time_ns / 1000000000u);
    const unsigned nsec = (unsigned)(rec->time_ns % 1000000000u);
    const unsigned level = rec->level < NWB_LOG_LEVEL_COUNT ? rec->level : 0;
    const struct nwb_log_line_prefix *pre;
    char *p = dst;

    if (clock->sec != sec) {
        clock_update(clock, sec);
    }
    memcpy(p, clock->text, 20);
    p = put_nine(p + 20, nsec);
    *p++ = 'Z';
    *p++ = ' ';
    pre = prefix_get(clock, level, rec, program, program_len);
    if (pre == NULL) {
        p = put_prefix(p, level, rec, program, program_len);
    } else {
        if (pre->len <= 64u && limit - p >= 64) {
            memcpy(p, pre->text, 64u); /* one fixed-size copy */
        } else {
            memcpy(p, pre->text, pre->len);
        }
        p += pre->len;
    }
    if (rec->file_len > 0) {
        p = put_escaped(p, limit, rec->file, rec->file_len);
        *p++ = ':';
        p = put_u64(p, rec->line);
        *p++ = ':';
        *p++ = ' ';
    }
    return p;
}

size_t nwb_log_line_format(char *dst, size_t cap, nwb_log_line_clock_t *clock,
                           const nwb_log_record_t *rec, const char *program, size_t program_len)
{
    const char *const limit = dst + cap; /* the caller sized dst with nwb_log_line_max() */
    char *p = put_head(dst, limit, clock, rec, program, program_len);

    p = put_escaped(p, limit, rec->msg, rec->msg_len);
    *p++ = '\n';
    return (size_t)(p - dst);
}

/* Nonzero when a byte of @p w is '#' (SWAR zero-byte test of w ^ "########"). */
static inline uint64_t word_has_hash(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    const uint64_t x = w ^ (0x23ull * ones);

    return (x - ones) & ~x & highs;
}

_Static_assert(NWB__SLOT_INLINE == 40, "name_step() copies an inline name as 16 + 16 + 8 bytes");

/* The state of one decoding format: see nwb_log_line_format_names(). */
struct name_walk {
    const nwb_namesym_table_t *names;
    const unsigned char *u;
    size_t len;
    long long room_left; /* decoded_max - len - growth so far: what names may still add */
    int decoding;        /* 0 once a name would pass decoded_max: the rest stays raw */
    uint64_t decoded, unknown;
};

/*
 * The '#' at u[*i]: a known token's name, an unknown token as it is, or the
 * '#' alone, at @p p. Returns the new output end, or NULL when a name does
 * not fit before @p limit. Inlined into the scan: its state stays in registers.
 */
static inline NWB_ALWAYS_INLINE char *name_step(struct name_walk *nw, char *p, const char *limit,
                                                size_t *i)
{
    const unsigned char *const u = nw->u;
    const size_t at = *i, left = nw->len - at;
    const struct slot *s = NULL;
    size_t room;

    switch (token_at(nw->names, u, at, nw->len, &s)) {
    case TOKEN_NONE:
        *p++ = '#'; /* not a token */
        *i = at + 1;
        return p;
    case TOKEN_UNKNOWN:
        nw->unknown++;
        memcpy(p, u + at, NWB_NAME_TOKEN_LEN); /* '#' and hex digits: nothing to escape */
        *i = at + NWB_NAME_TOKEN_LEN;
        return p + NWB_NAME_TOKEN_LEN;
    case TOKEN_KNOWN:
        break;
    }
    if ((long long)s->len - (long long)NWB_NAME_TOKEN_LEN > nw->room_left) {
        nw->decoding = 0; /* this name would pass the bound: it and the rest stay raw */
        *p++ = '#';
        *i = at + 1;
        return p;
    }
    /* What the rest of the message may still take, escaped, after the name. */
    room = 4u * (left - NWB_NAME_TOKEN_LEN) + 1u;
    /* Names are sanitised when loaded (no control bytes or DEL): copied as they are. An inline
     * name is copied whole, 40 bytes at fixed offsets, when the line has room for that (then it
     * has room for the name: no other check). */
#if defined(__SSE2__)
    if (NWB_LIKELY(s->len < NWB__SLOT_INLINE && (size_t)(limit - p) >= NWB__SLOT_INLINE + room)) {
        const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s->name.inl);
        const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s->name.inl + 16));
        uint64_t c;

        memcpy(&c, s->name.inl + 32, 8);
        _mm_storeu_si128((__m128i *)(void *)p, a);
        _mm_storeu_si128((__m128i *)(void *)(p + 16), b);
        memcpy(p + 32, &c, 8);
    } else
#endif
    {
        if ((size_t)(limit - p) < s->len + room) {
            return NULL;
        }
        memcpy(p, slot_str(s), s->len);
    }
    nw->room_left -= (long long)s->len - (long long)NWB_NAME_TOKEN_LEN;
    nw->decoded++;
    *i = at + NWB_NAME_TOKEN_LEN;
    return p + s->len;
}

size_t nwb_log_line_format_names(char *dst, size_t cap, nwb_log_line_clock_t *clock,
                                 const nwb_log_record_t *rec, const char *program,
                                 size_t program_len, const struct nwb_namesym_table *names,
                                 size_t decoded_max, uint64_t *decoded, uint64_t *unknown)
{
    const char *const limit = dst + cap;
    struct name_walk nw;
    size_t i = 0;
    char *p;

    if (cap < nwb_log_line_max(rec, program_len)) {
        return 0;
    }
    nw.names = names;
    nw.u = (const unsigned char *)rec->msg;
    nw.len = rec->msg_len;
    nw.room_left = (long long)decoded_max - (long long)rec->msg_len;
    nw.decoding = 1;
    nw.decoded = nw.unknown = 0;
    p = put_head(dst, limit, clock, rec, program, program_len);
    /* From here the output keeps 4 bytes per input byte left, plus the '\n' (cap is at least
     * nwb_log_line_max(), and name_step() checks before it grows the line): a 16-byte store
     * always has room. */
#if defined(__SSE2__)
    __m128i mark = _mm_set1_epi8('#');

    while (i + 16 <= nw.len) {
        const unsigned k = block_copy_marked(p, nw.u + i, mark);

        p += k;
        i += k;
        if (NWB_LIKELY(k == 16)) {
            continue;
        }
        if (nw.u[i] == '#') {
            p = name_step(&nw, p, limit, &i);
            if (p == NULL) {
                return 0;
            }
            if (!nw.decoding) {
                mark = _mm_setzero_si128(); /* from here '#' is plain text */
            }
        } else {
            p = put_escape(p, nw.u[i]);
            i++;
        }
    }
#endif
    while (i < nw.len) {
        const unsigned char c = nw.u[i];

        if (i + 8 <= nw.len) {
            uint64_t w;

            memcpy(&w, nw.u + i, 8);
            if (word_needs_escape(w) == 0 && (!nw.decoding || word_has_hash(w) == 0)) {
                memcpy(p, &w, 8);
                p += 8;
                i += 8;
                continue;
            }
        }
        if (c == '#' && nw.decoding) {
            p = name_step(&nw, p, limit, &i);
            if (p == NULL) {
                return 0;
            }
        } else if (byte_plain(c)) {
            *p++ = (char)c;
            i++;
        } else {
            p = put_escape(p, c);
            i++;
        }
    }
    *p++ = '\n';
    *decoded += nw.decoded;
    *unknown += nw.unknown;
    return (size_t)(p - dst);
}
