/* SPDX-License-Identifier: MIT */
/*
 * crash_altstack.c - alternate signal stacks per thread, so the handler can
 * run after a stack overflow. Threads do not inherit sigaltstack(), so each
 * engine thread calls nwb_crash_thread_prepare() (or is started through
 * nwb_crash_thread_create()); a pthread key releases the stack at exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nwb/alloc.h"

#include "../capture_int.h"

struct altstack {
    void *map; /* guard page + stack */
    size_t map_len;
};

static pthread_key_t altstack_key;
static pthread_once_t altstack_once = PTHREAD_ONCE_INIT;
static int altstack_key_err;
static _Thread_local struct altstack tls_stack;

static size_t page_size(void)
{
    const long p = sysconf(_SC_PAGESIZE);

    return p > 0 ? (size_t)p : 4096u;
}

static size_t stack_bytes(void)
{
    size_t want = NWB_CRASH_ALTSTACK_BYTES;
#ifdef _SC_MINSIGSTKSZ
    const long min = sysconf(_SC_MINSIGSTKSZ);

    /* Large vector-register contexts (AVX-512, AMX) raise the kernel's minimum. */
    if (min > 0 && (size_t)min * 4u > want) {
        want = (size_t)min * 4u;
    }
#endif
    return want;
}

static void release(struct altstack *s)
{
    stack_t cur;

    if (s->map == NULL) {
        return;
    }
    /* Only switch the alternate stack off if it is still ours. */
    if (sigaltstack(NULL, &cur) == 0 && (char *)cur.ss_sp == (char *)s->map + page_size()) {
        stack_t off;

        memset(&off, 0, sizeof(off));
        off.ss_flags = SS_DISABLE;
        (void)sigaltstack(&off, NULL);
    }
    munmap(s->map, s->map_len);
    s->map = NULL;
}

static void on_thread_exit(void *value)
{
    (void)value;
    release(&tls_stack);
}

static void key_create(void)
{
    altstack_key_err = pthread_key_create(&altstack_key, on_thread_exit);
}

int nwb_crash_thread_prepare(void)
{
    const size_t page = page_size();
    const size_t len = stack_bytes();
    stack_t ss;
    void *map;

    if (tls_stack.map != NULL) {
        return 0;
    }
    pthread_once(&altstack_once, key_create);
    if (altstack_key_err != 0) {
        return -altstack_key_err;
    }
    map = mmap(NULL, len + page, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) {
        return -errno;
    }
    /* The low page is a guard: a handler overflowing its stack faults instead of corrupting. */
    if (mprotect(map, page, PROT_NONE) != 0) {
        const int err = -errno;

        munmap(map, len + page);
        return err;
    }
    memset(&ss, 0, sizeof(ss));
    ss.ss_sp = (char *)map + page;
    ss.ss_size = len;
    if (sigaltstack(&ss, NULL) != 0) {
        const int err = -errno;

        munmap(map, len + page);
        return err;
    }
    tls_stack.map = map;
    tls_stack.map_len = len + page;
    /* Any non-NULL value makes the key's destructor run at thread exit. */
    (void)pthread_setspecific(altstack_key, &tls_stack);
    return 0;
}

void nwb_crash_thread_release(void)
{
    if (tls_stack.map == NULL) {
        return; /* also means the key may never have been created */
    }
    release(&tls_stack);
    (void)pthread_setspecific(altstack_key, NULL);
}

struct start {
    void *(*fn)(void *);
    void *arg;
    char name[16]; /* the OS thread name (15 bytes and a NUL), "" = inherit */
};

static void *thread_main(void *p)
{
    struct start s = *(struct start *)p;

    nwb_free(p);
    if (s.name[0] != '\0') {
        /* The kernel's name (/proc/self/task/<tid>/comm): what the telemetry recorder, a crash
         * capture, gdb, perf and top all read. */
        (void)pthread_setname_np(pthread_self(), s.name);
    }
    (void)nwb_crash_thread_prepare(); /* a thread without one still runs; it just isn't covered */
    return s.fn(s.arg);
}

int nwb_crash_thread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                            void *arg)
{
    return nwb_crash_thread_create_named(thread, attr, NULL, fn, arg);
}

int nwb_crash_thread_create_named(pthread_t *thread, const pthread_attr_t *attr, const char *name,
                                  void *(*fn)(void *), void *arg)
{
    struct start *s = nwb_malloc(sizeof(*s));
    size_t len = name != NULL ? strnlen(name, sizeof(s->name) - 1) : 0;
    int err;

    if (s == NULL) {
        return -ENOMEM;
    }
    s->fn = fn;
    s->arg = arg;
    memcpy(s->name, name != NULL ? name : "", len);
    s->name[len] = '\0';
    err = pthread_create(thread, attr, thread_main, s);
    if (err != 0) {
        nwb_free(s);
        return -err;
    }
    return 0;
}
