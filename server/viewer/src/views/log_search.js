// views/log_search.js - looking through a log beyond the lines the page holds, by successive
// range reads (GET .../log?offset=&limit=), bounded: a text search reads at most SCAN_BYTES per
// request of the person (then says where it stopped, and the next "n" goes on from there), and
// finding the place of a time is a bisection of small reads (about 20 for a 10 GiB log; the
// server writes lines in time order within a run, which is what it relies on).

import { readLog } from './log_store.js';

export const SCAN_READ = 1024 * 1024; // one read of a scan
export const SCAN_BYTES = 64 * 1024 * 1024; // at most this much per search step
const TIME_READ = 16 * 1024; // one probe of the time bisection
const TIME_EXACT = 64 * 1024; // the bisection stops when the range is this small

/**
 * The first line after byte @p from (dir +1) or the last line before it (dir -1) for which
 * @p test(line) holds, reading at most SCAN_BYTES: {offset} when found, else {offset: -1, stop}
 * with the byte where the scan stopped (the log's start or end when it was read through).
 * @p progress(bytesRead) after each read.
 */
export async function scanLog(run, test, from, dir, signal, progress = () => {}) {
    let pos = from;
    let read = 0;
    while (read < SCAN_BYTES && !signal.aborted) {
        if (dir > 0) {
            const a = await readLog(run, { offset: pos, limit: SCAN_READ }, signal);
            const hit = a.lines.find((l) => l.offset >= from && test(l));
            if (hit) {
                return { offset: hit.offset };
            }
            if (a.lines.length === 0) {
                return { offset: -1, stop: a.size, end: true };
            }
            const last = a.lines[a.lines.length - 1];
            read += last.offset + last.bytes - pos;
            pos = last.offset + last.bytes;
        } else {
            if (pos <= 0) {
                return { offset: -1, stop: 0, end: true };
            }
            const start = Math.max(0, pos - SCAN_READ);
            const a = await readLog(run, { offset: start, limit: pos - start }, signal);
            const held = a.lines.filter((l) => l.offset < pos);
            for (let i = held.length - 1; i >= 0; i--) {
                if (test(held[i])) {
                    return { offset: held[i].offset };
                }
            }
            read += pos - start;
            pos = held.length > 0 ? held[0].offset : start;
        }
        progress(read);
    }
    return { offset: -1, stop: pos, end: false };
}

/** Milliseconds of a log line's time ("2026-12-01T07:34:00.123456789Z"); NaN if none. */
function lineMs(line) {
    const t = line.parsed.time;
    return t === '' ? NaN : Date.parse(`${t.slice(0, 23)}Z`);
}

/**
 * A byte offset at or a little before the first line written at or after @p ms (epoch
 * milliseconds) in a log of @p size bytes: bisection by small range reads.
 */
export async function offsetOfTime(run, ms, size, signal) {
    let lo = 0;
    let hi = size;
    while (hi - lo > TIME_EXACT && !signal.aborted) {
        const mid = Math.floor((lo + hi) / 2);
        const a = await readLog(run, { offset: mid, limit: TIME_READ }, signal);
        const first = a.lines.find((l) => !Number.isNaN(lineMs(l)));
        if (first === undefined || lineMs(first) >= ms) {
            hi = mid;
        } else {
            lo = first.offset;
        }
    }
    return lo;
}

/** The first of @p lines written at or after @p ms, or undefined. */
export function firstLineAt(lines, ms) {
    return lines.find((l) => lineMs(l) >= ms);
}
