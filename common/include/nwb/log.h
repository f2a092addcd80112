/* SPDX-License-Identifier: MIT */
/*
 * nwb/log.h - the logging contract every nwb module and game shares: levels,
 * call sites, the logger interface with its registration guard, and the
 * NWB_LOGGER_* macros.
 *
 * A call site is a static nwb_log_site_t made by the macro; the registered
 * logger receives the site and the raw arguments, so formatting can happen
 * on a background thread. With no logger registered, calls are formatted and
 * written to stderr synchronously (tools before start-up, tests).
 */
#ifndef NWB_LOG_H
#define NWB_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "nwb/build_config.h" /* NWB_IS_FINAL */
#include "nwb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    NWB_LOG_INFO = 0,
    NWB_LOG_WARNING = 1,
    NWB_LOG_ERROR = 2,
    NWB_LOG_FATAL = 3,
} nwb_log_level_t;

#define NWB_LOG_LEVEL_COUNT 4

/* Site flags. */
#define NWB_LOG_SITE_ESSENTIAL 0x01u /* survives NWB_FINAL */
#define NWB_LOG_SITE_RAW       0x02u /* one argument: the message is printed as is */

/* Most arguments a deferred-format call site can carry; a call with more is
 * formatted on the calling thread instead (slower, still correct). */
#define NWB_LOG_MAX_ARGS 24

/* nwb_log_site_t.state values, read and written with __atomic builtins so the
 * header stays usable from C++. */
#define NWB_LOG_SITE_UNPARSED 0u
#define NWB_LOG_SITE_PARSING  1u
#define NWB_LOG_SITE_READY    2u
#define NWB_LOG_SITE_COMPLEX  3u /* cannot defer: format on the calling thread */

/**
 * One call site. The macros create these as function-local statics; the
 * first five fields are constant, the rest is filled by the logger once, on
 * the site's first use (the format string parsed into argument kinds).
 */
typedef struct nwb_log_site {
    const char *fmt;  /* printf format; NULL for raw sites */
    const char *file; /* __FILE__ */
    uint32_t line;
    uint8_t level; /* nwb_log_level_t */
    uint8_t flags; /* NWB_LOG_SITE_* */
    uint8_t nargs; /* valid once state == READY */
    uint32_t state;
    uint8_t kinds[NWB_LOG_MAX_ARGS]; /* logger-private argument kinds */
    /* Logger-private argument layout, precomputed with kinds (valid once READY): what the
     * fast path needs to write a call's record without walking the kinds twice. */
    uint16_t slot_bytes; /* bytes of the fixed-size argument slots */
    uint8_t nstrs;       /* string arguments */
    uint8_t layout;      /* logger-defined layout class */
} nwb_log_site_t;

#define NWB_LOG_SITE_INIT(level, flags, fmt)                                                       \
    {                                                                                              \
        (fmt), __FILE__, (uint32_t)__LINE__, (uint8_t)(level), (uint8_t)(flags), 0, 0, {0}, 0, 0,  \
            0                                                                                      \
    }

/**
 * The logger interface. write/write_raw run on the producing thread and must
 * not block on I/O, take a lock shared with other producers, or (after the
 * thread's first call) allocate. flush blocks until everything accepted so
 * far is written or handed to durable storage.
 */
/**
 * One argument captured by the C macros (nwb_log_write_args): its value
 * converted by its static type (C11 _Generic), never by the format. Integers
 * are widened to 64 bits (sign- or zero-extended), float to double, pointers
 * and strings kept as pointers.
 */
typedef union nwb_log_arg {
    int64_t i;
    uint64_t u;
    double d;
    const void *p;
} nwb_log_arg_t;

/* Captured argument classes: 2 bits per argument in nwb_log_write_args' @p types,
 * argument k in bits 2k..2k+1 (NWB_LOG_MAX_ARGS * 2 <= 64). */
#define NWB_LOG_ARG_SIGNED          0u /* .i: signed integers, char, enums of int */
#define NWB_LOG_ARG_UNSIGNED        1u /* .u: unsigned integers, _Bool */
#define NWB_LOG_ARG_DOUBLE          2u /* .d: float, double */
#define NWB_LOG_ARG_POINTER         3u /* .p: any pointer (strings too) */
#define NWB_LOG_ARG_CLASS(types, k) ((unsigned)((types) >> (2u * (unsigned)(k))) & 3u)

