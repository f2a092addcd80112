/* SPDX-License-Identifier: MIT */
/*
 * symbols_hook.c - the default of nwb__crash_resymbolize_build_id() (symbols_hook.h): no
 * symboliser yet, so a new symbol file changes nothing already stored. The symboliser's branch
 * replaces this file.
 */
#include "symbols_hook.h"

void nwb__crash_resymbolize_build_id(struct nwb_server *srv, const char *build_id_hex)
{
    (void)srv;
    (void)build_id_hex;
}
