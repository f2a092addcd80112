/* SPDX-License-Identifier: MIT */
/*
 * test_ring.c - the per-thread ring: wrap-around with PAD records, the full
 * check, size rounding; through the client: a full ring with DROP counts the
 * drops and writes a drop note where the gap is, BLOCK waits and succeeds
 * once the worker drains (or gives up at its timeout) and sleeps rather than
 * spins while it waits, and after a thread's first call no call allocates.
 */
#define _GNU_SOURCE
#undef NWB_FINAL
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <time.h>

#include "nwb/alloc.h"
#include "nwb/client.h"
#include "nwb/log.h"
#include "nwb/log_line.h"

#include "test_core_capture.h"

/* ---- counting allocator, installed before any other nwb call ---- */

static _Thread_local long thread_allocs;

static void *count_malloc(size_t n)
{
    thread_allocs++;
    return malloc(n);
}

static void *count_realloc(void *p, size_t n)
{
    thread_allocs++;
    return realloc(p, n);
}

static void *count_calloc(size_t n, size_t m)
{
    thread_allocs++;
    return calloc(n, m);
}

/* Wait up to @p ms for *@p value >= @p want (a bounded wait on a counter, not a sleep). */
static int wait_stat(nwb_client_t *c, size_t offset, uint64_t want, int ms)
{
    const uint64_t deadline = nwb_time_mono_ns() + (uint64_t)ms * 1000000u;

    for (;;) {
        nwb_client_stats_t st;
        uint64_t v;

        nwb_client_stats_get(c, &st);
        memcpy(&v, (const char *)&st + offset, sizeof(v));
        if (v >= want) {
            return 1;
        }
        if (nwb_time_mono_ns() > deadline) {
            return 0;
        }
        poll(NULL, 0, 1);
    }
}

/* ---- the ring alone ---- */

static void test_ring_wraps_with_padding_and_keeps_data(void **state)
{
    struct nwb__ring *r = nwb__ring_create(4096, 1);
    uint64_t produced = 0;
    uint64_t consumed = 0;
    unsigned pads = 0;

    (void)state;
    assert_non_null(r);
    assert_int_equal(r->cap, 4096);
    assert_int_equal(r->rec_max, 2048);
    for (int round = 0; round < 2000; round++) {
        /* Produce until full, with sizes that do not divide the buffer. */
        for (;;) {
            const uint32_t size = NWB__REC_HDR + 8u * (uint32_t)(1 + produced % 37);
            uint8_t *p = nwb__ring_reserve(r, size);
            struct nwb__rec *h;

            if (p == NULL) {
                const uint64_t used = r->head_local - atomic_load(&r->tail);
                const uint64_t off = r->head_local & r->mask;
                const uint64_t need = off + size <= r->cap ? size : size + (r->cap - off);

                assert_true(r->cap - used < need); /* refused only when it truly does not fit */
                break;
            }
            h = (struct nwb__rec *)(void *)p;
            h->size = size;
            h->type = NWB__REC_TEXT;
            h->time_ns = produced;
            memset(p + NWB__REC_HDR, (int)(produced & 0xff), size - NWB__REC_HDR);
            nwb__ring_commit(r, size);
            produced++;
        }
        /* Consume part of it (the consumer side of the worker). */
        {
            const uint64_t head = atomic_load(&r->head);
            uint64_t tail = atomic_load(&r->tail);
            int take = 1 + round % 9;

            while (tail != head && take > 0) {
                const struct nwb__rec *h =
                    (const struct nwb__rec *)(const void *)(r->buf + (tail & r->mask));

                assert_true(h->size >= 8 && (h->size & 7u) == 0 && h->size <= head - tail);
                if (h->type == NWB__REC_PAD) {
                    pads++;
                    assert_int_equal((tail + h->size) & r->mask, 0); /* pads end the buffer */
                } else {
                    const uint8_t *payload = (const uint8_t *)h + NWB__REC_HDR;

                    assert_int_equal(h->time_ns, consumed);
                    assert_int_equal(h->size, NWB__REC_HDR + 8u * (uint32_t)(1 + consumed % 37));
                    for (uint32_t i = 0; i < h->size - NWB__REC_HDR; i++) {
                        assert_int_equal(payload[i], consumed & 0xff);
                    }
                    consumed++;
                    take--;
                }
                tail += h->size;
            }
            atomic_store(&r->tail, tail);
        }
    }
    assert_true(pads > 100);
    assert_true(consumed > 9000); /* sum of 1 + round % 9 over the rounds: 9993 */
    nwb__ring_destroy(r);
}

