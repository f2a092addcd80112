/* SPDX-License-Identifier: MIT */
/*
 * forwarder.c - the ClickHouse forwarder thread (forwarder.h): passes over OUT/runs, one
 * insert per batch of new complete lines of a run's log.txt and of new telemetry frames,
 * cursors after each 200, the runs' and the crashes' rows, backoff after a failure, and the
 * counters /metrics reads.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/deadline.h"
#include "nwb/error.h"
#include "nwb/name.h"

#include "../crash_int.h"
#include "../read_int.h"
#include "../server_int.h"
#include "ch_answer.h"
#include "ch_http.h"
#include "ch_rows.h"
#include "ch_schema.h"
#include "forwarder.h"
#include "fwd_cursor.h"
#include "fwd_dirty.h"
#include "log_line_parse.h"
#include "tel_frames_read.h"
#include "tel_summary.h"

/* Batches of one run per pass, so one busy run cannot starve the others. */
#define BATCHES_PER_RUN_PASS 4u
/* Bytes of TabSeparated rows one batch can become: escaping can double a line, plus columns. */
#define ROWS_BUF_MAX (4u * NWB__FWD_BATCH_BYTES)
/* The request whose success ends any failure: lines reached ClickHouse. */
#define INSERT_WHAT "an insert"
/* Bytes of one failure's text: host, port and errno text, or a reason and what was refused. */
#define FAILURE_MAX 512
/* Bytes of the nwb_runs rows of one pass (about 250 a run: every run of a full run index). */
#define RUN_ROWS_MAX (32u * 1024u * 1024u)

struct nwb__forwarder {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;                    /* guarded by mu */
    int wake;                    /* guarded by mu */
    struct nwb__fwd_stats stats; /* guarded by mu */
    /* Runs written since the last pass (nwb__forwarder_mark); the pass swaps in visiting. */
    struct nwb__fwd_dirty *marked;   /* guarded by mu */
    struct nwb__fwd_dirty *visiting; /* forwarder thread only */
    int rescan;                      /* forwarder thread only: the next pass scans runs/ */
    nwb_deadline_t next_rescan;      /* forwarder thread only: the safety-net full scan */
    /* forwarder thread only */
    struct nwb__ch_http http;
    char out_dir[4096];
    char host[256];
    int schema_ok;
    unsigned backoff_ms;
    char *chunk;      /* NWB__FWD_BATCH_BYTES read from log.txt */
    nwb_buf_t rows;   /* the insert's body */
    nwb_buf_t answer; /* ClickHouse's answer */
    char insert_sql[256];
    char last_reason[FAILURE_MAX];  /* the last failure logged, to log each kind once */
    char last_warning[FAILURE_MAX]; /* the last telemetry warning, logged once until another */
    const char *failed_what;        /* the request refused; NULL: ClickHouse was unreachable */
    /* the pass in progress */
    uint64_t pass_bytes_behind, pass_records_behind;
    uint64_t pass_oldest_s; /* 0: none */
    int dry; /* ClickHouse unreachable: a pass that only measures the backlog, sends nothing */
    /* nwb_runs: a row for each marked run, and at a full scan for each run whose files changed
     * at or after runs_since_ns (wall clock: the start of the last full scan that sent its
     * rows, minus the slack; 0 at start, so every run once), sent at the end of a pass. */
    nwb_buf_t run_rows;
    uint64_t runs_since_ns;
    char runs_sql[256];
    /* nwb_crashes: the whole list is sent again when its content (hash) changed */
    pthread_mutex_t crash_mu;          /* held for a walk of the store and by a detach */
    struct nwb__crash_ingest *crashes; /* guarded by crash_mu; NULL once detached */
    nwb_buf_t crash_rows;
    char crashes_sql[256];
    nwb_deadline_t next_crash_scan;
    uint64_t crash_hash_sent; /* 0: nothing acknowledged yet */
    /* nwb_frames */
    nwb_buf_t frame_rows;
    char frames_sql[256];
};

/* A warning about a run's telemetry files, logged once until a different one comes (a pass
 * runs five times a second and would repeat it). */
