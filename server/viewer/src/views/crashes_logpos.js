// views/crashes_logpos.js - where a crash is in its run: the run's id (a crash names its
// program and run; GET /v1/runs lists the run directories, whose id the log and frames views
// take) and the byte offset in the run's log.txt of the last line written at or before the
// crash time, found by a bounded binary search of range reads (GET /v1/runs/<id>/log
// ?offset=&limit=: about 20 reads of 4 KiB for a 1 GiB log, never the whole log).

import { ApiError, getJson, request } from '../api.js';
import { logLineTime } from './crashes_text.js';

const PROBE_BYTES = 4096; // a probe reads the first whole line at or after an offset
const SCAN_BYTES = 65536; // the last read, which looks at every line in the window left
const PROBES_MAX = 64; // 2^64 bytes of log at most: the search always ends

/** Key of a run or crash: its sanitised program and run. */
export function runKey(program, run) {
    return `${program}\u0000${run}`;
}

/**
 * A Map runKey(program, run) -> run id of the newest runs (GET /v1/runs?limit=1000; with
 * @p program, that program's only). Older runs beyond the list are not in it.
 */
export async function runIds({ program = null, signal } = {}) {
    const q = new URLSearchParams({ limit: '1000' });
    if (program !== null) {
        q.set('program', program);
    }
    const { runs } = await getJson(`/v1/runs?${q}`, { signal });
    const out = new Map();
    for (const r of runs) {
        const key = runKey(r.program, r.run);
        if (!out.has(key)) {
            out.set(key, r.id); // newest first: a run seen twice keeps its newest directory
        }
    }
    return out;
}

/** GET a range of @p run's log: {offset (where it begins), size (the log's), bytes}. */
async function readRange(run, offset, limit, signal) {
    const path = `/v1/runs/${encodeURIComponent(run)}/log?offset=${offset}&limit=${limit}`;
    const res = await request(path, { signal });
    if (!res.ok) {
        throw new ApiError(res.status, (await res.text()).trim() || res.statusText, path);
    }
    return {
        offset: Number(res.headers.get('X-NWB-Log-Offset')),
        size: Number(res.headers.get('X-NWB-Log-Size')),
        bytes: new Uint8Array(await res.arrayBuffer()),
    };
}

const decoder = new TextDecoder();

/** The whole lines of @p bytes: [{start (byte index), time (logLineTime or null)}]. */
function linesOf(bytes) {
    const out = [];
    let start = 0;
    while (start < bytes.length) {
        let end = bytes.indexOf(10, start);
        if (end < 0) {
            end = bytes.length;
        }
        const head = decoder.decode(bytes.subarray(start, Math.min(end, start + 40)));
        out.push({ start, time: logLineTime(`${head} `) });
        start = end + 1;
    }
    return out;
}

/**
 * Where @p time (a log.txt time string, isoNs()) is in the log of run @p run: {offset, size,
 * ended, probes}. offset is the start of the last line whose time is at or before @p time (0
 * when the first line is already later); ended is true when no later line follows (the run
 * ended at the crash: its tail is the place to look). Lines are taken to be in time order,
 * as the log worker writes them; a line without a time counts as "before".
 */
export async function logOffsetAt(run, time, signal) {
    const first = await readRange(run, 0, PROBE_BYTES, signal);
    let probes = 1;
    let lo = 0; // a line start at or before the time (or 0)
    let hi = first.size; // every line starting at or after hi is later than the time
    while (hi - lo > SCAN_BYTES && probes < PROBES_MAX) {
        const mid = lo + Math.floor((hi - lo) / 2);
        const r = await readRange(run, mid, PROBE_BYTES, signal);
        probes++;
        const line = linesOf(r.bytes)[0];
        if (line === undefined || r.offset >= hi) {
            hi = mid; // no line starts between mid and hi
        } else if (line.time === null || line.time <= time) {
            lo = r.offset;
        } else {
            hi = mid;
        }
    }
    const last = await readRange(run, lo, Math.min(4194304, hi - lo + PROBE_BYTES), signal);
    probes++;
    let offset = last.offset;
    let later = false;
    for (const line of linesOf(last.bytes)) {
        if (line.time !== null && line.time > time) {
            later = true;
            break;
        }
        offset = last.offset + line.start;
    }
    const ended = !later && last.offset + last.bytes.length >= last.size;
    return { offset, size: last.size, ended, probes };
}