static void test_ring_sizes_round_to_powers_of_two_within_bounds(void **state)
{
    (void)state;
    assert_int_equal(nwb__ring_size_round(0), NWB__RING_DEFAULT);
    assert_int_equal(nwb__ring_size_round(1), 4096);
    assert_int_equal(nwb__ring_size_round(4096), 4096);
    assert_int_equal(nwb__ring_size_round(4097), 8192);
    assert_int_equal(nwb__ring_size_round(300000), 512u * 1024u);
    assert_int_equal(nwb__ring_size_round(NWB__RING_MAX), NWB__RING_MAX);
    assert_int_equal(nwb__ring_size_round(NWB__RING_MAX + 1u), NWB__RING_MAX);
}

/* ---- the full-ring policies through the client ---- */

static nwb_client_t *small_ring_client(int policy, unsigned timeout_us)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;

    cfg.ring_bytes = 4096;
    cfg.full_policy = policy;
    cfg.block_timeout_us = timeout_us;
    return cap_client(&cfg);
}

/*
 * A plain-%s site writes straight into the ring only while its worst case
 * (every string NWB__STR_MAX long) fits; past that edge the general path
 * takes the call, so the ring still fills to its last record's worth and
 * both paths render the same text.
 */
static void test_direct_path_edge_falls_back_without_dropping(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    nwb_client_t *c;
    nwb_client_stats_t st;
    char want[64];
    int i;

    (void)state;
    cfg.ring_bytes = 16384; /* rec_max 8 KiB: the 4,152-byte worst case of one %s fits */
    c = cap_client(&cfg);
    assert_non_null(c);
    cap_gate(1);
    for (i = 0; i < 1000; i++) {
        NWB_LOGGER_INFO("s %d %s", i, "x"); /* 24 + 16 + 2 -> 48-byte records */
        nwb_client_stats_get(c, &st);
        if (st.records_dropped != 0) {
            break;
        }
    }
    /* Every 48 bytes of the ring were used; the direct path alone would stop ~4 KiB early. */
    assert_int_equal(st.records_accepted, 16384u / 48u);
    assert_int_equal(st.records_dropped, 1);
    cap_gate(0);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    assert_int_equal(cap_count(), 16384u / 48u); /* the drop note waits for the next record */
    for (size_t k = 0; k < 16384u / 48u; k++) {
        snprintf(want, sizeof(want), "s %d x", (int)k);
        assert_string_equal(cap_get(k)->msg, want);
    }
    nwb_client_destroy(c);
    cap_free();
}

static void test_drop_counts_and_notes_the_gap_where_it_is(void **state)
{
    nwb_client_t *c = small_ring_client(NWB_CLIENT_FULL_DROP, 0);
    nwb_client_stats_t st;
    uint64_t accepted;
    uint64_t dropped;
    char want[128];
    int i;

    (void)state;
    assert_non_null(c);
    cap_gate(1); /* the worker cannot hand anything on: the ring fills */
    for (i = 0; i < 100000; i++) {
        NWB_LOGGER_INFO("rec %d", i);
        nwb_client_stats_get(c, &st);
        if (st.records_dropped >= 10) {
            break;
        }
    }
    for (int j = 0; j < 5; j++) {
        NWB_LOGGER_INFO("rec %d", ++i);
    }
    nwb_client_stats_get(c, &st);
    accepted = st.records_accepted;
    dropped = st.records_dropped;
    assert_int_equal(dropped, 15);
    assert_true(accepted >= 100 && accepted <= 128); /* 32-byte records in 4 KiB */
    assert_int_equal(accepted + dropped, (uint64_t)i + 1u);

    cap_gate(0);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    NWB_LOGGER_INFO("after the gap %d", 1);
    assert_int_equal(nwb_client_flush(c, 10000), 0);

    assert_int_equal(cap_count(), accepted + 2u);
    for (uint64_t k = 0; k < accepted; k++) {
        snprintf(want, sizeof(want), "rec %d", (int)k);
        assert_string_equal(cap_get(k)->msg, want);
        assert_int_equal(cap_get(k)->rec.flags & NWB_LOG_RECORD_DROPNOTE, 0);
    }
    snprintf(want, sizeof(want), "nwb: dropped %d records here (ring full)", (int)dropped);
    assert_string_equal(cap_get(accepted)->msg, want);
    assert_true(cap_get(accepted)->rec.flags & NWB_LOG_RECORD_DROPNOTE);
    assert_int_equal(cap_get(accepted)->rec.level, NWB_LOG_WARNING);
    assert_int_equal(cap_get(accepted)->rec.thread_id, test_gettid());
    assert_string_equal(cap_get(accepted + 1)->msg, "after the gap 1");
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.records_dropped, dropped); /* the note is not a record of its own */
    assert_int_equal(st.records_accepted, accepted + 1u);
    nwb_client_destroy(c);
    cap_free();
}