static void warn_once(struct nwb__forwarder *f, const char *fmt, ...) NWB_PRINTF_LIKE(2, 3);
static void warn_once(struct nwb__forwarder *f, const char *fmt, ...)
{
    char line[FAILURE_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (strcmp(line, f->last_warning) != 0) {
        snprintf(f->last_warning, sizeof(f->last_warning), "%s", line);
        nwb__console("warning: %s", line);
    }
}

static void log_failure(struct nwb__forwarder *f, const char *line)
{
    if (strcmp(line, f->last_reason) != 0) {
        snprintf(f->last_reason, sizeof(f->last_reason), "%s", line);
        nwb__console("error: forward to ClickHouse: %s; retrying with backoff", line);
    }
}

/* One POST; 0 on a 200, else -1 with the failure logged (once per kind) and counted. */
static int post(struct nwb__forwarder *f, const char *query, const void *body, size_t len,
                const char *what)
{
    int status = 0;
    const int err = nwb__ch_http_post(&f->http, query, body, len, &status, &f->answer);

    if (err == 0 && status == 200) {
        pthread_mutex_lock(&f->mu);
        f->stats.up = 1;
        pthread_mutex_unlock(&f->mu);
        /* Only the request that was refused working again ends its failure: the schema
         * statements that precede every retry succeed while the insert is still refused. */
        if (f->last_reason[0] != '\0' &&
            (f->failed_what == NULL || strcmp(f->failed_what, what) == 0 ||
             strcmp(what, INSERT_WHAT) == 0)) {
            nwb__console("forward to ClickHouse: %s works again", what);
            f->last_reason[0] = '\0';
        }
        return 0;
    }
    if (err != 0 && f->http.tls_reason[0] != '\0') {
        char msg[FAILURE_MAX];

        /* OpenSSL's own words: "certificate verify failed: unable to get local issuer
         * certificate", "... hostname mismatch", ... The host is cut to fit one failure. */
        snprintf(msg, sizeof(msg), "%.200s:%d TLS refused: %.255s", f->http.host, f->http.port,
                 f->http.tls_reason);
        f->failed_what = NULL;
        log_failure(f, msg);
        pthread_mutex_lock(&f->mu);
        f->stats.tls_failures++;
        pthread_mutex_unlock(&f->mu);
    } else if (err != 0) {
        char ebuf[128];
        char msg[NWB__CH_HOST_MAX + 8 + 16 + 128 + 16];

        snprintf(msg, sizeof(msg), "%s:%d unreachable: %s", f->http.host, f->http.port,
                 nwb_strerror_r(err, ebuf, sizeof(ebuf)));
        f->failed_what = NULL;
        log_failure(f, msg);
    } else {
        char reason[NWB__CH_REASON_MAX];
        char msg[NWB__CH_REASON_MAX + 96];

        nwb__ch_answer_reason((const char *)f->answer.data, f->answer.len, reason, sizeof(reason));
        snprintf(msg, sizeof(msg), "%s refused (HTTP %d): %s", what, status, reason);
        f->failed_what = what;
        log_failure(f, msg);
    }
    pthread_mutex_lock(&f->mu);
    f->stats.up = 0;
    f->stats.inserts_failed++;
    pthread_mutex_unlock(&f->mu);
    return -1;
}

/* Create what is missing, check the version, record ours. 0, or -1. */
static int ensure_schema(struct nwb__forwarder *f)
{
    nwb_buf_t sql = NWB_BUF_INIT(64 * 1024);
    uint64_t version = 0;
    int rc = -1;

    for (size_t i = 0; i < nwb__ch_schema_statement_count(); i++) {
        nwb_buf_reset(&sql);
        if (nwb__ch_schema_statement(i, f->http.database, &sql) != 0 ||
            post(f, NULL, sql.data, sql.len, "creating the schema") != 0) {
            goto out;
        }
    }
    nwb_buf_reset(&sql);
    if (nwb__ch_schema_version_query(f->http.database, &sql) != 0 ||
        post(f, NULL, sql.data, sql.len, "reading the schema version") != 0) {
        goto out;
    }
    if (nwb__ch_answer_u64((const char *)f->answer.data, f->answer.len, &version) != 0) {
        f->failed_what = "the schema version check";
        log_failure(f, "the schema version answer is not a number");
        goto out;
    }
    if (version > NWB__CH_SCHEMA_VERSION) {
        char msg[256];

        snprintf(msg, sizeof(msg),
                 "database %s holds schema version %" PRIu64 ", newer than this server's %u",
                 f->http.database, version, NWB__CH_SCHEMA_VERSION);
        f->failed_what = "the schema version check";
        log_failure(f, msg);
        goto out;
    }
    nwb_buf_reset(&sql);
    if (nwb__ch_schema_version_insert(f->http.database, &sql) != 0 ||
        post(f, NULL, sql.data, sql.len, "recording the schema version") != 0) {
        goto out;
    }
    rc = 0;
out:
    nwb_buf_cleanup(&sql);
    return rc;
}

static void note_behind(struct nwb__forwarder *f, uint64_t bytes, uint64_t records,
                        uint64_t oldest_s)
{
    f->pass_bytes_behind += bytes;
    f->pass_records_behind += records;
    if (oldest_s != 0 && (f->pass_oldest_s == 0 || oldest_s < f->pass_oldest_s)) {
        f->pass_oldest_s = oldest_s;
    }
}

/*
 * Forward what is new in one run. Returns 0 when it is up to date (or skipped), 1 when it has
 * more (the per-pass budget ran out), -1 when an insert failed (back off).
 */
static int forward_run(struct nwb__forwarder *f, const char *name)
{
    char dir[4096 + 300], log_path[4096 + 320];
    struct nwb__run_name rn;
    char program[128], run[160];
    struct nwb__ch_run_ident ident;
    struct stat st;
    uint8_t state[NWB__RUN_STATE_SIZE + 1];
    size_t state_len;
    uint64_t offset = 0;
    int fd, cerr;
    int rc = 0;

    if (!nwb__run_id_valid(name, strlen(name)) || !nwb__run_id_parse(name, strlen(name), &rn)) {
        return 0;
    }
    snprintf(dir, sizeof(dir), "%s/runs/%s", f->out_dir, name);
    snprintf(log_path, sizeof(log_path), "%s/log.txt", dir);
    {
        /* The state first, then the size (server_int.h): only whole batches are sent, so a
         * batch cut short by a crash, which the server removes at its next start, never
         * reaches ClickHouse. */
        char state_path[4096 + 320];
        int sfd;

        snprintf(state_path, sizeof(state_path), "%s/" NWB__RUN_STATE_FILE, dir);
        sfd = open(state_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        state_len = 0;
        if (sfd >= 0) {
            const ssize_t n = pread(sfd, state, sizeof(state), 0);

            state_len = n > 0 ? (size_t)n : 0;
            close(sfd);
        }
    }
    fd = open(log_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        return 0;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return 0;
    }
    st.st_size = (off_t)nwb__run_state_durable_end(state, state_len, (uint64_t)st.st_size);
    cerr = nwb__fwd_cursor_read(dir, &offset);
    if (cerr == NWB_EPROTO) {
        nwb__console("warning: runs/%s/" NWB__FWD_CURSOR_NAME
                     " is damaged; forwarding the run again from its start (rows sent twice "
                     "read once with FINAL)",
                     name);
    } else if (cerr != 0) {
        close(fd);
        return 0;
    }
    if ((uint64_t)st.st_size < offset) {
        /* The server cut a torn batch off after a crash: what was forwarded past the end is
         * rewritten at the same offsets by the resend, which replaces those rows. */
        offset = (uint64_t)st.st_size;
        (void)nwb__fwd_cursor_write(dir, offset);
    }
    snprintf(program, sizeof(program), "%.*s", (int)rn.program_len, rn.program);
    snprintf(run, sizeof(run), "%.*s", (int)rn.run_len, rn.run);
    ident.program = program;
    ident.run = run;
    ident.host = f->host;
    ident.run_dir = name;
    for (unsigned batch = 0; (uint64_t)st.st_size > offset; batch++) {
        const size_t want = (uint64_t)st.st_size - offset < NWB__FWD_BATCH_BYTES
                                ? (size_t)((uint64_t)st.st_size - offset)
                                : NWB__FWD_BATCH_BYTES;
        size_t got = 0, used = 0, lines = 0;
        uint64_t first_s = 0;

        if (batch == BATCHES_PER_RUN_PASS) {
            rc = 1;
            break;
        }
        while (got < want) {
            const ssize_t n = pread(fd, f->chunk + got, want - got, (off_t)(offset + got));

            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                break;
            }
            got += (size_t)n;
        }
        nwb_buf_reset(&f->rows);
        while (used < got && lines < NWB__FWD_BATCH_ROWS) {
            const char *const start = f->chunk + used;
            const char *nl = memchr(start, '\n', got - used);
            struct nwb__fwd_line l;
            const char *why = NULL;

            if (nl == NULL) {
                break;
            }
            if (nwb__fwd_line_parse(start, (size_t)(nl - start), &l, &why) == 0) {
                if (nwb__ch_log_row(&f->rows, &ident, offset + used, &l) != 0) {
                    break; /* the rows buffer is full: the rest goes in the next batch */
                }
                if (first_s == 0) {
                    first_s = l.time_s;
                }
                lines++;
            } else {
                nwb__console("warning: runs/%s/log.txt at byte %" PRIu64 ": line not forwarded: %s",
                             name, offset + used, why);
                pthread_mutex_lock(&f->mu);
                f->stats.lines_skipped++;
                pthread_mutex_unlock(&f->mu);
            }
            used = (size_t)(nl + 1 - f->chunk);
        }
        if (used == 0) {
            if (got == NWB__FWD_BATCH_BYTES) {
                /* No newline in a whole batch: not a line the server wrote; step over it. */
                nwb__console("warning: runs/%s/log.txt at byte %" PRIu64
                             ": %u bytes without a newline not forwarded",
                             name, offset, NWB__FWD_BATCH_BYTES);
                used = got;
            } else {
                break; /* an incomplete last line: wait for its end */
            }
        }
        if (lines > 0 &&
            (f->dry || post(f, f->insert_sql, f->rows.data, f->rows.len, INSERT_WHAT) != 0)) {
            note_behind(f, (uint64_t)st.st_size - offset, lines, first_s);
            rc = -1;
            break;
        }
        offset += used;
        if (nwb__fwd_cursor_write(dir, offset) != 0) {
            nwb__console("warning: runs/%s/" NWB__FWD_CURSOR_NAME
                         " cannot be written; its lines will be sent again",
                         name);
        }
        pthread_mutex_lock(&f->mu);
        f->stats.records_total += lines;
        f->stats.bytes_total += used;
        f->stats.inserts_total += lines > 0;
        pthread_mutex_unlock(&f->mu);
    }
    if (rc == 1) {
        note_behind(f, (uint64_t)st.st_size - offset, 0, 0);
    }
    close(fd);
    return rc;
}

/* Who the frame rows being built belong to. */
struct frame_walk {
    struct nwb__forwarder *f;
    const struct nwb__ch_run_ident *ident;
    uint64_t started_s;
    uint64_t frames; /* rows built */
};

/* Send the frame rows built so far. 0, or -1 (the failure logged). */
static int frames_flush(struct nwb__forwarder *f)
{
    if (f->frame_rows.len == 0) {
        return 0;
    }
    if (post(f, f->frames_sql, f->frame_rows.data, f->frame_rows.len, INSERT_WHAT) != 0) {
        return -1;
    }
    nwb_buf_reset(&f->frame_rows);
    return 0;
}

static int frame_add(void *ctx, uint64_t frame, uint64_t duration_ns)
{
    struct frame_walk *w = ctx;

    if (nwb__ch_frame_row(&w->f->frame_rows, w->ident, w->started_s, frame, duration_ns) != 0) {
        if (frames_flush(w->f) != 0) {
            return -1;
        }
        if (nwb__ch_frame_row(&w->f->frame_rows, w->ident, w->started_s, frame, duration_ns) != 0) {
            return -1; /* cannot happen: one row is far below the buffer */
        }
    }
    w->frames++;
    return 0;
}

/*
 * Forward the frames of run @p name's telemetry uploads past its frames cursor. Returns 0
 * when up to date (or without telemetry), 1 when it has more, -1 when an insert failed.
 */
static int forward_frames(struct nwb__forwarder *f, const char *name,
                          const struct nwb__ch_run_ident *ident, uint64_t started_ns)
{
    char dir[4096 + 300];
    struct frame_walk w = {f, ident, started_ns / 1000000000u, 0};
    uint64_t cursor = 0;
    uint32_t next;
    const char *why = NULL;
    int dfd, rc;

    snprintf(dir, sizeof(dir), "%s/runs/%s", f->out_dir, name);
    if (nwb__fwd_cursor_read_named(dir, NWB__FWD_FRAMES_CURSOR_NAME, &cursor) != 0 ||
        cursor > NWB__TEL_INDEX_MAX) {
        cursor = 0; /* damaged: every frame again, which FINAL reads once */
    }
    next = (uint32_t)cursor;
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        return 0;
    }
    nwb_buf_reset(&f->frame_rows);
    rc = nwb__fwd_tel_frames(dfd, &next, NWB__FWD_FRAME_RECORDS_PER_PASS, frame_add, &w, &why);
    close(dfd);
    if (rc == -1) {
        return -1; /* an insert failed: the cursor stays */
    }
    if (rc < 0 && rc != -ENOENT && why != NULL) {
        warn_once(f, "runs/%.300s telemetry: %s; its frames from upload %u on wait", name, why,
                  (unsigned)next);
    }
    if (frames_flush(f) != 0) {
        return -1;
    }
    if (next != (uint32_t)cursor &&
        nwb__fwd_cursor_write_named(dir, NWB__FWD_FRAMES_CURSOR_NAME, next) != 0) {
        nwb__console("warning: runs/%s/" NWB__FWD_FRAMES_CURSOR_NAME
                     " cannot be written; its frames will be sent again",
                     name);
    }
    pthread_mutex_lock(&f->mu);
    f->stats.frames_total += w.frames;
    pthread_mutex_unlock(&f->mu);
    return rc == 1 ? 1 : 0;
}

