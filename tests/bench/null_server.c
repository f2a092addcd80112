/* SPDX-License-Identifier: MIT */
/*
 * null_server.c - the practical limit for ingest: one libuv thread that
 * accepts, parses requests with llhttp, write(2)s every body slice to one
 * file (rewound at a size cap, so disk use stays bounded) and answers 200
 * with an empty body. Prints "listening on http://HOST:PORT" like nwb-logserver.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llhttp.h>
#include <uv.h>

#include "nwb/alloc.h"
#include "nwb/common.h"

#define NULL_READ_BUF (64u * 1024u)

static const char resp_ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
static const char resp_bad[] =
    "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

struct null_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_signal_t sig_int;
    uv_signal_t sig_term;
    llhttp_settings_t settings;
    struct null_conn *conns; /* every open connection, for shutdown */
    int fd;                  /* the body file */
    uint64_t file_off;       /* bytes since the last rewind */
    uint64_t file_cap;       /* rewind when a write would pass this */
    uint64_t requests;
    uint64_t body_bytes;
    uint64_t write_errors;
    int stopping;
};

struct null_conn {
    uv_tcp_t tcp;
    llhttp_t parser;
    struct null_server *srv;
    struct null_conn *prev;
    struct null_conn *next;
    int close_after_write; /* answer, then close */
    int closing;
    char buf[NULL_READ_BUF];
};

struct null_write {
    uv_write_t req;
    struct null_conn *conn;
};

static void body_write(struct null_server *srv, const char *at, size_t len)
{
    if (srv->file_off + len > srv->file_cap) {
        if (lseek(srv->fd, 0, SEEK_SET) == 0) {
            srv->file_off = 0;
        }
    }
    while (len > 0) {
        ssize_t n = write(srv->fd, at, len);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            srv->write_errors++;
            return;
        }
        at += n;
        len -= (size_t)n;
        srv->file_off += (uint64_t)n;
        srv->body_bytes += (uint64_t)n;
    }
}

static void on_conn_closed(uv_handle_t *h)
{
    struct null_conn *c = NWB_CONTAINER_OF(h, struct null_conn, tcp);

    nwb_free(c);
}

static void conn_close(struct null_conn *c)
{
    struct null_server *srv = c->srv;

    if (c->closing) {
        return;
    }
    c->closing = 1;
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        srv->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_write_done(uv_write_t *req, int status)
{
    struct null_write *w = NWB_CONTAINER_OF(req, struct null_write, req);
    struct null_conn *c = w->conn;

    nwb_free(w);
    if ((status != 0 || c->close_after_write) && !c->closing) {
        conn_close(c);
    }
}

/* Answer with a constant response: try_write first (the common case), uv_write the rest. */
static void conn_answer(struct null_conn *c, const char *resp, size_t len)
{
    uv_buf_t b = uv_buf_init((char *)(uintptr_t)resp, (unsigned)len); /* uv_buf_t is not const */
    struct null_write *w;
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);

    if (n == (int)len) {
        if (c->close_after_write) {
            conn_close(c);
        }
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        conn_close(c);
        return;
    }
    if (n > 0) {
        b.base += n;
        b.len -= (size_t)n;
    }
    w = nwb_malloc(sizeof(*w));
    if (w == NULL) {
        conn_close(c);
        return;
    }
    w->conn = c;
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write_done) != 0) {
        nwb_free(w);
        conn_close(c);
    }
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    struct null_conn *c = p->data;

    body_write(c->srv, at, len);
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct null_conn *c = p->data;

    c->srv->requests++;
    if (!llhttp_should_keep_alive(p)) {
        c->close_after_write = 1;
    }
    conn_answer(c, resp_ok, sizeof(resp_ok) - 1);
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct null_conn *c = NWB_CONTAINER_OF(h, struct null_conn, tcp);

    (void)suggested;
    *buf = uv_buf_init(c->buf, sizeof(c->buf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct null_conn *c = NWB_CONTAINER_OF(s, struct null_conn, tcp);
    llhttp_errno_t err;

    if (nread < 0) {
        conn_close(c);
        return;
    }
    if (nread == 0 || c->closing || c->close_after_write) {
        return;
    }
    err = llhttp_execute(&c->parser, buf->base, (size_t)nread);
    if (err != HPE_OK && !c->closing) {
        c->close_after_write = 1;
        uv_read_stop(s);
        conn_answer(c, resp_bad, sizeof(resp_bad) - 1);
    }
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct null_server *srv = NWB_CONTAINER_OF(listener, struct null_server, listener);
    struct null_conn *c;

    if (status != 0 || srv->stopping) {
        return;
    }
    c = nwb_calloc(1, sizeof(*c));
    if (c == NULL) {
        return;
    }
    c->srv = srv;
    if (uv_tcp_init(srv->loop, &c->tcp) != 0) {
        nwb_free(c);
        return;
    }
    c->next = srv->conns;
    if (srv->conns != NULL) {
        srv->conns->prev = c;
    }
    srv->conns = c;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    llhttp_init(&c->parser, HTTP_REQUEST, &srv->settings);
    c->parser.data = c;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        conn_close(c);
    }
}