struct block_producer {
    int count;
    atomic_int done;
};

static void *block_producer_main(void *arg)
{
    struct block_producer *bp = arg;

    for (int i = 0; i < bp->count; i++) {
        NWB_LOGGER_INFO("blk %d", i);
    }
    atomic_store(&bp->done, 1);
    return NULL;
}

static void test_block_waits_then_succeeds_when_the_worker_drains(void **state)
{
    nwb_client_t *c = small_ring_client(NWB_CLIENT_FULL_BLOCK, 30u * 1000u * 1000u);
    struct block_producer bp = {500, 0};
    nwb_client_stats_t st;
    pthread_t t;
    char want[64];

    (void)state;
    assert_non_null(c);
    cap_gate(1);
    assert_int_equal(pthread_create(&t, NULL, block_producer_main, &bp), 0);
    /* 128 records of 32 bytes fill the 4 KiB ring; the producer must then be waiting. */
    assert_true(wait_stat(c, offsetof(nwb_client_stats_t, records_accepted), 128, 10000));
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.records_accepted, 128);
    assert_int_equal(st.records_dropped, 0);
    assert_int_equal(atomic_load(&bp.done), 0);
    /* The worker tried and was refused: the producer waits for room, not for the worker. */
    {
        const uint64_t deadline = nwb_time_mono_ns() + 10ull * 1000000000u;

        while (atomic_load(&g_cap->efull_seen) == 0 && nwb_time_mono_ns() < deadline) {
            poll(NULL, 0, 1);
        }
    }
    assert_true(atomic_load(&g_cap->efull_seen) > 0);
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.records_accepted, 128);
    assert_int_equal(st.records_dropped, 0);
    assert_int_equal(atomic_load(&bp.done), 0);

    cap_gate(0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.records_accepted, 500);
    assert_int_equal(st.records_dropped, 0);
    assert_int_equal(cap_count(), 500);
    for (int i = 0; i < 500; i++) {
        snprintf(want, sizeof(want), "blk %d", i);
        assert_string_equal(cap_get((size_t)i)->msg, want);
    }
    nwb_client_destroy(c);
    cap_free();
}

static void test_block_gives_up_at_its_timeout_and_counts(void **state)
{
    nwb_client_t *c = small_ring_client(NWB_CLIENT_FULL_BLOCK, 20000);
    nwb_client_stats_t st;
    uint64_t t0;
    uint64_t waited;

    (void)state;
    assert_non_null(c);
    cap_gate(1);
    for (int i = 0; i < 128; i++) {
        NWB_LOGGER_INFO("fill %d", i);
    }
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.records_accepted, 128);
    t0 = nwb_time_mono_ns();
    NWB_LOGGER_INFO("one too many %d", 1);
    waited = nwb_time_mono_ns() - t0;
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.records_dropped, 1);
    assert_true(waited >= 20u * 1000u * 1000u);  /* waited its 20 ms ... */
    assert_true(waited < 5000u * 1000u * 1000u); /* ... and not much longer */
    cap_gate(0);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    NWB_LOGGER_INFO("later %d", 2);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    assert_int_equal(cap_count(), 128 + 2);
    assert_string_equal(cap_get(128)->msg, "nwb: dropped 1 record here (ring full)");
    assert_string_equal(cap_get(129)->msg, "later 2");
    nwb_client_destroy(c);
    cap_free();
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void test_block_sleeps_instead_of_spinning_while_it_waits(void **state)
{
    nwb_client_t *c = small_ring_client(NWB_CLIENT_FULL_BLOCK, 300u * 1000u);
    nwb_client_stats_t st;
    uint64_t t0;
    uint64_t cpu0;
    uint64_t waited;
    uint64_t cpu;

    (void)state;
    assert_non_null(c);
    cap_gate(1);
    for (int i = 0; i < 128; i++) {
        NWB_LOGGER_INFO("fill %d", i);
    }
    t0 = nwb_time_mono_ns();
    cpu0 = thread_cpu_ns();
    NWB_LOGGER_INFO("waits %d", 1); /* no room for its 300 ms: dropped at the timeout */
    cpu = thread_cpu_ns() - cpu0;
    waited = nwb_time_mono_ns() - t0;
    print_message("blocked %llu us, on the CPU %llu us\n", (unsigned long long)(waited / 1000u),
                  (unsigned long long)(cpu / 1000u));
    nwb_client_stats_get(c, &st);
    assert_int_equal(st.records_dropped, 1);
    assert_true(waited >= 300u * 1000u * 1000u);
    /* A spinning (pause + sched_yield) wait is on the CPU nearly all the time. */
    assert_true(cpu < waited / 10u);
    cap_gate(0);
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    nwb_client_destroy(c);
    cap_free();
}

