/* SPDX-License-Identifier: MIT */
/*
 * name.c - name tokens and, with NWB_BUILDMODE, the runtime name registry:
 * a fixed array of buckets whose chains are only ever prepended to, so
 * lookups walk them with acquire loads and take no lock; inserts serialise on
 * one mutex. At normal exit the registry is written as <executable>.namesym.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nwb/alloc.h"
#include "nwb/build_id.h"
#include "nwb/error.h"
#include "nwb/name.h"
#include "nwb/namesym.h"

void nwb_name_token(nwb_name_t name, char out[NWB_NAME_TOKEN_SIZE])
{
    static const char hex[] = "0123456789abcdef";

    out[0] = '#';
    for (int i = 0; i < 16; i++) {
        out[1 + i] = hex[(name >> (60 - 4 * i)) & 15];
    }
    out[17] = '\0';
}

#ifdef NWB_BUILDMODE

#define REGISTRY_BUCKETS 65536u

struct name_node {
    struct name_node *next;
    nwb_name_t hash;
    size_t len;
    char str[]; /* NUL-terminated */
};

static _Atomic(struct name_node *) buckets[REGISTRY_BUCKETS];
static atomic_size_t registry_count;
static pthread_mutex_t insert_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t exit_hook_once = PTHREAD_ONCE_INIT;

static const struct name_node *registry_find(nwb_name_t hash)
{
    const struct name_node *n =
        atomic_load_explicit(&buckets[hash & (REGISTRY_BUCKETS - 1)], memory_order_acquire);

    while (n != NULL && n->hash != hash) {
        n = n->next;
    }
    return n;
}

static void write_sidecar_at_exit(void)
{
    char exe[4096], path[4200], build[128];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (n <= 0) {
        return;
    }
    exe[n] = '\0';
    snprintf(path, sizeof(path), "%s.namesym", exe);
    nwb_build_id(build, sizeof(build));
    if (nwb_name_registry_write(path, build) != 0) {
        fprintf(stderr, "nwb: could not write name sidecar %s\n", path);
    }
}

static void install_exit_hook(void)
{
    atexit(write_sidecar_at_exit);
}

static void registry_insert(nwb_name_t hash, const char *s, size_t len)
{
    struct name_node *node;
    _Atomic(struct name_node *) *bucket = &buckets[hash & (REGISTRY_BUCKETS - 1)];

    pthread_once(&exit_hook_once, install_exit_hook);
    pthread_mutex_lock(&insert_lock);
    if (registry_find(hash) == NULL) {
        node = nwb_malloc(sizeof(*node) + len + 1);
        if (node != NULL) {
            node->hash = hash;
            node->len = len;
            memcpy(node->str, s, len);
            node->str[len] = '\0';
            node->next = atomic_load_explicit(bucket, memory_order_relaxed);
            atomic_store_explicit(bucket, node, memory_order_release);
            atomic_fetch_add(&registry_count, 1);
        }
    }
    pthread_mutex_unlock(&insert_lock);
}

nwb_name_t nwb_name_make_n(const char *s, size_t len)
{
    const nwb_name_t h = nwb_name_hash(s, len);

    if (registry_find(h) == NULL) {
        registry_insert(h, s, len);
    }
    return h;
}

const char *nwb_name_str(nwb_name_t name, char buf[NWB_NAME_TOKEN_SIZE])
{
    const struct name_node *n = registry_find(name);

    if (n != NULL) {
        return n->str;
    }
    nwb_name_token(name, buf);
    return buf;
}

int nwb_name_registry_enabled(void)
{
    return 1;
}

size_t nwb_name_registry_count(void)
{
    return atomic_load(&registry_count);
}

int nwb_name_registry_write(const char *path, const char *build_id)
{
    nwb_namesym_builder_t b;
    char err[256];
    int rc = 0;

    nwb_namesym_builder_init(&b);
    for (size_t i = 0; i < REGISTRY_BUCKETS && rc == 0; i++) {
        for (const struct name_node *n = atomic_load(&buckets[i]); n != NULL; n = n->next) {
            rc = nwb_namesym_builder_add(&b, n->str, n->len);
            if (rc != 0) {
                break;
            }
        }
    }
    if (rc == 0) {
        rc = nwb_namesym_builder_write(&b, build_id, path, err, sizeof(err));
    }
    nwb_namesym_builder_cleanup(&b);
    return rc;
}

#else /* !NWB_BUILDMODE: no registry, names are only hashes */

nwb_name_t nwb_name_make_n(const char *s, size_t len)
{
    return nwb_name_hash(s, len);
}

const char *nwb_name_str(nwb_name_t name, char buf[NWB_NAME_TOKEN_SIZE])
{
    nwb_name_token(name, buf);
    return buf;
}

int nwb_name_registry_enabled(void)
{
    return 0;
}

size_t nwb_name_registry_count(void)
{
    return 0;
}

int nwb_name_registry_write(const char *path, const char *build_id)
{
    nwb_namesym_builder_t b;
    char err[256];
    int rc;

    nwb_namesym_builder_init(&b);
    rc = nwb_namesym_builder_write(&b, build_id, path, err, sizeof(err));
    nwb_namesym_builder_cleanup(&b);
    return rc;
}

#endif

nwb_name_t nwb_name_make(const char *s)
{
    return nwb_name_make_n(s, strlen(s));
}
