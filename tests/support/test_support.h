/* SPDX-License-Identifier: MIT */
/*
 * test_support.h - helpers for integration tests: start the real
 * nwb-logserver binary on 127.0.0.1 port 0 and read its port from the
 * listening line, raw HTTP over loopback sockets, waiting on files with a
 * timeout (never a bare sleep), temporary directories.
 */
#ifndef NWB_TEST_SUPPORT_H
#define NWB_TEST_SUPPORT_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/types.h>

struct nwb_test_server {
    pid_t pid;
    int port;
    int stdout_fd;     /* the rest of the server's stdout, non-blocking */
    int stderr_fd;     /* its stderr, non-blocking */
    char out_dir[512]; /* --out */
};

/* A fresh directory under $TMPDIR (or /tmp); @p out holds at least 512 bytes. Returns 0. */
int nwb_test_tmpdir(const char *tag, char *out, size_t outlen);

/* rm -rf @p path (best effort). */
void nwb_test_rmtree(const char *path);

/*
 * Start nwb-logserver (NWB_TEST_SERVER_EXE unless @p exe) with
 * --port @p port (0 for any: the usual; else a port held by
 * nwb_test_reserve_dead_port()) --out @p out_dir and the NULL-terminated
 * @p extra arguments; wait up to 10 s for "listening on http://HOST:PORT".
 * Returns 0 with @p srv filled, or -1 (the process is reaped).
 */
int nwb_test_server_start(struct nwb_test_server *srv, const char *exe, const char *out_dir,
                          int port, const char *const *extra);

/* Send @p sig and wait up to @p timeout_ms for exit; SIGKILL after that. Returns the
 * wait status (as from waitpid), or -1. */
int nwb_test_server_stop(struct nwb_test_server *srv, int sig, int timeout_ms);

/* Read whatever the server wrote on stderr so far (NUL-terminated, truncated to @p cap). */
size_t nwb_test_server_stderr(struct nwb_test_server *srv, char *buf, size_t cap);

/*
 * A loopback port where nothing listens, held for as long as the returned socket is open:
 * bound to 127.0.0.1 and never listening, so a connect is refused at once, and the kernel
 * gives the port to no other socket meanwhile (neither to a bind of port 0 nor to a connect).
 * A released port number could be taken by a parallel test before it is used (ctest -j).
 *
 * The socket has SO_REUSEADDR, so a server that binds with SO_REUSEADDR too can still bind
 * and listen on the held port later: libuv's uv_tcp_bind (nwb-logserver) always sets it, and
 * so does the client tests' responder. That is how a test has a server come up later on a
 * port the client already knows, or restarts one on the same port, with no moment where the
 * port is free. Returns the socket (close it at the end of the test) with the port in
 * @p *port, or -1.
 */
int nwb_test_reserve_dead_port(int *port);

/* The address 127.0.0.1:@p port (0: any, for a bind). */
struct sockaddr_in nwb_test_loopback(int port);

/* Connect to 127.0.0.1:@p port (blocking socket with 10 s send/recv timeouts). Returns fd or -1. */
int nwb_test_connect(int port);

/* Write all of @p len bytes. Returns 0 or -1. */
int nwb_test_send_all(int fd, const void *data, size_t len);

/*
 * Read one HTTP response from @p fd: status code into @p *status, the body
 * (by Content-Length) into @p body (NUL-terminated, truncated to @p cap).
 * Returns the body length, or -1 on EOF/timeout/garbage.
 */
long nwb_test_read_response(int fd, int *status, char *body, size_t cap);

/*
 * One request on a fresh connection: method, path, extra header lines
 * ("Name: value\r\n"..., may be NULL), body. Returns the status or -1; the
 * response body goes to @p resp (may be NULL).
 */
int nwb_test_http(int port, const char *method, const char *path, const char *headers,
                  const void *body, size_t body_len, char *resp, size_t resp_cap);

/* 1 once the connection on @p fd is closed by the peer within @p timeout_ms, else 0. */
int nwb_test_wait_closed(int fd, int timeout_ms);

/* Create or replace @p path with @p len bytes of @p data and give it @p mode. 0, or -1. */
int nwb_test_write_file(const char *path, const void *data, size_t len, unsigned mode);

/* Read a whole file into a malloc'd NUL-terminated buffer (NULL if missing). */
char *nwb_test_read_file(const char *path, size_t *len);

/*
 * Find the single run directory runs/<program>_*_<run> under @p out_dir and
 * write the path of its log.txt into @p path. Returns 0, or -1 if none (or
 * several) exist.
 */
int nwb_test_find_run_log(const char *out_dir, const char *program, const char *run, char *path,
                          size_t pathlen);

/*
 * Occurrences of @p needle in @p hay (overlapping ones too), in linear time:
 * a strstr loop rescans the whole rest of the text under AddressSanitizer,
 * whose interceptor measures the haystack on every call.
 */
size_t nwb_test_count(const char *hay, const char *needle);

/* Wait up to @p timeout_ms until @p path contains @p needle. Returns 1 or 0. */
int nwb_test_wait_file_contains(const char *path, const char *needle, int timeout_ms);

/*
 * Run @p argv[0] (a path) with @p argv and the environment plus @p env ("NAME=value", NULL
 * terminated; may be NULL), without NWB_LOGSERVER and without core dumps, its stdout and
 * stderr into @p out_path (created; /dev/null when NULL). Waits for its end at most
 * @p timeout_ms (a pidfd; polled waitpid where pidfd_open is missing, e.g. under valgrind),
 * then SIGKILL. Returns the wait status, or -1.
 */
int nwb_test_run(const char *const *argv, const char *const *env, const char *out_path,
                 int timeout_ms);

/* Milliseconds on the monotonic clock. */
long long nwb_test_now_ms(void);

/* utime + stime of process @p pid (all its threads) in clock ticks (sysconf(_SC_CLK_TCK)),
 * from /proc/PID/stat; -1 when it cannot be read. */
long long nwb_test_cpu_ticks(pid_t pid);

/* The value of the unlabelled /metrics series @p name of the server on @p port, or -1 (no
 * answer, no such line). */
long long nwb_test_metric(int port, const char *name);

/* Wait up to @p timeout_ms until nwb_test_metric() is at least @p at_least (/metrics has no
 * change notification: read in 50 ms slices). Returns 1, or 0 at the deadline. */
int nwb_test_wait_metric(int port, const char *name, long long at_least, int timeout_ms);

#endif /* NWB_TEST_SUPPORT_H */