static void on_signal(uv_signal_t *sig, int signum)
{
    struct null_server *srv = sig->data;

    (void)signum;
    if (srv->stopping) {
        return;
    }
    srv->stopping = 1;
    uv_close((uv_handle_t *)&srv->listener, NULL);
    uv_close((uv_handle_t *)&srv->sig_int, NULL);
    uv_close((uv_handle_t *)&srv->sig_term, NULL);
    while (srv->conns != NULL) {
        conn_close(srv->conns);
    }
}

/* A whole decimal number in [lo, hi], or -1. */
static long parse_num(const char *s, long lo, long hi)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    return v;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: null_server [--bind ADDR] [--port N] [--out DIR] [--max-file-mb N]\n"
               "  Accepts HTTP/1.1 requests, writes each body to DIR/null-bodies.bin (rewound\n"
               "  after N MiB, default 16384), answers 200 with an empty body.\n");
}

int main(int argc, char **argv)
{
    static struct null_server srv;
    const char *bind_addr = "127.0.0.1";
    const char *out_dir = ".";
    char path[4096];
    struct sockaddr_storage addr;
    int addrlen = (int)sizeof(addr);
    char host[64];
    long port = 7651;
    long cap_mb = 16384;
    int err;

    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (v == NULL) {
            usage(stderr);
            return 2;
        }
        if (strcmp(argv[i], "--bind") == 0) {
            bind_addr = v;
        } else if (strcmp(argv[i], "--port") == 0) {
            port = parse_num(v, 0, 65535);
        } else if (strcmp(argv[i], "--out") == 0) {
            out_dir = v;
        } else if (strcmp(argv[i], "--max-file-mb") == 0) {
            cap_mb = parse_num(v, 1, 1024 * 1024);
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (port < 0 || port > 65535 || cap_mb < 1 || cap_mb > 1024 * 1024) {
        fprintf(stderr, "null_server: --port must be 0..65535, --max-file-mb 1..1048576\n");
        return 2;
    }
    snprintf(path, sizeof(path), "%s/null-bodies.bin", out_dir);
    srv.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (srv.fd < 0) {
        fprintf(stderr, "null_server: open %s: %s\n", path, strerror(errno));
        return 1;
    }
    srv.file_cap = (uint64_t)cap_mb * 1024u * 1024u;
    srv.loop = uv_default_loop();
    llhttp_settings_init(&srv.settings);
    srv.settings.on_body = on_body;
    srv.settings.on_message_complete = on_message_complete;

    if (uv_ip4_addr(bind_addr, (int)port, (struct sockaddr_in *)&addr) != 0 &&
        uv_ip6_addr(bind_addr, (int)port, (struct sockaddr_in6 *)&addr) != 0) {
        fprintf(stderr, "null_server: bad --bind address %s\n", bind_addr);
        return 2;
    }
    uv_tcp_init(srv.loop, &srv.listener);
    err = uv_tcp_bind(&srv.listener, (const struct sockaddr *)&addr, 0);
    if (err == 0) {
        err = uv_listen((uv_stream_t *)&srv.listener, 511, on_connection);
    }
    if (err == 0) {
        err = uv_tcp_getsockname(&srv.listener, (struct sockaddr *)&addr, &addrlen);
    }
    if (err != 0) {
        fprintf(stderr, "null_server: listen on %s:%ld: %s\n", bind_addr, port, uv_err_name(err));
        return 1;
    }
    if (addr.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&addr, host, sizeof(host));
        port = ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
        printf("null_server listening on http://[%s]:%ld\n", host, port);
    } else {
        uv_ip4_name((struct sockaddr_in *)&addr, host, sizeof(host));
        port = ntohs(((struct sockaddr_in *)&addr)->sin_port);
        printf("null_server listening on http://%s:%ld\n", host, port);
    }
    fflush(stdout);
    uv_signal_init(srv.loop, &srv.sig_int);
    uv_signal_init(srv.loop, &srv.sig_term);
    srv.sig_int.data = &srv;
    srv.sig_term.data = &srv;
    uv_signal_start(&srv.sig_int, on_signal, SIGINT);
    uv_signal_start(&srv.sig_term, on_signal, SIGTERM);

    uv_run(srv.loop, UV_RUN_DEFAULT);
    uv_loop_close(srv.loop);
    close(srv.fd);
    fprintf(stderr, "null_server: %llu requests, %llu body bytes, %llu write errors\n",
            (unsigned long long)srv.requests, (unsigned long long)srv.body_bytes,
            (unsigned long long)srv.write_errors);
    return srv.write_errors == 0 ? 0 : 1;
}
