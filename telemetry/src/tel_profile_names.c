/* SPDX-License-Identifier: MIT */
/*
 * tel_profile_names.c - the strings nwb_tel_name() remembers so a dbg or opt stream can carry
 * them in its string tables: a fixed open-addressing table (NWB__PROF_NAMES entries), filled
 * under a lock, read without one. A fin build (NWB_FINAL) remembers nothing: hashes only.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "nwb/alloc.h"
#include "nwb/profile.h"
#include "nwb/telemetry_format.h"

#define NWB__PROF_NAMES 8192u /* slots: at most half used (4,096 strings) */

struct name_slot {
    _Atomic(const char *) str; /* published last */
    nwb_name_t hash;
    uint16_t len;
};

static struct name_slot names[NWB__PROF_NAMES];
#if !NWB_IS_FINAL
static unsigned names_used;
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
#endif

nwb_name_t nwb_tel_name(const char *s)
{
    const size_t len = s != NULL ? strlen(s) : 0;
    const nwb_name_t h = nwb_name_make_n(s != NULL ? s : "", len);

#if !NWB_IS_FINAL
    if (len == 0 || len > NWB_TEL_STRING_MAX || nwb_tel_name_string(h, NULL) != NULL) {
        return h;
    }
    pthread_mutex_lock(&names_lock);
    if (names_used < NWB__PROF_NAMES / 2) {
        uint32_t i = (uint32_t)h & (NWB__PROF_NAMES - 1);
        char *copy;

        while (atomic_load_explicit(&names[i].str, memory_order_acquire) != NULL &&
               names[i].hash != h) {
            i = (i + 1) & (NWB__PROF_NAMES - 1);
        }
        copy = atomic_load_explicit(&names[i].str, memory_order_acquire) == NULL
                   ? nwb_malloc(len + 1)
                   : NULL;
        if (copy != NULL) {
            memcpy(copy, s, len + 1);
            names[i].hash = h;
            names[i].len = (uint16_t)len;
            atomic_store_explicit(&names[i].str, copy, memory_order_release);
            names_used++;
        }
    }
    pthread_mutex_unlock(&names_lock);
#endif
    return h;
}

const char *nwb_tel_name_string(nwb_name_t name, size_t *len)
{
    uint32_t i = (uint32_t)name & (NWB__PROF_NAMES - 1);

    for (unsigned n = 0; n < NWB__PROF_NAMES; n++, i = (i + 1) & (NWB__PROF_NAMES - 1)) {
        const char *s = atomic_load_explicit(&names[i].str, memory_order_acquire);

        if (s == NULL) {
            return NULL;
        }
        if (names[i].hash == name) {
            if (len != NULL) {
                *len = names[i].len;
            }
            return s;
        }
    }
    return NULL;
}
