/* SPDX-License-Identifier: MIT */
/*
 * log.c - logger registration and the entry points behind the NWB_LOGGER_*
 * macros. With no logger registered a call is formatted on the spot and
 * written to stderr as one line.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/error.h"
#include "nwb/log.h"
#include "nwb/log_batch.h"

static _Atomic(nwb_logger_t *) current_logger;

int nwb_logger_register(nwb_logger_t *logger, nwb_logger_guard_t *guard)
{
    if (logger == NULL || logger->ops == NULL || guard == NULL) {
        return NWB_ECONFIG;
    }
    guard->registered = logger;
    guard->previous = atomic_exchange(&current_logger, logger);
    return 0;
}

int nwb_logger_unregister(nwb_logger_guard_t *guard)
{
    nwb_logger_t *expected;

    if (guard == NULL || guard->registered == NULL) {
        return 0;
    }
    expected = guard->registered;
    if (!atomic_compare_exchange_strong(&current_logger, &expected, guard->previous)) {
        return NWB_ECONFIG;
    }
    guard->registered = NULL;
    guard->previous = NULL;
    return 0;
}

nwb_logger_t *nwb_logger_current(void)
{
    return atomic_load_explicit(&current_logger, memory_order_acquire);
}

const char *nwb_log_level_name(int level)
{
    static const char *const names[NWB_LOG_LEVEL_COUNT] = {"INFO", "WARNING", "ERROR", "FATAL"};

    if (level < 0 || level >= NWB_LOG_LEVEL_COUNT) {
        return "?";
    }
    return names[level];
}

/* No logger: one synchronous stderr line, written with a single write(2). */
static void fallback_write(const nwb_log_site_t *site, const char *msg, size_t len)
{
    char line[2048];
    int n = snprintf(line, sizeof(line), "%-7s %s:%u: %.*s\n", nwb_log_level_name(site->level),
                     site->file, (unsigned)site->line, (int)(len > 1900 ? 1900 : len), msg);

    if (n > 0) {
        size_t want = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
        ssize_t w = write(STDERR_FILENO, line, want);
        (void)w; /* nothing sensible to do when stderr itself fails */
    }
}

void nwb_log_write(nwb_log_site_t *site, ...)
{
    nwb_logger_t *logger = nwb_logger_current();
    va_list ap;

    va_start(ap, site);
    if (NWB_LIKELY(logger != NULL)) {
        logger->ops->write(logger->self, site, ap);
    } else {
        char msg[1024];
        int n;

        /* The format was checked at compile time by the macro. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        n = vsnprintf(msg, sizeof(msg), site->fmt, ap);
#pragma GCC diagnostic pop
        if (n >= 0) {
            fallback_write(site, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
        }
    }
    va_end(ap);
}

/* No logger, or one without write_args: the message formatted here, through write_raw or to
 * stderr (a %n format prints the format text, never the arguments). Out of line so that its
 * 1 KiB buffer and saved registers are not the fast path's frame. */
static NWB_NOINLINE void write_args_formatted(nwb_logger_t *logger, nwb_log_site_t *site,
                                              uint64_t types, const nwb_log_arg_t *args,
                                              unsigned nargs)
{
    char msg[1024];
    int n = nwb_log_format_args(msg, sizeof(msg), site->fmt, types, args, nargs);

    if (n < 0) {
        n = snprintf(msg, sizeof(msg), "%s", site->fmt);
    }
    n = n < 0 ? 0 : n >= (int)sizeof(msg) ? (int)sizeof(msg) - 1 : n;
    if (logger != NULL) {
        logger->ops->write_raw(logger->self, site, msg, (size_t)n);
    } else {
        fallback_write(site, msg, (size_t)n);
    }
}

/*
 * A C call with its arguments captured by type: a tail call into the
 * logger's write_args, with no frame of its own (the logger is read here,
 * not through the interposable nwb_logger_current()).
 */
void nwb_log_write_args(nwb_log_site_t *site, uint64_t types, const nwb_log_arg_t *args,
                        unsigned nargs)
{
    nwb_logger_t *logger = atomic_load_explicit(&current_logger, memory_order_acquire);

    if (NWB_LIKELY(logger != NULL && logger->ops->write_args != NULL)) {
        logger->ops->write_args(logger->self, site, types, args, nargs);
        return;
    }
    write_args_formatted(logger, site, types, args, nargs);
}

void nwb_log_write_raw(nwb_log_site_t *site, const char *msg)
{
    nwb_logger_t *logger = nwb_logger_current();
    const char *text = msg != NULL ? msg : "(null)";
    /* Bounded: the client keeps at most NWB_LOG_RECORD_MSG_MAX bytes anyway. */
    const size_t len = strnlen(text, NWB_LOG_RECORD_MSG_MAX + 1);

    if (NWB_LIKELY(logger != NULL)) {
        logger->ops->write_raw(logger->self, site, text, len);
    } else {
        fallback_write(site, text, len);
    }
}

void nwb_log_flush(void)
{
    nwb_logger_t *logger = nwb_logger_current();

    if (logger != NULL && logger->ops->flush != NULL) {
        logger->ops->flush(logger->self);
    }
}

void nwb_log_fatal_abort(void)
{
    nwb_log_flush();
    abort();
}
