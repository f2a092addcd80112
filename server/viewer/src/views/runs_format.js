// views/runs_format.js - how the runs and run views show a run's state: the live/ended badge
// and the duration (from the time in the id to the last activity, or to now while live, so it
// ticks), the telemetry and crash cells with their links.

import { el } from '../dom.js';
import { duration } from '../format.js';
import { hashFor } from '../router.js';

/** Milliseconds since the epoch of the server's RFC 3339 time @p iso (NaN when unparsable). */
function ms(iso) {
    return new Date(iso).getTime();
}

/** The run's duration in seconds: started to lastActivity, or to now while it is live. */
export function runSeconds(run, now = Date.now()) {
    const start = ms(run.started);
    const end = run.live ? Math.max(now, ms(run.lastActivity)) : ms(run.lastActivity);
    if (Number.isNaN(start) || Number.isNaN(end)) {
        return 0;
    }
    return Math.max(0, (end - start) / 1000);
}

/** "4 min 05 s" of @p run (see runSeconds). */
export function runDuration(run, now) {
    return duration(runSeconds(run, now));
}

/** The live/ended badge. */
export function stateBadge(run) {
    return run.live
        ? el('span', { class: 'badge badge-live', title: 'sent data within --run-live-s' }, 'live')
        : el('span', { class: 'badge badge-ended' }, 'ended');
}

/** "yes" linking to the run's frames, or "no". */
export function telemetryCell(run) {
    return run.telemetry ? el('a', { href: hashFor('frames', { run: run.id }) }, 'yes') : 'no';
}

/** The crash count, linking to the crash list filtered on the run when there are any. */
export function crashesCell(run) {
    const n = Number(run.crashes) || 0;
    if (n === 0) {
        return '0';
    }
    return el('a', { class: 'crash-count', href: hashFor('crashes', {}, { q: run.run }) }, String(n));
}

/** A number as text with thin grouping ("1,290"); "-" when unknown. */
export function count(n) {
    return n === undefined || n === null ? '-' : Number(n).toLocaleString('en-US');
}
