// views/runs.js - #/runs: every run, newest first (GET /v1/runs), live from GET /v1/events: a
// "run" event adds or refreshes its row (GET /v1/runs/<id>), "log" events update the log size
// at once and mark the row for a refetch (coalesced: at most two rounds a second), "reset"
// re-reads the list. Gaps (drop markers) come with every run object (`drops`). ?program=NAME
// filters; ?follow=NAME opens the newest run of NAME's
// log with follow on (or waits for its first run). #/runs/<id> is runs_run.js.

import { getJson } from '../api.js';
import { el, errorBox, replace } from '../dom.js';
import { bytes, time } from '../format.js';
import { hashFor } from '../router.js';
import { coalesced, compareRunIds, every, watchEvents } from './runs_events.js';
import { count, crashesCell, runDuration, stateBadge, telemetryCell } from './runs_format.js';

export { renderRun } from './runs_run.js';

/** Runs the list asks for (GET /v1/runs?limit=). */
export const LIST_LIMIT = 500;
const DETAIL_PARALLEL = 4;
const REFRESH_MS = 500; // at most one refetch round per this
const PER_RUN_MAX = 8; // more dirty rows than this in a round: re-read the whole list

const runPath = (id) => `/v1/runs/${encodeURIComponent(id)}`;

const COLUMNS = [
    ['program', 'Program'],
    ['id', 'Run'],
    ['started', 'Started'],
    ['duration', 'Duration', 'num'],
    ['state', 'State'],
    ['records', 'Records', 'num'],
    ['gaps', 'Gaps', 'num'],
    ['log', 'Log', 'num'],
    ['telemetry', 'Telemetry'],
    ['crashes', 'Crashes', 'num'],
];

function cellsOf(run, gaps) {
    return {
        program: run.program,
        id: el('a', { class: 'mono', href: hashFor('run', { run: run.id }) }, run.run),
        started: time(run.started),
        duration: runDuration(run),
        state: stateBadge(run),
        records: count(run.records),
        gaps: gaps === undefined ? '-' : el('span', { class: gaps > 0 ? 'gaps-some' : null }, count(gaps)),
        log: el('a', { href: hashFor('log', { run: run.id }), title: 'open the log' }, bytes(run.logBytes)),
        telemetry: telemetryCell(run),
        crashes: crashesCell(run),
    };
}

function rowOf(run, gaps) {
    const cells = cellsOf(run, gaps);
    return el(
        'tr',
        { dataset: { runId: run.id, program: run.program, live: String(Boolean(run.live)) } },
        COLUMNS.map(([key, , cls]) => el('td', { class: cls || null, dataset: { col: key } }, cells[key])),
    );
}