/* The crash rows being built: their hash, and whether a full buffer was sent midway. */
struct crash_walk {
    struct nwb__forwarder *f;
    uint64_t now_ns;
    uint64_t hash;
    uint64_t rows;
    int sent_midway;
    int failed;
};

static int crash_add(void *ctx, const struct nwb__crash_row *c)
{
    struct crash_walk *w = ctx;
    struct nwb__forwarder *f = w->f;
    size_t start = f->crash_rows.len;

    if (nwb__ch_crash_row(&f->crash_rows, f->host, c, w->now_ns) != 0) {
        if (post(f, f->crashes_sql, f->crash_rows.data, f->crash_rows.len, INSERT_WHAT) != 0) {
            w->failed = 1;
            return -1;
        }
        w->sent_midway = 1;
        nwb_buf_reset(&f->crash_rows);
        start = 0;
        if (nwb__ch_crash_row(&f->crash_rows, f->host, c, w->now_ns) != 0) {
            return -1; /* cannot happen: one row is far below the buffer */
        }
    }
    {
        /* The row without its version (the text before the last tab): what changed. */
        const char *row = (const char *)f->crash_rows.data + start;
        size_t n = f->crash_rows.len - start;

        while (n > 0 && row[n - 1] != '\t') {
            n--;
        }
        w->hash = (w->hash ^ nwb_name_hash(row, n)) * NWB_NAME_FNV_PRIME;
    }
    w->rows++;
    return 0;
}

