// views/runs.js - #/runs and #/runs/<id>. Until the read API (GET /v1/runs) is in the server,
// the list is a shell that says so; what the server has already (GET /v1/health, GET
// /v1/crashes) is shown: the server and the runs that crashed, newest first.

import { getJson } from '../api.js';
import { el, idHeading, linkRow, replace, table, waiting } from '../dom.js';
import { duration, time } from '../format.js';
import { hashFor } from '../router.js';

export async function renderRuns(container, route, signal) {
    const server = el('p', { class: 'note', id: 'runs-server' }, 'Asking the server…');
    const crashed = el('div', { id: 'runs-crashed' }, el('p', { class: 'note' }, 'Loading crashes…'));
    replace(
        container,
        el('h1', null, 'Runs'),
        server,
        el('h2', null, 'Every run'),
        waiting(
            'The run list waits for the read API (GET /v1/runs): live runs, records, drops, telemetry and crash counts appear here once the server has it.',
        ),
        el('h2', null, 'Runs that crashed'),
        crashed,
    );
    const [health, list] = await Promise.all([
        getJson('/v1/health', { signal }),
        getJson('/v1/crashes', { signal }),
    ]);
    if (signal.aborted) {
        return;
    }
    replace(
        server,
        `nwb-logserver ${health.version}, status ${health.status}, up ${duration(health.uptime_s)}.`,
    );
    const byRun = new Map();
    for (const c of list.crashes) {
        const key = `${c.program}\u0000${c.run}`;
        const seen = byRun.get(key);
        if (!seen || String(c.received) > String(seen.last.received)) {
            byRun.set(key, { last: c, count: (seen?.count || 0) + 1 });
        } else {
            seen.count++;
        }
    }
    const rows = [...byRun.values()].sort((a, b) =>
        String(b.last.received).localeCompare(String(a.last.received)),
    );
    if (rows.length === 0) {
        replace(crashed, el('p', { class: 'note' }, 'No crash has reached this server.'));
        return;
    }
    replace(
        crashed,
        table(
            [
                { title: 'Program' },
                { title: 'Run', mono: true },
                { title: 'Last crash' },
                { title: 'Signal' },
                { title: 'Crashes', num: true },
            ],
            rows.map(({ last, count }) => [
                last.program,
                last.run,
                el('a', { href: hashFor('crash', { crash: last.id }) }, time(last.received)),
                last.signal || '-',
                String(count),
            ]),
            { id: 'runs-crashed-table' },
        ),
    );
}

export async function renderRun(container, route) {
    const run = route.params.run;
    replace(
        container,
        idHeading('Run ', run),
        linkRow([hashFor('log', { run }), 'Log'], [hashFor('frames', { run }), 'Frames']),
        waiting(`The run's summary waits for the read API (GET /v1/runs/${run}).`),
    );
}