export async function renderRuns(container, route, signal) {
    const wantProgram = route.query.get('program') || '';
    const follow = route.query.get('follow');
    const runs = new Map(); // id -> run (list object, or the single view's)
    const gaps = new Map(); // id -> drops (gap markers)
    const rows = new Map(); // id -> <tr>
    const dirty = new Set();
    let fullReload = false;

    const status = el('span', { id: 'runs-status', class: 'note' }, 'Loading runs…');
    const programSelect = el('select', {
        id: 'runs-program',
        'aria-label': 'program',
        on: { change: () => (window.location.hash = hashFor('runs', {}, programQuery())) },
    });
    const programQuery = () => (programSelect.value ? { program: programSelect.value } : null);
    const followLink = el('a', { id: 'runs-follow', class: 'button', hidden: true }, 'Follow newest');
    const banner = el('p', { id: 'runs-follow-banner', class: 'follow-banner', hidden: true });
    const tbody = el('tbody');
    const empty = el('p', { class: 'note', id: 'runs-empty', hidden: true });
    const tableNode = el(
        'table',
        { class: 'data runs', id: 'runs-table' },
        el(
            'thead',
            null,
            el(
                'tr',
                null,
                COLUMNS.map(([, title, cls]) => el('th', { class: cls || null }, title)),
            ),
        ),
        tbody,
    );
    replace(
        container,
        el('h1', null, 'Runs'),
        el('div', { class: 'toolbar' }, el('label', null, 'Program ', programSelect), followLink, status),
        banner,
        tableNode,
        empty,
    );

    const shown = () =>
        [...runs.values()]
            .filter((r) => wantProgram === '' || r.program === wantProgram)
            .sort((a, b) => compareRunIds(b.id, a.id));

    const drawPrograms = () => {
        const names = new Set([...runs.values()].map((r) => r.program));
        if (wantProgram) {
            names.add(wantProgram);
        }
        const options = [el('option', { value: '' }, 'all programs')];
        for (const name of [...names].sort()) {
            options.push(el('option', { value: name }, name));
        }
        replace(programSelect, options);
        programSelect.value = wantProgram;
        if (wantProgram) {
            followLink.hidden = false;
            followLink.setAttribute('href', hashFor('runs', {}, { follow: wantProgram }));
            followLink.title = `open the newest run of ${wantProgram} and switch to each next one`;
        }
    };

    const drawRow = (id) => {
        const run = runs.get(id);
        const tr = rowOf(run, gaps.get(id));
        rows.get(id)?.replaceWith(tr);
        rows.set(id, tr);
    };

    const drawAll = () => {
        const list = shown();
        for (const run of list) {
            if (!rows.has(run.id)) {
                rows.set(run.id, rowOf(run, gaps.get(run.id)));
            }
        }
        replace(
            tbody,
            list.map((r) => rows.get(r.id)),
        );
        empty.hidden = list.length > 0;
        replace(empty, runs.size === 0 ? 'No run has reached this server yet.' : 'No run of this program.');
        const live = list.filter((r) => r.live).length;
        replace(status, `${list.length} run${list.length === 1 ? '' : 's'}, ${live} live`);
        drawPrograms();
    };

    const readDetails = async (ids) => {
        const queue = [...ids];
        const worker = async () => {
            while (queue.length > 0 && !signal.aborted) {
                const id = queue.shift();
                try {
                    const one = await getJson(runPath(id), { signal });
                    runs.set(id, one);
                    gaps.set(id, one.drops ?? one.counters?.drops);
                    if (rows.has(id)) {
                        drawRow(id);
                    }
                } catch (err) {
                    if (err.status !== 404) {
                        throw err;
                    }
                    runs.delete(id); // gone (pruned): drop the row
                    rows.get(id)?.remove();
                    rows.delete(id);
                }
            }
        };
        await Promise.all(Array.from({ length: DETAIL_PARALLEL }, worker));
    };

    const readList = async () => {
        const { runs: list } = await getJson(`/v1/runs?limit=${LIST_LIMIT}`, { signal });
        runs.clear();
        rows.clear();
        gaps.clear();
        for (const r of list) {
            runs.set(r.id, { ...r, counters: undefined });
            gaps.set(r.id, r.drops);
        }
        drawAll();
    };

    const refresh = coalesced(
        async () => {
            const ids = [...dirty];
            dirty.clear();
            if (fullReload || ids.length > PER_RUN_MAX) {
                fullReload = false;
                await readList();
                return;
            }
            const fresh = ids.filter((id) => !runs.has(id));
            await readDetails(ids);
            if (fresh.length > 0) {
                drawAll();
            }
        },
        REFRESH_MS,
        signal,
    );
    const mark = (id) => {
        dirty.add(id);
        refresh.request();
    };

    const goFollow = (id) => {
        window.location.replace(hashFor('log', { run: id }, { follow: 1 }));
    };

    watchEvents(
        signal,
        {
            run: (d) => {
                if (follow && d.program === follow && d.change === 'active') {
                    goFollow(d.id);
                    return;
                }
                mark(d.id);
            },
            log: (d) => {
                const run = runs.get(d.id);
                if (run && Number.isFinite(d.size)) {
                    run.logBytes = d.size;
                    run.live = true;
                    if (rows.has(d.id)) {
                        drawRow(d.id);
                    }
                }
                mark(d.id);
            },
            telemetry: (d) => mark(d.id),
            reset: () => {
                fullReload = true;
                refresh.request();
            },
        },
        container,
    );

    try {
        await readList();
    } catch (err) {
        if (!signal.aborted) {
            replace(container, el('h1', null, 'Runs'), errorBox(err));
            container.dataset.ready = 'true';
        }
        return;
    }
    if (signal.aborted) {
        return;
    }
    if (follow) {
        const newest = [...runs.values()]
            .filter((r) => r.program === follow)
            .sort((a, b) => compareRunIds(b.id, a.id))[0];
        if (newest) {
            goFollow(newest.id);
            return;
        }
        banner.hidden = false;
        replace(
            banner,
            'Waiting for a run of ',
            el('span', { class: 'mono' }, follow),
            ': its log opens as soon as it starts.',
        );
    }
    container.dataset.ready = 'true';

    const live = () => [...runs.values()].filter((r) => r.live);
    every(
        1000,
        () => {
            for (const run of live().filter((r) => rows.has(r.id))) {
                replace(rows.get(run.id).querySelector('td[data-col="duration"]'), runDuration(run));
            }
        },
        signal,
    );
}