/* Send every crash again when the list changed since the last one ClickHouse acknowledged.
 * Returns 0, or -1 when an insert failed. */
static int forward_crashes(struct nwb__forwarder *f, uint64_t now_ns)
{
    struct crash_walk w = {f, now_ns, NWB_NAME_FNV_OFFSET, 0, 0, 0};
    int err;

    if (f->dry || !nwb_deadline_expired(&f->next_crash_scan)) {
        return 0;
    }
    f->next_crash_scan = nwb_deadline_in_ms(NWB__FWD_CRASH_SCAN_MS);
    nwb_buf_reset(&f->crash_rows);
    pthread_mutex_lock(&f->crash_mu);
    if (f->crashes == NULL) {
        pthread_mutex_unlock(&f->crash_mu);
        return 0;
    }
    err = nwb__crash_ingest_each_row(f->crashes, crash_add, &w);
    pthread_mutex_unlock(&f->crash_mu);
    if (w.failed) {
        return -1;
    }
    if (err != 0) {
        nwb__console("warning: forward to ClickHouse: the crash store cannot be listed (%d); "
                     "crashes are sent at a later scan",
                     err);
        return 0;
    }
    if (w.rows == 0 || (!w.sent_midway && w.hash == f->crash_hash_sent)) {
        return 0;
    }
    if (f->crash_rows.len > 0 &&
        post(f, f->crashes_sql, f->crash_rows.data, f->crash_rows.len, INSERT_WHAT) != 0) {
        return -1;
    }
    f->crash_hash_sent = w.hash;
    pthread_mutex_lock(&f->mu);
    f->stats.crash_rows_total += w.rows;
    pthread_mutex_unlock(&f->mu);
    return 0;
}

