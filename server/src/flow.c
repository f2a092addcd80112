/* SPDX-License-Identifier: MIT */
/*
 * flow.c - flow control between the sockets and the log worker. Two bounds:
 * the body budget (--max-buffered-bytes: bytes of request bodies held in
 * memory, reserved when a head announces its body, so a granted request can
 * always finish) and the job queue (--queue-max-jobs: jobs queued or being
 * written; when it is full every connection stops reading until it drains
 * below half). Nothing accepted is ever dropped: requests wait, in order.
 * A small log body (NWB__INLINE_BODY_MAX) is written by the loop thread
 * itself when nothing waits, the worker is idle and the run is open, up to
 * NWB__INLINE_TICK_BYTES per loop clock tick so one flood cannot hold the
 * loop: on 2 cores the two cross-thread wake-ups of a hand-off cost more
 * than the work. Order per run holds: inline only with no job pending.
 */
#include "server_int.h"

enum { LIST_NONE = 0, LIST_BUDGET = 1, LIST_QUEUE = 2 };

static void list_push(struct nwb__conn **head, struct nwb__conn **tail, struct nwb__conn *c, int id)
{
    c->wait_next = NULL;
    c->wait_prev = *tail;
    if (*tail != NULL) {
        (*tail)->wait_next = c;
    } else {
        *head = c;
    }
    *tail = c;
    c->wait_list = id;
}

static void list_remove(struct nwb__conn **head, struct nwb__conn **tail, struct nwb__conn *c)
{
    if (c->wait_prev != NULL) {
        c->wait_prev->wait_next = c->wait_next;
    } else {
        *head = c->wait_next;
    }
    if (c->wait_next != NULL) {
        c->wait_next->wait_prev = c->wait_prev;
    } else {
        *tail = c->wait_prev;
    }
    c->wait_prev = c->wait_next = NULL;
    c->wait_list = LIST_NONE;
}

static int budget_fits(const struct nwb_server *srv, size_t bytes)
{
    /* With nothing held, any single request (<= --max-body-bytes) fits. */
    return srv->budget_used == 0 || srv->budget_used + bytes <= srv->max_buffered_bytes;
}

int nwb__flow_reserve(struct nwb_server *srv, struct nwb__conn *c, size_t bytes)
{
    if (srv->budget_head == NULL && budget_fits(srv, bytes)) {
        srv->budget_used += bytes;
        c->reserved = bytes;
        return 1;
    }
    c->reserved = bytes; /* wanted; counted in budget_used once granted */
    list_push(&srv->budget_head, &srv->budget_tail, c, LIST_BUDGET);
    srv->metrics.budget_waits++;
    return 0;
}

static void grant_waiters(struct nwb_server *srv)
{
    /* A granted request can finish at once and release, re-entering here. */
    if (srv->granting) {
        return;
    }
    srv->granting = 1;
    while (srv->budget_head != NULL && budget_fits(srv, srv->budget_head->reserved)) {
        struct nwb__conn *c = srv->budget_head;

        list_remove(&srv->budget_head, &srv->budget_tail, c);
        srv->budget_used += c->reserved;
        nwb__conn_budget_granted(c);
    }
    srv->granting = 0;
}

void nwb__flow_release(struct nwb_server *srv, struct nwb__conn *c)
{
    if (c->wait_list == LIST_BUDGET) {
        /* Never granted: nothing to give back. */
        list_remove(&srv->budget_head, &srv->budget_tail, c);
        c->reserved = 0;
        return;
    }
    srv->budget_used -= c->reserved;
    c->reserved = 0;
    grant_waiters(srv);
}

static void reading_set_paused(struct nwb_server *srv, int paused)
{
    if (srv->reading_paused == paused) {
        return;
    }
    srv->reading_paused = paused;
    if (paused) {
        srv->metrics.read_pauses++;
    }
    for (struct nwb__conn *c = srv->conns; c != NULL; c = c->next) {
        nwb__conn_update_reading(c);
    }
}

static void hand_over(struct nwb_server *srv, struct nwb__conn *c)
{
    c->state = NWB__CONN_IN_WORKER;
    c->job_out = 1;
    nwb__log_worker_submit(srv->worker, &c->job);
}

/* Room for @p len more inline bytes in this tick of the loop clock (counted when there is). */
static int inline_fits(struct nwb_server *srv, size_t len)
{
    const uint64_t now = uv_now(srv->loop);

    if (now != srv->inline_tick) {
        srv->inline_tick = now;
        srv->inline_bytes = 0;
    }
    if (len > NWB__INLINE_BODY_MAX || srv->inline_bytes + len > NWB__INLINE_TICK_BYTES) {
        return 0;
    }
    srv->inline_bytes += len;
    return 1;
}

void nwb__flow_submit(struct nwb_server *srv, struct nwb__conn *c)
{
    if (srv->queue_head == NULL && inline_fits(srv, c->job.body_len)) {
        c->state = NWB__CONN_IN_WORKER; /* as if handed over: the done path is the same */
        c->job_out = 1;
        srv->metrics.inline_jobs++;
        if (nwb__log_worker_try_inline(srv->worker, &c->job)) {
            return; /* answered (c may be gone) */
        }
        srv->metrics.inline_jobs--;
        srv->inline_bytes -= c->job.body_len;
    }
    if (srv->queue_head == NULL && nwb__log_worker_outstanding(srv->worker) < srv->queue_max_jobs) {
        hand_over(srv, c);
        return;
    }
    c->state = NWB__CONN_WAIT_QUEUE;
    list_push(&srv->queue_head, &srv->queue_tail, c, LIST_QUEUE);
    reading_set_paused(srv, 1);
}

void nwb__flow_job_returned(struct nwb_server *srv)
{
    while (srv->queue_head != NULL &&
           nwb__log_worker_outstanding(srv->worker) < srv->queue_max_jobs) {
        struct nwb__conn *c = srv->queue_head;

        list_remove(&srv->queue_head, &srv->queue_tail, c);
        hand_over(srv, c);
    }
    if (srv->reading_paused && srv->queue_head == NULL &&
        nwb__log_worker_outstanding(srv->worker) <= srv->queue_max_jobs / 2) {
        reading_set_paused(srv, 0);
    }
}

void nwb__flow_forget(struct nwb_server *srv, struct nwb__conn *c)
{
    if (c->wait_list == LIST_BUDGET) {
        list_remove(&srv->budget_head, &srv->budget_tail, c);
        c->reserved = 0;
    } else if (c->wait_list == LIST_QUEUE) {
        list_remove(&srv->queue_head, &srv->queue_tail, c);
    }
}