struct destroy_wait {
    atomic_int filled;   /* the producer filled its ring and makes the blocked call next */
    atomic_int returned; /* ... and that call came back */
    atomic_ullong tid;
    uint64_t returned_at;
};

static void *blocked_caller_main(void *arg)
{
    struct destroy_wait *dw = arg;

    atomic_store(&dw->tid, (unsigned long long)test_gettid());
    for (int i = 0; i < 128; i++) {
        NWB_LOGGER_INFO("fill %d", i);
    }
    atomic_store(&dw->filled, 1);
    NWB_LOGGER_INFO("blocked %d", 1); /* 30 s timeout: only destroy can end it early */
    dw->returned_at = nwb_time_mono_ns();
    atomic_store(&dw->returned, 1);
    return NULL;
}

/* Opens the gate once the blocked call returned, so destroy can drain without its deadline. */
static void *ungate_main(void *arg)
{
    struct destroy_wait *dw = arg;
    const uint64_t deadline = nwb_time_mono_ns() + 20ull * 1000000000u;

    while (!atomic_load(&dw->returned) && nwb_time_mono_ns() < deadline) {
        poll(NULL, 0, 1);
    }
    cap_gate(0);
    return NULL;
}

/* 1 when the ring of thread @p tid has a producer sleeping for room. */
static int ring_has_waiter(nwb_client_t *c, uint64_t tid)
{
    int w = 0;

    pthread_mutex_lock(&c->ring_lock);
    for (struct nwb__ring *r = c->rings; r != NULL; r = r->next) {
        if (r->thread_id == tid && atomic_load(&r->waiting) != 0) {
            w = 1;
        }
    }
    pthread_mutex_unlock(&c->ring_lock);
    return w;
}

static void test_block_sleeping_for_room_gives_up_when_the_client_is_destroyed(void **state)
{
    nwb_client_t *c = small_ring_client(NWB_CLIENT_FULL_BLOCK, 30u * 1000u * 1000u);
    struct destroy_wait dw = {0, 0, 0, 0};
    const uint64_t deadline = nwb_time_mono_ns() + 10ull * 1000000000u;
    pthread_t prod;
    pthread_t ungate;
    uint64_t t0;

    (void)state;
    assert_non_null(c);
    cap_gate(1);
    assert_int_equal(pthread_create(&prod, NULL, blocked_caller_main, &dw), 0);
    while (!(atomic_load(&dw.filled) && ring_has_waiter(c, atomic_load(&dw.tid))) &&
           nwb_time_mono_ns() < deadline) {
        poll(NULL, 0, 1);
    }
    assert_true(ring_has_waiter(c, atomic_load(&dw.tid))); /* asleep on its ring's futex */
    assert_int_equal(atomic_load(&dw.returned), 0);
    t0 = nwb_time_mono_ns();
    assert_int_equal(pthread_create(&ungate, NULL, ungate_main, &dw), 0);
    nwb_client_destroy(c);
    assert_int_equal(pthread_join(prod, NULL), 0);
    assert_int_equal(pthread_join(ungate, NULL), 0);
    print_message("blocked call returned %llu us after destroy began\n",
                  (unsigned long long)((dw.returned_at - t0) / 1000u));
    assert_true(dw.returned_at - t0 < 2000ull * 1000000u); /* not its 30 s timeout */
    /* Nothing accepted was lost; the refused record is counted and noted at the end. */
    assert_int_equal(cap_count(), 129);
    assert_string_equal(cap_get(127)->msg, "fill 127");
    assert_string_equal(cap_get(128)->msg, "nwb: dropped 1 record here (ring full)");
    cap_free();
}