static uint64_t mtime_ns_of(const struct stat *st)
{
    return (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
}

/* Add run @p name's nwb_runs row when its log or counters changed at or after @p since_ns
 * (0: whatever its files say). Returns -1 when the rows buffer is full (the row was not
 * added), else 0. */
static int run_row_add(struct nwb__forwarder *f, const char *name, uint64_t since_ns,
                       uint64_t now_ns)
{
    char dir[4096 + 300];
    struct nwb__run_info info;
    struct nwb__ch_run_ident ident;
    struct stat st;
    uint64_t changed = 0;
    int fd;

    snprintf(dir, sizeof(dir), "%s/runs/%s", f->out_dir, name);
    int rc = 0;

    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    if (fstatat(fd, "log.txt", &st, AT_SYMLINK_NOFOLLOW) == 0) {
        changed = mtime_ns_of(&st);
    }
    if (fstatat(fd, NWB__RUN_COUNTERS_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        mtime_ns_of(&st) > changed) {
        changed = mtime_ns_of(&st);
    }
    if (fstatat(fd, NWB_TEL_REPORT_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        mtime_ns_of(&st) > changed) {
        changed = mtime_ns_of(&st);
    }
    if ((since_ns == 0 || changed >= since_ns) && nwb__run_info_load(fd, name, &info) == 0) {
        struct nwb__ch_tel_summary tel;
        const char *why = NULL;
        const int terr = nwb__tel_summary_read(fd, &tel, &why);

        if (terr == NWB_EPROTO) {
            warn_once(f,
                      "runs/%.300s/" NWB_TEL_REPORT_FILE
                      ": %s in its first %u bytes; its nwb_runs frame summary is 0",
                      name, why, NWB__FWD_TEL_JSON_READ_MAX);
        }
        ident.program = info.program;
        ident.run = info.run;
        ident.host = f->host;
        ident.run_dir = name;
        rc = nwb__ch_run_row(&f->run_rows, &ident, &info, &tel, now_ns) != 0 ? -1 : 0;
    }
    close(fd);
    return rc;
}

/*
 * Where the next pass's change test starts after a pass that began at @p pass_ns. A file's
 * mtime comes from the kernel's coarse clock, which can lag CLOCK_REALTIME by a tick (and a
 * file system may round it), so a write just after pass_ns can carry an earlier mtime: without
 * the slack, the run's row read before that write would never be sent again.
 */
static uint64_t runs_since_after(uint64_t pass_ns)
{
    return pass_ns > NWB__FWD_MTIME_SLACK_NS ? pass_ns - NWB__FWD_MTIME_SLACK_NS : 1;
}

/* What one pass has found so far. */
struct pass_state {
    uint64_t pass_ns;  /* its start, wall clock */
    uint64_t since_ns; /* nwb_runs rows for runs changed since (0: every visited run) */
    int rc;            /* -1 an insert failed, 1 a run has more, else 0 */
    int rows_full;     /* a run's nwb_runs row did not fit */
};

/* Visit run directory @p name: its new lines, frames and nwb_runs row. */
static void visit_run(struct nwb__forwarder *f, const char *name, struct pass_state *ps)
{
    int r = forward_run(f, name);

    if (r != -1 && !f->dry) {
        struct nwb__run_name rn;

        if (nwb__run_id_valid(name, strlen(name)) && nwb__run_id_parse(name, strlen(name), &rn)) {
            char program[128], run[160];
            const struct nwb__ch_run_ident ident = {program, run, f->host, name};
            int fr;

            snprintf(program, sizeof(program), "%.*s", (int)rn.program_len, rn.program);
            snprintf(run, sizeof(run), "%.*s", (int)rn.run_len, rn.run);
            fr = forward_frames(f, name, &ident, rn.started_ns);
            r = fr == -1 ? -1 : r != 0 ? r : fr;
        }
    }
    if (r == -1) {
        /* After a failure the rest of the pass only measures what waits: nothing more is
         * sent until the backoff has passed. */
        ps->rc = -1;
        f->dry = 1;
    } else if (r != 0) {
        if (ps->rc != -1) {
            ps->rc = r;
        }
        /* More than a pass's budget: visited again by the next pass. */
        pthread_mutex_lock(&f->mu);
        nwb__fwd_dirty_add(f->marked, name);
        pthread_mutex_unlock(&f->mu);
    }
    if (!f->dry && nwb__run_id_valid(name, strlen(name)) &&
        run_row_add(f, name, ps->since_ns, ps->pass_ns) != 0) {
        ps->rows_full = 1;
    }
}

/*
 * One pass: over every run of runs/ at a full scan (the first pass, after a failure or an
 * overflow of the marks, and every NWB__FWD_RESCAN_MS as a safety net), else over the runs
 * marked since the last pass only, so finished runs cost nothing. Returns -1 when an insert
 * failed, 1 when runs have more, else 0.
 */
static int pass(struct nwb__forwarder *f)
{
    struct pass_state ps = {0, 0, 0, 0};
    const int was_dry = f->dry;
    int full;

    f->pass_bytes_behind = 0;
    f->pass_records_behind = 0;
    f->pass_oldest_s = 0;
    {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ps.pass_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
    {
        struct nwb__fwd_dirty *const swap = f->visiting;

        nwb__fwd_dirty_clear(swap);
        pthread_mutex_lock(&f->mu);
        f->visiting = f->marked;
        f->marked = swap;
        pthread_mutex_unlock(&f->mu);
    }
    full = f->rescan || f->dry || f->visiting->overflow || nwb_deadline_expired(&f->next_rescan);
    nwb_buf_reset(&f->run_rows);
    if (full) {
        char runs[4096 + 16];
        DIR *d;

        snprintf(runs, sizeof(runs), "%s/runs", f->out_dir);
        d = opendir(runs);
        if (d == NULL) {
            return 0;
        }
        ps.since_ns = f->runs_since_ns;
        for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
            if (e->d_name[0] != '.') {
                visit_run(f, e->d_name, &ps);
            }
        }
        closedir(d);
    } else {
        for (uint32_t i = 0; i < f->visiting->count; i++) {
            visit_run(f, f->visiting->name[i], &ps);
        }
    }
    f->dry = was_dry;
    if (ps.rc != -1 && f->run_rows.len > 0 &&
        post(f, f->runs_sql, f->run_rows.data, f->run_rows.len, INSERT_WHAT) != 0) {
        ps.rc = -1;
    }
    /* A change during the pass is seen again by the next full scan (>=): sent twice at worst,
     * which the newest updated_ns collapses. Rows that did not fit, or a failure, make the
     * next pass a full scan from where the last complete one started. */
    if (ps.rc == -1 || ps.rows_full || was_dry) {
        f->rescan = 1; /* a dry pass sent nothing: the marks it took are in the next scan */
    } else if (full && !was_dry) {
        f->runs_since_ns = runs_since_after(ps.pass_ns);
        f->rescan = 0;
        f->next_rescan = nwb_deadline_in_ms(NWB__FWD_RESCAN_MS);
    }
    if (ps.rc != -1 && forward_crashes(f, ps.pass_ns) != 0) {
        ps.rc = -1;
    }
    pthread_mutex_lock(&f->mu);
    f->stats.passes_total++;
    f->stats.full_passes_total += full;
    f->stats.bytes_behind = f->pass_bytes_behind;
    f->stats.records_behind = f->pass_records_behind;
    f->stats.seconds_behind =
        f->pass_oldest_s == 0 ? 0.0 : (double)time(NULL) - (double)f->pass_oldest_s;
    if (f->stats.seconds_behind < 0) {
        f->stats.seconds_behind = 0;
    }
    pthread_mutex_unlock(&f->mu);
    return ps.rc;
}

static void *forwarder_main(void *arg)
{
    struct nwb__forwarder *f = arg;

    /* Ingest first: on a busy machine the forwarder takes the CPU the loop and the log worker
     * leave (Linux nice is per thread); its lag grows instead of the ingest rate falling. */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), NWB__FWD_NICE);
    (void)pthread_setname_np(pthread_self(), NWB__FWD_THREAD_NAME);

    for (;;) {
        unsigned wait_ms = NWB__FWD_PASS_MS;
        nwb_deadline_t until;
        int r = 0;

        if (!f->schema_ok) {
            f->schema_ok = ensure_schema(f) == 0;
            r = f->schema_ok ? 0 : -1;
            if (!f->schema_ok) {
                /* Keep /metrics' backlog current while nothing can be sent. */
                f->dry = 1;
                (void)pass(f);
                f->dry = 0;
            }
        }
        if (f->schema_ok) {
            r = pass(f);
        }
        if (r == -1) {
            /* Reconnect and re-check the schema (a restarted ClickHouse may have lost it). */
            nwb__ch_http_close(&f->http);
            f->schema_ok = 0;
            wait_ms = f->backoff_ms;
            f->backoff_ms = f->backoff_ms * 2 > NWB__FWD_BACKOFF_MAX_MS ? NWB__FWD_BACKOFF_MAX_MS
                                                                        : f->backoff_ms * 2;
        } else {
            f->backoff_ms = NWB__FWD_BACKOFF_FIRST_MS;
            if (r == 1) {
                wait_ms = 0;
            }
        }
        until = nwb_deadline_in_ms(wait_ms);
        pthread_mutex_lock(&f->mu);
        while (!f->stop && !(f->wake && r != -1) && !nwb_deadline_expired(&until)) {
            nwb_cond_wait_until(&f->cv, &f->mu, &until);
        }
        if (f->wake) {
            f->rescan = 1; /* lines were written, of which runs the caller did not say */
        }
        f->wake = 0;
        if (f->stop) {
            pthread_mutex_unlock(&f->mu);
            break;
        }
        pthread_mutex_unlock(&f->mu);
    }
    return NULL;
}

int nwb__forwarder_start(const struct nwb__fwd_config *cfg, struct nwb__forwarder **out, char *err,
                         size_t errlen)
{
    struct nwb__forwarder *f;
    int rc;

    *out = NULL;
    f = nwb_calloc(1, sizeof(*f));
    if (f == NULL) {
        return UV_ENOMEM;
    }
    rc = nwb__ch_http_init(&f->http, cfg->url, err, errlen);
    if (rc == 0) {
        rc = nwb__ch_http_tls_setup(&f->http, cfg->ca_file, err, errlen);
    }
    if (rc == 0 && cfg->user != NULL &&
        nwb__ch_http_set_credentials(&f->http, cfg->user,
                                     cfg->password != NULL ? cfg->password : "") != 0) {
        snprintf(err, errlen, "the ClickHouse user and password take more than 255 bytes");
        rc = NWB_ECONFIG;
    }
    if (rc != 0) {
        nwb__ch_http_cleanup(&f->http);
        nwb_free(f);
        return rc;
    }
    snprintf(f->out_dir, sizeof(f->out_dir), "%s", cfg->out_dir);
    if (cfg->host != NULL) {
        snprintf(f->host, sizeof(f->host), "%s", cfg->host);
    } else if (gethostname(f->host, sizeof(f->host) - 1) != 0) {
        snprintf(f->host, sizeof(f->host), "unknown");
    }
    snprintf(f->insert_sql, sizeof(f->insert_sql),
             "INSERT INTO %s.nwb_logs (" NWB__CH_LOGS_COLUMNS ") FORMAT TabSeparated",
             f->http.database);
    f->backoff_ms = NWB__FWD_BACKOFF_FIRST_MS;
    nwb_buf_init(&f->rows, ROWS_BUF_MAX);
    nwb_buf_init(&f->answer, NWB__CH_ANSWER_KEEP);
    nwb_buf_init(&f->run_rows, RUN_ROWS_MAX);
    snprintf(f->runs_sql, sizeof(f->runs_sql),
             "INSERT INTO %s.nwb_runs (" NWB__CH_RUNS_COLUMNS ") FORMAT TabSeparated",
             f->http.database);
    f->crashes = cfg->crashes;
    nwb_buf_init(&f->crash_rows, NWB__FWD_CRASH_ROWS_MAX);
    snprintf(f->crashes_sql, sizeof(f->crashes_sql),
             "INSERT INTO %s.nwb_crashes (" NWB__CH_CRASHES_COLUMNS ") FORMAT TabSeparated",
             f->http.database);
    f->next_crash_scan = nwb_deadline_in_ms(0);
    nwb_buf_init(&f->frame_rows, NWB__FWD_FRAME_ROWS_MAX);
    snprintf(f->frames_sql, sizeof(f->frames_sql),
             "INSERT INTO %s.nwb_frames (" NWB__CH_FRAMES_COLUMNS ") FORMAT TabSeparated",
             f->http.database);
    f->chunk = nwb_malloc(NWB__FWD_BATCH_BYTES);
    f->marked = nwb_calloc(1, sizeof(*f->marked));
    f->visiting = nwb_calloc(1, sizeof(*f->visiting));
    f->rescan = 1;
    if (f->chunk == NULL || f->marked == NULL || f->visiting == NULL) {
        nwb_free(f->chunk);
        nwb_free(f->marked);
        nwb_free(f->visiting);
        nwb__ch_http_cleanup(&f->http);
        nwb_free(f);
        return UV_ENOMEM;
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->crash_mu, NULL);
    nwb_cond_init_monotonic(&f->cv);
    rc = pthread_create(&f->thread, NULL, forwarder_main, f);
    if (rc != 0) {
        pthread_cond_destroy(&f->cv);
        pthread_mutex_destroy(&f->crash_mu);
        pthread_mutex_destroy(&f->mu);
        nwb_free(f->chunk);
        nwb_free(f->marked);
        nwb_free(f->visiting);
        nwb__ch_http_cleanup(&f->http);
        nwb_free(f);
        return -rc;
    }
    *out = f;
    return 0;
}

void nwb__forwarder_stats(struct nwb__forwarder *f, struct nwb__fwd_stats *out)
{
    pthread_mutex_lock(&f->mu);
    *out = f->stats;
    pthread_mutex_unlock(&f->mu);
}

void nwb__forwarder_wake(struct nwb__forwarder *f)
{
    pthread_mutex_lock(&f->mu);
    f->wake = 1;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void nwb__forwarder_mark(struct nwb__forwarder *f, const char *run_dir)
{
    if (f == NULL || run_dir == NULL || run_dir[0] == '\0') {
        return;
    }
    pthread_mutex_lock(&f->mu);
    nwb__fwd_dirty_add(f->marked, run_dir);
    pthread_mutex_unlock(&f->mu);
}

void nwb__forwarder_detach_crashes(struct nwb__forwarder *f)
{
    if (f == NULL) {
        return;
    }
    pthread_mutex_lock(&f->crash_mu);
    f->crashes = NULL;
    pthread_mutex_unlock(&f->crash_mu);
}

void nwb__forwarder_stop(struct nwb__forwarder *f)
{
    if (f == NULL) {
        return;
    }
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->thread, NULL);
    nwb__ch_http_cleanup(&f->http);
    nwb_buf_cleanup(&f->rows);
    nwb_buf_cleanup(&f->answer);
    nwb_buf_cleanup(&f->run_rows);
    nwb_buf_cleanup(&f->crash_rows);
    nwb_buf_cleanup(&f->frame_rows);
    nwb_free(f->chunk);
    nwb_free(f->marked);
    nwb_free(f->visiting);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->crash_mu);
    pthread_mutex_destroy(&f->mu);
    nwb_free(f);
}
