// views/log_store.js - the part of a run's log.txt the page holds: one contiguous block of
// whole lines [begin, end) read with GET /v1/runs/<id>/log?offset=&limit= (or ?tail=), never
// the whole file. It grows forward and backward by READ_BYTES windows as the view needs, and
// is trimmed on the side away from the place shown to at most CACHE_LINES lines and
// CACHE_BYTES bytes, so a 10 GiB log costs the page what a few MiB do. Offsets are bytes of
// log.txt (X-NWB-Log-Offset): each line is cut from the answer's bytes, then decoded.

import { ApiError, request } from '../api.js';
import { parseLine } from './log_lines.js';

export const READ_BYTES = 128 * 1024; // one window (?limit=)
export const READ_MAX = 4194304; // the server's largest ?limit=
export const TAIL_LINES = 400; // lines of ?tail= when the view opens at the end
export const CACHE_LINES = 5000;
export const CACHE_BYTES = 8 * 1024 * 1024;

const decoder = new TextDecoder('utf-8');

/** Whole lines of @p buf (bytes of log.txt from @p start): [{offset, bytes, text, parsed}]. */
export function splitLines(buf, start) {
    const lines = [];
    let from = 0;
    for (let nl = buf.indexOf(10, from); nl >= 0; nl = buf.indexOf(10, from)) {
        const text = decoder.decode(buf.subarray(from, nl));
        lines.push({ offset: start + from, bytes: nl + 1 - from, text, parsed: parseLine(text) });
        from = nl + 1;
    }
    return lines;
}

/**
 * One read of @p run's log with @p query ({offset, limit} or {tail}): {start, size, lines}.
 * A 416 (offset past the end) is {start: size, size, lines: []}.
 */
export async function readLog(run, query, signal) {
    const path = `/v1/runs/${encodeURIComponent(run)}/log?${new URLSearchParams(query)}`;
    const res = await request(path, { signal });
    const size = Number(res.headers.get('X-NWB-Log-Size'));
    if (res.status === 416) {
        await res.arrayBuffer();
        return { start: size, size, lines: [] };
    }
    if (!res.ok) {
        throw new ApiError(res.status, (await res.text()).trim() || res.statusText, path);
    }
    const start = Number(res.headers.get('X-NWB-Log-Offset'));
    const buf = new Uint8Array(await res.arrayBuffer());
    return { start, size, lines: splitLines(buf, start) };
}

export class LogStore {
    constructor(run) {
        this.run = run;
        this.lines = [];
        this.begin = 0; // first byte held (a line start)
        this.end = 0; // byte after the last line held
        this.size = 0; // log.txt's size as last heard (answer header or "log" event)
        this.generation = 0; // bumped by every jump: answers of an older one are dropped
    }

    heldBytes() {
        return this.end - this.begin;
    }

    atEnd() {
        return this.end >= this.size;
    }

    noteSize(size) {
        if (Number.isFinite(size) && size > this.size) {
            this.size = size;
        }
    }

    /** Index of the line holding byte @p offset (or the first after it; lines.length past the end). */
    indexAt(offset) {
        let lo = 0;
        let hi = this.lines.length;
        while (lo < hi) {
            const mid = (lo + hi) >> 1;
            const l = this.lines[mid];
            if (l.offset + l.bytes <= offset) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    replaceWith(answer) {
        this.lines = answer.lines;
        this.begin = answer.start;
        this.end = answer.start + answer.lines.reduce((n, l) => n + l.bytes, 0);
        this.size = answer.size;
    }

    /** Hold the lines from the first line start at or after @p offset (one window). */
    async jump(offset, signal) {
        const gen = ++this.generation;
        const answer = await readLog(this.run, { offset, limit: READ_BYTES }, signal);
        if (gen === this.generation) {
            this.replaceWith(answer);
        }
        return gen === this.generation;
    }

    /** Hold the last TAIL_LINES lines. */
    async tail(signal) {
        const gen = ++this.generation;
        const answer = await readLog(this.run, { tail: TAIL_LINES }, signal);
        if (gen === this.generation) {
            this.replaceWith(answer);
        }
        return gen === this.generation;
    }

    /** Read the window after the block; false when there is nothing more (yet). */
    async forward(signal) {
        const gen = this.generation;
        const from = this.end;
        const answer = await readLog(this.run, { offset: from, limit: READ_BYTES }, signal);
        if (gen !== this.generation || from !== this.end) {
            return false;
        }
        this.noteSize(answer.size);
        const fresh = answer.lines.filter((l) => l.offset >= from);
        for (const l of fresh) {
            this.lines.push(l);
            this.end = l.offset + l.bytes;
        }
        return fresh.length > 0;
    }

    /** Read the window before the block; false at the start of the log. */
    async backward(signal) {
        const gen = this.generation;
        const to = this.begin;
        for (let want = READ_BYTES; to > 0; want *= 2) {
            const from = Math.max(0, to - want);
            const limit = Math.min(READ_MAX, Math.max(1, to - from));
            const answer = await readLog(this.run, { offset: from, limit }, signal);
            if (gen !== this.generation || to !== this.begin) {
                return false;
            }
            this.noteSize(answer.size);
            const fresh = answer.lines.filter((l) => l.offset < to);
            if (fresh.length > 0 && fresh[0].offset + fresh.reduce((n, l) => n + l.bytes, 0) === to) {
                this.lines = fresh.concat(this.lines);
                this.begin = fresh[0].offset;
                return true;
            }
            if (from === 0 || want >= READ_MAX) {
                return false; // only a line longer than READ_MAX could be before: none is written
            }
        }
        return false;
    }

    /** Drop lines on the side away from byte @p keep until within CACHE_LINES and CACHE_BYTES. */
    trim(keep) {
        while (this.lines.length > CACHE_LINES || this.heldBytes() > CACHE_BYTES) {
            const i = this.indexAt(keep);
            if (i > this.lines.length - i) {
                const l = this.lines.shift();
                this.begin = l.offset + l.bytes;
            } else {
                const l = this.lines.pop();
                this.end = l.offset;
            }
        }
    }
}