static void test_records_are_bounded_by_half_the_ring(void **state)
{
    nwb_client_t *c = small_ring_client(NWB_CLIENT_FULL_DROP, 0);
    char text[3001];
    const nwb_log_record_t *rec;

    (void)state;
    assert_non_null(c);
    memset(text, 's', 3000);
    text[3000] = '\0';
    NWB_LOGGER_INFO("%s", text); /* 24 + 8 + 3001 bytes > 2048 (half of 4 KiB): the string is cut */
    NWB_LOGGER_INFO(text);       /* raw: 24 + 3000 > 2048 */
    assert_int_equal(nwb_client_flush(c, 10000), 0);
    assert_int_equal(cap_count(), 2);
    rec = &cap_get(0)->rec;
    assert_int_equal(rec->msg_len, 2048 - 24 - 8 - 1 + 3);
    assert_true(rec->flags & NWB_LOG_RECORD_TRUNCATED);
    assert_memory_equal(rec->msg + rec->msg_len - 3, "...", 3);
    rec = &cap_get(1)->rec;
    assert_int_equal(rec->msg_len, 2048 - 24);
    assert_true(rec->flags & NWB_LOG_RECORD_TRUNCATED);
    assert_memory_equal(rec->msg + rec->msg_len - 3, "...", 3);
    nwb_client_destroy(c);
    cap_free();
}

/* ---- no allocation after the first call ---- */

struct alloc_probe {
    nwb_client_t *client;
    long allocs_first;
    long allocs_after;
};

static void *alloc_probe_main(void *arg)
{
    struct alloc_probe *ap = arg;
    char long_text[6000];
    long before;

    memset(long_text, 'q', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0';
    before = thread_allocs;
    NWB_LOGGER_INFO("first call %d", 0); /* registers this thread's ring: may allocate */
    ap->allocs_first = thread_allocs - before;
    before = thread_allocs;
    nwb_alloc_fail_after(0); /* and should anything try, it fails */
    for (int i = 0; i < 400; i++) {
        NWB_LOGGER_INFO("frame %d took %f ms on %s", i, i * 0.5, "render");
        NWB_LOGGER_WARNING("raw message");
        NWB_LOGGER_ERROR("%s|%Lf|%p|%zu", long_text, 1.5L, (void *)ap, (size_t)i);
        NWB_LOGGER_INFO("%m %d", i); /* the vsnprintf path */
        NWB_LOGGER_ESSENTIAL_INFO("ess %lld", (long long)i);
        if (i % 10 == 9) { /* keep well inside the 256 KiB ring: no drops */
            assert_int_equal(nwb_client_flush(ap->client, 10000), 0);
        }
    }
    nwb_alloc_fail_after(-1);
    ap->allocs_after = thread_allocs - before;
    return NULL;
}

static void test_no_allocation_after_the_first_call(void **state)
{
    nwb_client_config_t cfg = NWB_CLIENT_CONFIG_INIT;
    struct alloc_probe ap = {NULL, 0, 0};
    nwb_client_stats_t st;
    pthread_t t;

    (void)state;
    ap.client = cap_client(&cfg);
    assert_non_null(ap.client);
    assert_int_equal(pthread_create(&t, NULL, alloc_probe_main, &ap), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(ap.allocs_first >= 1); /* the counter works: the ring was allocated */
    assert_int_equal(ap.allocs_after, 0);
    assert_int_equal(nwb_client_flush(ap.client, 10000), 0);
    nwb_client_stats_get(ap.client, &st);
    assert_int_equal(st.records_accepted, 1 + 400 * 5);
    assert_int_equal(st.records_dropped, 0);
    assert_int_equal(cap_count(), 1 + 400 * 5);
    nwb_client_destroy(ap.client);
    cap_free();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_wraps_with_padding_and_keeps_data),
        cmocka_unit_test(test_ring_sizes_round_to_powers_of_two_within_bounds),
        cmocka_unit_test(test_direct_path_edge_falls_back_without_dropping),
        cmocka_unit_test(test_drop_counts_and_notes_the_gap_where_it_is),
        cmocka_unit_test(test_block_waits_then_succeeds_when_the_worker_drains),
        cmocka_unit_test(test_block_gives_up_at_its_timeout_and_counts),
        cmocka_unit_test(test_block_sleeps_instead_of_spinning_while_it_waits),
        cmocka_unit_test(test_block_sleeping_for_room_gives_up_when_the_client_is_destroyed),
        cmocka_unit_test(test_records_are_bounded_by_half_the_ring),
        cmocka_unit_test(test_no_allocation_after_the_first_call),
    };

    if (nwb_replace_allocator(count_malloc, count_realloc, count_calloc, free) != 0) {
        return 1;
    }
    return cmocka_run_group_tests_name("client.ring", tests, NULL, NULL);
}
