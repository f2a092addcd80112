/* SPDX-License-Identifier: MIT */
/*
 * symbols_hook.h - what the symbol store tells the crash side when a new symbol file arrives.
 * The definition is the crash side's (crash_endpoint.c, declared again in crash_analysis.h):
 * it re-runs symbolisation of the crashes that wait for this build id.
 */
#ifndef NWB_SYMBOLS_HOOK_H
#define NWB_SYMBOLS_HOOK_H

struct nwb_server;

/*
 * Called on the loop thread right after POST /v1/symbols stored a new file (the 201 answer,
 * never for an identical re-upload) for @p build_id_hex: lowercase hex, 4..128 digits; the
 * file is <srv->symbols_dir>/.build-id/<2 digits>/<rest>[.debug], complete and renamed into
 * place. Must not block: queue any work (thread pool, the crash worker). Never fails.
 */
void nwb__crash_resymbolize_build_id(struct nwb_server *srv, const char *build_id_hex);

#endif /* NWB_SYMBOLS_HOOK_H */
