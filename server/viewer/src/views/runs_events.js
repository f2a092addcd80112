// views/runs_events.js - what the runs, run and log views share about live data: the server's
// event stream (GET /v1/events through api.followEvents) parsed into typed callbacks, a
// coalescing scheduler so a burst of events costs a few refetches a second rather than one per
// event, and the order of runs by the time in their id (which run is newer, for "follow").

import { followEvents } from '../api.js';

/**
 * Follow /v1/events until @p signal aborts: @p handlers.run(data), .log(data),
 * .telemetry(data), .crash(data), .reset(data) get each event's JSON object (an event whose
 * data is not a JSON object is ignored: the stream is the server's, but a later version may add
 * types); .state(state) gets 'open' | 'reconnecting' | 'closed'. The state is also put in
 * @p marker's data-stream (the view's container: tests wait for "open").
 */
export function watchEvents(signal, handlers, marker = null) {
    const mark = (state) => {
        if (marker !== null && !signal.aborted) {
            marker.dataset.stream = state;
        }
    };
    mark('connecting');
    followEvents('/v1/events', {
        signal,
        onEvent: (e) => {
            const fn = handlers[e.type];
            if (typeof fn !== 'function') {
                return;
            }
            let data;
            try {
                data = JSON.parse(e.data);
            } catch {
                return;
            }
            if (data !== null && typeof data === 'object') {
                fn(data);
            }
        },
        onState: (state) => {
            mark(state);
            handlers.state?.(state);
        },
    });
}

/**
 * A job that runs at most once per @p minMs however often it is asked for: request() marks it
 * due; it runs (async @p job) as soon as the last run is @p minMs old and none is running. A
 * request during a run makes one more run after it. Nothing runs after @p signal aborts.
 */
export function coalesced(job, minMs, signal) {
    let due = false;
    let running = false;
    let last = 0;
    let timer = null;
    const kick = () => {
        if (!due || running || timer !== null || signal.aborted) {
            return;
        }
        const wait = last + minMs - Date.now();
        if (wait > 0) {
            timer = setTimeout(() => {
                timer = null;
                kick();
            }, wait);
            return;
        }
        due = false;
        running = true;
        last = Date.now();
        Promise.resolve()
            .then(job)
            .catch((err) => {
                if (!signal.aborted) {
                    console.warn('viewer: refresh failed:', err.message);
                }
            })
            .finally(() => {
                running = false;
                kick();
            });
    };
    signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
    return {
        request() {
            due = true;
            kick();
        },
    };
}

// A run id is <program>_<YYYYmmdd-HHMMSS>_<run>; its first "_<8 digits>-<6 digits>_" is the
// time the server first saw the run (docs/protocol.md, "Ids").
const ID_TIME = /_([0-9]{8}-[0-9]{6})_/;

/** The "YYYYmmdd-HHMMSS" of run id @p id ('' when it has none). */
export function runIdTime(id) {
    const m = ID_TIME.exec(String(id));
    return m === null ? '' : m[1];
}

/** >0 when run id @p a is newer than @p b: the server's order (time in the id, then the id). */
export function compareRunIds(a, b) {
    const ta = runIdTime(a);
    const tb = runIdTime(b);
    if (ta !== tb) {
        return ta < tb ? -1 : 1;
    }
    return a === b ? 0 : a < b ? -1 : 1;
}

/** Call @p fn every @p ms until @p signal aborts. */
export function every(ms, fn, signal) {
    const timer = setInterval(fn, ms);
    signal.addEventListener('abort', () => clearInterval(timer), { once: true });
}
