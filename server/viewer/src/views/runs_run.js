// views/runs_run.js - #/runs/<id>: one run, what GET /v1/runs/<id> says (fields and counters),
// its last lines (GET .../log?tail=), its crashes (GET /v1/crashes, those naming its program
// and run) and links to its log, frames and crashes. Live from /v1/events: the run's "run",
// "log" and "telemetry" events refetch it (coalesced), a "crash" event of it re-reads the
// crashes. ?follow=1 switches to the next run of the same program as it starts.

import { getJson, request } from '../api.js';
import { el, errorBox, idHeading, replace, table } from '../dom.js';
import { bytes, time } from '../format.js';
import { hashFor } from '../router.js';
import { coalesced, every, watchEvents } from './runs_events.js';
import { count, crashesCell, runDuration, stateBadge, telemetryCell } from './runs_format.js';
import { followControl, followWanted, isNewerRunOf } from './runs_follow.js';
import { onViewKeys } from './runs_keys.js';

const TAIL_LINES = 12;
const REFRESH_MS = 500;

function field(name, label, value) {
    return [el('dt', null, label), el('dd', { dataset: { field: name } }, value)];
}

function fieldsOf(run) {
    const c = run.counters || {};
    return [
        field('program', 'Program', run.program),
        field('run', 'Run', run.run),
        field('state', 'State', stateBadge(run)),
        field('started', 'Started', time(run.started)),
        field('lastActivity', 'Last activity', time(run.lastActivity)),
        field('duration', 'Duration', runDuration(run)),
        field('logBytes', 'Log', bytes(run.logBytes)),
        field('records', 'Records', count(c.records ?? run.records)),
        field('drops', 'Gaps (drop markers)', count(c.drops)),
        field('tokensDecoded', 'Name tokens decoded', count(c.tokensDecoded)),
        field('tokensUnknown', 'Name tokens unknown', count(c.tokensUnknown)),
        field('telemetry', 'Telemetry', telemetryCell(run)),
        field('telemetryUploads', 'Telemetry uploads', count(c.telemetryUploads)),
        field('crashes', 'Crashes', crashesCell(run)),
        run.listed === false ? field('listed', 'Listed', 'no (past the run index bound)') : null,
    ];
}

function linksOf(run) {
    const links = [
        [hashFor('log', { run: run.id }), 'Log (tail)'],
        [hashFor('log', { run: run.id }, { offset: 0 }), 'Log from the start'],
    ];
    if (run.telemetry) {
        links.push([hashFor('frames', { run: run.id }), 'Frames']);
    }
    if (run.crashes > 0) {
        links.push([hashFor('crashes', {}, { q: run.run }), 'Crashes']);
    }
    links.push([hashFor('runs', {}, { program: run.program }), `Runs of ${run.program}`]);
    const parts = [];
    links.forEach(([href, text], i) => parts.push(i > 0 ? ' · ' : null, el('a', { href }, text)));
    return parts;
}

export async function renderRun(container, route, signal) {
    const id = route.params.run;
    const path = `/v1/runs/${encodeURIComponent(id)}`;
    const fields = el('dl', { class: 'fields', id: 'run-fields' });
    const links = el('p', { class: 'links', id: 'run-links' });
    const crashes = el('div', { id: 'run-crashes' }, el('p', { class: 'note' }, 'Loading crashes…'));
    const tail = el('pre', { class: 'run-tail', id: 'run-tail' });
    const controls = el('div', { class: 'toolbar' });
    replace(
        container,
        idHeading('Run ', id),
        controls,
        links,
        fields,
        el('h2', null, 'Last lines'),
        tail,
        el('h2', null, 'Crashes of this run'),
        crashes,
    );
    let run;
    try {
        run = await getJson(path, { signal });
    } catch (err) {
        if (!signal.aborted) {
            replace(container, idHeading('Run ', id), errorBox(err));
            container.dataset.ready = 'true';
        }
        return;
    }
    let following = followWanted(route.query);
    const follow = followControl(run.program, following, (on) => {
        following = on;
        window.history.replaceState(null, '', hashFor('run', { run: id }, on ? { follow: 1 } : null));
    });
    replace(controls, follow.node);

    const draw = () => {
        replace(fields, fieldsOf(run));
        replace(links, linksOf(run));
    };
    const readTail = async () => {
        const res = await request(`${path}/log?tail=${TAIL_LINES}`, { signal });
        const text = await res.text();
        replace(tail, res.ok ? text || '(empty log)' : `(${res.status}: ${text.trim()})`);
    };
    const readCrashes = async () => {
        const list = (await getJson('/v1/crashes', { signal })).crashes.filter(
            (c) => c.program === run.program && c.run === run.run,
        );
        if (list.length === 0) {
            replace(crashes, el('p', { class: 'note' }, 'None.'));
            return;
        }
        replace(
            crashes,
            table(
                [{ title: 'Received' }, { title: 'Signal' }, { title: 'Status' }],
                list
                    .sort((a, b) => String(b.received).localeCompare(String(a.received)))
                    .map((c) => [
                        el('a', { href: hashFor('crash', { crash: c.id }) }, time(c.received)),
                        c.signal || '-',
                        c.status,
                    ]),
                { id: 'run-crashes-table' },
            ),
        );
    };
    draw();
    await Promise.all([readTail(), readCrashes()]);
    if (signal.aborted) {
        return;
    }
    container.dataset.ready = 'true';

    const refresh = coalesced(
        async () => {
            run = await getJson(path, { signal });
            draw();
            await readTail();
        },
        REFRESH_MS,
        signal,
    );
    const crashRefresh = coalesced(readCrashes, REFRESH_MS, signal);
    watchEvents(
        signal,
        {
            run: (d) => {
                if (following && isNewerRunOf(d, run.program, id)) {
                    window.location.hash = hashFor('run', { run: d.id }, { follow: 1 });
                } else if (d.id === id) {
                    refresh.request();
                    if (d.change === 'crash') {
                        crashRefresh.request();
                    }
                }
            },
            log: (d) => d.id === id && refresh.request(),
            telemetry: (d) => d.id === id && refresh.request(),
            crash: (d) => d.program === run.program && d.run === run.run && crashRefresh.request(),
            reset: () => {
                refresh.request();
                crashRefresh.request();
            },
        },
        container,
    );
    every(
        1000,
        () => run.live && replace(fields.querySelector('dd[data-field="duration"]'), runDuration(run)),
        signal,
    );
    onViewKeys(signal, (e) => {
        if (e.key === 'f') {
            follow.toggle();
        }
    });
}