typedef struct nwb_logger_ops {
    void (*write)(void *self, nwb_log_site_t *site, va_list ap);
    void (*write_raw)(void *self, nwb_log_site_t *site, const char *msg, size_t len);
    void (*flush)(void *self);
    /* Optional (NULL: the call is formatted on the calling thread and given to write_raw):
     * a call from C with its arguments captured by type, @p nargs <= NWB_LOG_MAX_ARGS. */
    void (*write_args)(void *self, nwb_log_site_t *site, uint64_t types, const nwb_log_arg_t *args,
                       unsigned nargs);
} nwb_logger_ops_t;

typedef struct nwb_logger {
    const nwb_logger_ops_t *ops; /* borrowed, must outlive the registration */
    void *self;
} nwb_logger_t;

/** Restores the previous logger on unregister. Caller storage. */
typedef struct nwb_logger_guard {
    nwb_logger_t *registered;
    nwb_logger_t *previous;
} nwb_logger_guard_t;

/**
 * Make @p logger (borrowed; must stay valid until unregistered) the target of
 * every NWB_LOGGER_* call. Fills @p guard. Returns 0, or NWB_ECONFIG when an
 * argument is NULL.
 */
NWB_API int nwb_logger_register(nwb_logger_t *logger, nwb_logger_guard_t *guard);

/**
 * Restore the logger that was current before @p guard's registration. Returns
 * 0, or NWB_ECONFIG when @p guard's logger is not the current one (guards
 * must be released in reverse order); the registration is then left as is.
 * NULL or an already released guard is a no-op returning 0.
 */
NWB_API int nwb_logger_unregister(nwb_logger_guard_t *guard);

/** The current logger, or NULL when none is registered. */
NWB_API nwb_logger_t *nwb_logger_current(void);

/** Entry points used by the macros; call the macros instead. */
NWB_API void nwb_log_write(nwb_log_site_t *site, ...);
NWB_API void nwb_log_write_raw(nwb_log_site_t *site, const char *msg);
NWB_API void nwb_log_write_args(nwb_log_site_t *site, uint64_t types, const nwb_log_arg_t *args,
                                unsigned nargs);

/**
 * printf @p fmt with captured arguments into @p dst (at most @p cap - 1 bytes
 * and a NUL; cut output ends in "..."). A conversion takes the argument the
 * format says (positional "%N$" too), converted from its captured class (an
 * integer where a double is expected is converted, a non-pointer given to %s
 * prints "(null)", a missing argument is 0). Returns, like snprintf, the
 * length the whole message has (>= @p cap: it was cut), or -1 when @p fmt
 * has %n (never supported; @p dst is then not a message) or @p cap is 0.
 */
NWB_API int nwb_log_format_args(char *dst, size_t cap, const char *fmt, uint64_t types,
                                const nwb_log_arg_t *args, unsigned nargs);
NWB_API NWB_COLD void nwb_log_fatal_abort(void);
NWB_API void nwb_log_flush(void);

/** Name of a level ("INFO", "WARNING", "ERROR", "FATAL"); "?" when out of range. */
NWB_API const char *nwb_log_level_name(int level);

/* Compile-time checks that never run (pw_tokenizer / NanoLog trick). */
static inline NWB_PRINTF_LIKE(1, 2) void nwb__log_format_check(const char *fmt, ...)
{
    (void)fmt;
}
static inline void nwb__log_raw_check(const char *msg)
{
    (void)msg;
}

/* ---- argument-count dispatch: one argument = raw, more = formatted ---- */
#define NWB__PP_CAT_(a, b) a##b
#define NWB__PP_CAT(a, b)  NWB__PP_CAT_(a, b)
#define NWB__PP_ARITY_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, \
                       _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32,  \
                       N, ...)                                                                     \
    N
