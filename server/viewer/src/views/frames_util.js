// views/frames_util.js - what the frames modules share: the read API's paths of a run's
// telemetry (docs/protocol.md, "Reading: telemetry frames"), how milliseconds and frame numbers
// are shown, the frame-window arithmetic of the chart (clamp, zoom, pan; pure, no DOM), and a
// coalescing scheduler for refreshes and reloads.

/** Most buckets the server answers (GET /v1/runs/<id>/frames ?points=1..4096). */
export const POINTS_MAX = 4096;
/** The narrowest window the chart zooms to, in frames. */
export const WINDOW_MIN_FRAMES = 8;

const enc = (s) => encodeURIComponent(String(s));

/** GET path of a frame window: @p win {from, to} (null: the server's default, the run's ends). */
export function framesPath(run, win, points) {
    const q = new URLSearchParams();
    if (win.from !== null) {
        q.set('from', String(win.from));
    }
    if (win.to !== null) {
        q.set('to', String(win.to));
    }
    q.set('points', String(Math.max(1, Math.min(POINTS_MAX, Math.floor(points)))));
    return `/v1/runs/${enc(run)}/frames?${q}`;
}

export function framePath(run, frame) {
    return `/v1/runs/${enc(run)}/frames/${Number(frame)}`;
}

export function reportPath(run) {
    return `/v1/runs/${enc(run)}/telemetry`;
}

export function runPath(run) {
    return `/v1/runs/${enc(run)}`;
}

/** 16.666667 -> "16.67 ms"; three significant digits down to microseconds. */
export function ms(v) {
    if (v === null || v === undefined || !Number.isFinite(Number(v))) {
        return '-';
    }
    const n = Number(v);
    const a = Math.abs(n);
    const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
    return `${n.toFixed(digits)} ms`;
}

/** A count with thousands separators: 1000000 -> "1,000,000". */
export function count(n) {
    return Number(n).toLocaleString('en-US');
}

/** The window of a URL query (?from=&to=): decimal frame numbers, else null (the run's ends). */
export function windowOfQuery(query) {
    const num = (key) => {
        const v = query.get(key);
        return v !== null && /^[0-9]{1,15}$/.test(v) ? Number(v) : null;
    };
    let from = num('from');
    let to = num('to');
    if (from !== null && to !== null && from > to) {
        [from, to] = [to, from];
    }
    return { from, to };
}

/** The URL query of a window: {} for the whole run. */
export function queryOfWindow(win) {
    const q = {};
    if (win.from !== null) {
        q.from = String(win.from);
    }
    if (win.to !== null) {
        q.to = String(win.to);
    }
    return q;
}

/**
 * @p win clamped into the run's frames @p bounds {first, last}, at least WINDOW_MIN_FRAMES
 * wide (or the whole run when it is smaller); a window covering the whole run is {null, null}.
 */
export function clampWindow(win, bounds) {
    const { first, last } = bounds;
    let from = win.from ?? first;
    let to = win.to ?? last;
    const width = Math.min(last - first + 1, Math.max(WINDOW_MIN_FRAMES, to - from + 1));
    if (to - from + 1 < width) {
        const mid = Math.floor((from + to) / 2);
        from = mid - Math.floor(width / 2);
        to = from + width - 1;
    }
    if (from < first) {
        to += first - from;
        from = first;
    }
    if (to > last) {
        from -= to - last;
        to = last;
    }
    from = Math.max(first, Math.round(from));
    to = Math.min(last, Math.round(to));
    if (from <= first && to >= last) {
        return { from: null, to: null };
    }
    return { from, to };
}

/** Zoom @p win by @p factor (< 1 in, > 1 out) keeping frame @p center where it is. */
export function zoomWindow(win, bounds, factor, center) {
    const from = win.from ?? bounds.first;
    const to = win.to ?? bounds.last;
    const c = center ?? (from + to) / 2;
    const width = (to - from + 1) * factor;
    const left = (c - from) / Math.max(1, to - from + 1);
    const nf = Math.round(c - left * width);
    return clampWindow({ from: nf, to: nf + Math.round(width) - 1 }, bounds);
}

/** Move @p win by @p fraction of its width (negative: towards the first frame). */
export function panWindow(win, bounds, fraction) {
    const from = win.from ?? bounds.first;
    const to = win.to ?? bounds.last;
    const shift = Math.round((to - from + 1) * fraction) || Math.sign(fraction);
    return clampWindow({ from: from + shift, to: to + shift }, bounds);
}

/**
 * A scheduler that runs async @p fn at most once every @p gapMs: request() asks for a run; asks
 * while one is waiting or running are merged into one more run after it. A throw of @p fn goes
 * to @p onError. stop() ends it.
 */
export function coalescer(fn, gapMs, onError) {
    let timer = null;
    let running = false;
    let again = false;
    let last = 0;
    let stopped = false;
    const fire = async () => {
        timer = null;
        running = true;
        last = Date.now();
        try {
            await fn();
        } catch (err) {
            onError(err);
        } finally {
            running = false;
            if (again && !stopped) {
                again = false;
                request();
            }
        }
    };
    function request() {
        if (stopped) {
            return;
        }
        if (running) {
            again = true;
        } else if (timer === null) {
            timer = setTimeout(fire, Math.max(0, last + gapMs - Date.now()));
        }
    }
    return {
        request,
        stop() {
            stopped = true;
            clearTimeout(timer);
        },
    };
}

/** A stable colour for @p name (flame rectangles, memory lines): hsl(h, s%, l%). */
export function colorOf(name, lightness = 62) {
    let h = 2166136261;
    for (let i = 0; i < name.length; i++) {
        h = Math.imul(h ^ name.charCodeAt(i), 16777619);
    }
    return `hsl(${(h >>> 0) % 360}, 55%, ${lightness}%)`;
}
