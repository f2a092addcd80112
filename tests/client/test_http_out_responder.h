/* SPDX-License-Identifier: MIT */
/*
 * test_http_out_responder.h - a tiny scripted HTTP/1.1 server on 127.0.0.1
 * for the network tests: a thread with a listening socket that records every
 * request (headers and body) and answers each with the next scripted status.
 */
#ifndef NWB_TEST_HTTP_OUT_RESPONDER_H
#define NWB_TEST_HTTP_OUT_RESPONDER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define RESP_SCRIPT_MAX 64
#define RESP_CONN_MAX   8

/* What to do with one request. */
struct resp_action {
    int status;          /* 0: answer 200 */
    const char *headers; /* extra header lines ("Retry-After: 1\r\n"), may be NULL */
    int no_answer;       /* read the request, never answer (the client must time out) */
    int close_now;       /* read the request, close the connection without answering */
};

struct resp_request {
    char program[80];
    char run[40];
    char seq[32];
    char host[300];
    char ctype[120];
    char auth[300];
    char method_line[200];
    uint8_t *body; /* malloc'd */
    size_t body_len;
    int status; /* what it was answered (0: none) */
};

struct resp_conn {
    int fd;
    uint8_t *buf;
    size_t len;
    size_t cap;
    int silent; /* no_answer: ignore everything further on this connection */
};

struct responder {
    int listen_fd;
    int port;
    int wake[2];
    pthread_t thread;
    int running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* script, under mu */
    struct resp_action script[RESP_SCRIPT_MAX];
    size_t nscript;
    int split_bytes;  /* write each response one byte per send() */
    int close_always; /* "Connection: close" on every response, then close */
    /* log, under mu */
    struct resp_request *reqs;
    size_t nreq;
    size_t cap;
    uint64_t accepted;
    struct resp_conn conns[RESP_CONN_MAX];
};

/*
 * Start on 127.0.0.1:@p port and set r->port to it. @p port is 0 (any: the usual), or a port
 * held by nwb_test_reserve_dead_port() for a server that comes up later on a port the client
 * already knows (the responder binds with SO_REUSEADDR to share it). Returns 0 or -1.
 */
int responder_start(struct responder *r, int port);

/* Stop the thread, close everything, free the log. */
void responder_stop(struct responder *r);

/* Append an action for the next unanswered request (before or while running). */
void responder_push(struct responder *r, struct resp_action a);

/* Wait until at least @p n requests were recorded (and answered if scripted). 1 or 0 on timeout. */
int responder_wait(struct responder *r, size_t n, int timeout_ms);

/* Number of requests recorded so far. */
size_t responder_count(struct responder *r);

/* A copy of request @p i (body borrowed; valid until stop). */
struct resp_request responder_get(struct responder *r, size_t i);

#endif /* NWB_TEST_HTTP_OUT_RESPONDER_H */