/* Expands to 1 for one argument and M for 2..32. */
#define NWB__PP_ONE_OR_MANY(...)                                                                   \
    NWB__PP_ARITY_(__VA_ARGS__, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,  \
                   M, M, M, M, M, M, M, M, M, 1, 0)

/* ---- C: arguments captured by type (C11 _Generic), a non-variadic entry ---- */
#ifndef __cplusplus
/* NWB__PP_COUNT(...): the number of arguments, 1..32. */
#define NWB__PP_COUNT(...)                                                                         \
    NWB__PP_ARITY_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17,    \
                   16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define NWB__PP_CAT2_(a, b) a##b
#define NWB__PP_CAT2(a, b)  NWB__PP_CAT2_(a, b)
/* NWB__FE(M, J, a1, ..., an) = J(M(a1), J(M(a2), ... M(an))): M per argument, J joins. */
#define NWB__FE(M, J, ...)       NWB__PP_CAT2(NWB__FE_, NWB__PP_COUNT(__VA_ARGS__))(M, J, __VA_ARGS__)
#define NWB__FE_1(M, J, x)       M(x)
#define NWB__FE_2(M, J, x, ...)  J(M(x), NWB__FE_1(M, J, __VA_ARGS__))
#define NWB__FE_3(M, J, x, ...)  J(M(x), NWB__FE_2(M, J, __VA_ARGS__))
#define NWB__FE_4(M, J, x, ...)  J(M(x), NWB__FE_3(M, J, __VA_ARGS__))
#define NWB__FE_5(M, J, x, ...)  J(M(x), NWB__FE_4(M, J, __VA_ARGS__))
#define NWB__FE_6(M, J, x, ...)  J(M(x), NWB__FE_5(M, J, __VA_ARGS__))
#define NWB__FE_7(M, J, x, ...)  J(M(x), NWB__FE_6(M, J, __VA_ARGS__))
#define NWB__FE_8(M, J, x, ...)  J(M(x), NWB__FE_7(M, J, __VA_ARGS__))
#define NWB__FE_9(M, J, x, ...)  J(M(x), NWB__FE_8(M, J, __VA_ARGS__))
#define NWB__FE_10(M, J, x, ...) J(M(x), NWB__FE_9(M, J, __VA_ARGS__))
#define NWB__FE_11(M, J, x, ...) J(M(x), NWB__FE_10(M, J, __VA_ARGS__))
#define NWB__FE_12(M, J, x, ...) J(M(x), NWB__FE_11(M, J, __VA_ARGS__))
#define NWB__FE_13(M, J, x, ...) J(M(x), NWB__FE_12(M, J, __VA_ARGS__))
#define NWB__FE_14(M, J, x, ...) J(M(x), NWB__FE_13(M, J, __VA_ARGS__))
#define NWB__FE_15(M, J, x, ...) J(M(x), NWB__FE_14(M, J, __VA_ARGS__))
#define NWB__FE_16(M, J, x, ...) J(M(x), NWB__FE_15(M, J, __VA_ARGS__))
#define NWB__FE_17(M, J, x, ...) J(M(x), NWB__FE_16(M, J, __VA_ARGS__))
#define NWB__FE_18(M, J, x, ...) J(M(x), NWB__FE_17(M, J, __VA_ARGS__))
#define NWB__FE_19(M, J, x, ...) J(M(x), NWB__FE_18(M, J, __VA_ARGS__))
#define NWB__FE_20(M, J, x, ...) J(M(x), NWB__FE_19(M, J, __VA_ARGS__))
#define NWB__FE_21(M, J, x, ...) J(M(x), NWB__FE_20(M, J, __VA_ARGS__))
#define NWB__FE_22(M, J, x, ...) J(M(x), NWB__FE_21(M, J, __VA_ARGS__))
#define NWB__FE_23(M, J, x, ...) J(M(x), NWB__FE_22(M, J, __VA_ARGS__))
#define NWB__FE_24(M, J, x, ...) J(M(x), NWB__FE_23(M, J, __VA_ARGS__))
#define NWB__FE_25(M, J, x, ...) J(M(x), NWB__FE_24(M, J, __VA_ARGS__))
#define NWB__FE_26(M, J, x, ...) J(M(x), NWB__FE_25(M, J, __VA_ARGS__))
#define NWB__FE_27(M, J, x, ...) J(M(x), NWB__FE_26(M, J, __VA_ARGS__))
#define NWB__FE_28(M, J, x, ...) J(M(x), NWB__FE_27(M, J, __VA_ARGS__))
#define NWB__FE_29(M, J, x, ...) J(M(x), NWB__FE_28(M, J, __VA_ARGS__))
#define NWB__FE_30(M, J, x, ...) J(M(x), NWB__FE_29(M, J, __VA_ARGS__))
#define NWB__FE_31(M, J, x, ...) J(M(x), NWB__FE_30(M, J, __VA_ARGS__))
#define NWB__J_COMMA(a, b)       a, b
#define NWB__J_OR(a, b)          (a) | (b)
#define NWB__J_SHIFT(a, b)       ((uint64_t)(a) | ((uint64_t)(b) << 2))

static inline nwb_log_arg_t nwb__arg_i(long long v)
{
    nwb_log_arg_t a;

    a.i = (int64_t)v;
    return a;
}
static inline nwb_log_arg_t nwb__arg_u(unsigned long long v)
{
    nwb_log_arg_t a;

    a.u = (uint64_t)v;
    return a;
}
static inline nwb_log_arg_t nwb__arg_d(double v)
{
    nwb_log_arg_t a;

    a.d = v;
    return a;
}
/* Never called: sites with a long double argument take the variadic entry. */
static inline nwb_log_arg_t nwb__arg_ld(long double v)
{
    return nwb__arg_d((double)v);
}
static inline nwb_log_arg_t nwb__arg_p(const volatile void *v)
{
    nwb_log_arg_t a;

    a.u = (uint64_t)(uintptr_t)v;
    return a;
}
/* One argument's capture, chosen by its static type (arrays decay, enums are their integer). */
#define NWB__LOG_ARG(x)                                                                            \
    _Generic((x), _Bool                                                                            \
             : nwb__arg_u, char                                                                    \
             : nwb__arg_i, signed char                                                             \
             : nwb__arg_i, unsigned char                                                           \
             : nwb__arg_u, short                                                                   \
             : nwb__arg_i, unsigned short                                                          \
             : nwb__arg_u, int                                                                     \
             : nwb__arg_i, unsigned                                                                \
             : nwb__arg_u, long                                                                    \
             : nwb__arg_i, unsigned long                                                           \
             : nwb__arg_u, long long                                                               \
             : nwb__arg_i, unsigned long long                                                      \
             : nwb__arg_u, float                                                                   \
             : nwb__arg_d, double                                                                  \
             : nwb__arg_d, long double                                                             \
             : nwb__arg_ld, default                                                                \
             : nwb__arg_p)(x)
/* Its NWB_LOG_ARG_* class, an integer constant expression. */
#define NWB__LOG_ARG_CLASS(x)                                                                      \
    _Generic((x), _Bool : 1u, char : 0u, signed char : 0u, unsigned char : 1u, short : 0u,         \
             unsigned short : 1u, int : 0u, unsigned : 1u, long : 0u, unsigned long : 1u,          \
             long long : 0u, unsigned long long : 1u, float : 2u, double : 2u, long double : 2u,   \
             default : 3u)
#define NWB__LOG_IS_LDOUBLE(x) _Generic((x), long double : 1, default : 0)

/* More than NWB_LOG_MAX_ARGS arguments or a long double: the variadic entry (both branches are
 * compile-time constants; the dead one is removed). Arguments are evaluated once. */
#define NWB__LOG_CALL(site, ...)                                                                   \
    do {                                                                                           \
        if (NWB__PP_COUNT(__VA_ARGS__) > NWB_LOG_MAX_ARGS ||                                       \
            (NWB__FE(NWB__LOG_IS_LDOUBLE, NWB__J_OR, __VA_ARGS__))) {                              \
            nwb_log_write((site), __VA_ARGS__);                                                    \
        } else {                                                                                   \
            const nwb_log_arg_t nwb__args[] = {NWB__FE(NWB__LOG_ARG, NWB__J_COMMA, __VA_ARGS__)};  \
            nwb_log_write_args((site), NWB__FE(NWB__LOG_ARG_CLASS, NWB__J_SHIFT, __VA_ARGS__),     \
                               nwb__args, (unsigned)(sizeof(nwb__args) / sizeof(nwb__args[0])));   \
        }                                                                                          \
    } while (0)
#else
/* C++: no _Generic; the variadic entry. */
#define NWB__LOG_CALL(site, ...) nwb_log_write((site), __VA_ARGS__)
#endif

#define NWB__LOG(level, flags, ...)                                                                \
    NWB__PP_CAT(NWB__LOG_, NWB__PP_ONE_OR_MANY(__VA_ARGS__))(level, flags, __VA_ARGS__)
#define NWB__LOG_1(level, flags, msg)                                                              \
    do {                                                                                           \
        static nwb_log_site_t nwb__site =                                                          \
            NWB_LOG_SITE_INIT(level, (flags) | NWB_LOG_SITE_RAW, (const char *)0);                 \
        nwb_log_write_raw(&nwb__site, (msg));                                                      \
    } while (0)
#define NWB__LOG_M(level, flags, fmt, ...)                                                         \
    do {                                                                                           \
        static nwb_log_site_t nwb__site = NWB_LOG_SITE_INIT(level, flags, fmt);                    \
        if (0) {                                                                                   \
            nwb__log_format_check(fmt, __VA_ARGS__);                                               \
        }                                                                                          \
        NWB__LOG_CALL(&nwb__site, __VA_ARGS__);                                                    \
    } while (0)

/* A compiled-out call: type-checked, never evaluated. */
#define NWB__LOG_OFF(...) NWB__PP_CAT(NWB__LOG_OFF_, NWB__PP_ONE_OR_MANY(__VA_ARGS__))(__VA_ARGS__)
#define NWB__LOG_OFF_1(msg)                                                                        \
    do {                                                                                           \
        if (0) {                                                                                   \
            nwb__log_raw_check(msg);                                                               \
        }                                                                                          \
    } while (0)
#define NWB__LOG_OFF_M(fmt, ...)                                                                   \
    do {                                                                                           \
        if (0) {                                                                                   \
            nwb__log_format_check(fmt, __VA_ARGS__);                                               \
        }                                                                                          \
    } while (0)

/* ---- the public macros ---- */
#if NWB_IS_FINAL
#define NWB_LOGGER_INFO(...)    NWB__LOG_OFF(__VA_ARGS__)
#define NWB_LOGGER_WARNING(...) NWB__LOG_OFF(__VA_ARGS__)
#define NWB_LOGGER_ERROR(...)   NWB__LOG_OFF(__VA_ARGS__)
#else
#define NWB_LOGGER_INFO(...)    NWB__LOG(NWB_LOG_INFO, 0u, __VA_ARGS__)
#define NWB_LOGGER_WARNING(...) NWB__LOG(NWB_LOG_WARNING, 0u, __VA_ARGS__)
#define NWB_LOGGER_ERROR(...)   NWB__LOG(NWB_LOG_ERROR, 0u, __VA_ARGS__)
#endif
#define NWB_LOGGER_ESSENTIAL_INFO(...) NWB__LOG(NWB_LOG_INFO, NWB_LOG_SITE_ESSENTIAL, __VA_ARGS__)
#define NWB_LOGGER_ESSENTIAL_WARNING(...)                                                          \
    NWB__LOG(NWB_LOG_WARNING, NWB_LOG_SITE_ESSENTIAL, __VA_ARGS__)
#define NWB_LOGGER_ESSENTIAL_ERROR(...) NWB__LOG(NWB_LOG_ERROR, NWB_LOG_SITE_ESSENTIAL, __VA_ARGS__)
/* FATAL logs, flushes the logger, then aborts. Present in every configuration. */
#define NWB_LOGGER_FATAL(...)                                                                      \
    do {                                                                                           \
        NWB__LOG(NWB_LOG_FATAL, NWB_LOG_SITE_ESSENTIAL, __VA_ARGS__);                              \
        nwb_log_fatal_abort();                                                                     \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif /* NWB_LOG_H */
