// views/crashes.js - #/crashes: every crash the server holds (GET /v1/crashes), newest first,
// in two tabs: the packages (queued, extracted, stored) and the invalid uploads with the reason
// each was refused (GET /v1/crashes/<id>). Filters by program, status, signal and text, kept in
// the URL (?tab=invalid&program=&status=&signal=&q=). Live: a "crash" event of /v1/events adds
// or updates its row, a "reset" reads the list again. The run column links to the run
// (GET /v1/runs). At most ROWS_MAX rows are drawn. #/crashes/<id> is crashes_page.js.
// Program, run, signal, ids and reasons come from clients: text only (dom.js).

import { followEvents, getJson } from '../api.js';
import { el, errorBox, replace, table } from '../dom.js';
import { bytes, time } from '../format.js';
import { hashFor } from '../router.js';
import { runIds, runKey } from './crashes_logpos.js';
import { parseEvent, renderCrash, statusBadge } from './crashes_page.js';

export { renderCrash };

const ROWS_MAX = 500; // rows drawn; the filter narrows the rest
const REASONS_MAX = 200; // invalid uploads whose reason is fetched (the newest)
const REASON_FETCHES = 4; // at once
const RUNS_REFRESH_MS = 2000; // the run map is read again at most this often

const TABS = [
    ['packages', 'Packages'],
    ['invalid', 'Invalid uploads'],
];

function newestFirst(a, b) {
    const t = String(b.received).localeCompare(String(a.received));
    return t !== 0 ? t : String(b.id).localeCompare(String(a.id));
}

/** A <select> of "any" + @p values, @p current chosen (kept even when no row has it). */
function choice(id, label, values, current, onChange) {
    const all = [...new Set([...values, ...(current ? [current] : [])])].sort();
    const select = el(
        'select',
        { id, 'aria-label': label, on: { change: () => onChange() } },
        el('option', { value: '' }, `${label}: any`),
        all.map((v) => el('option', { value: v }, v)),
    );
    select.value = current || '';
    return select;
}

export async function renderCrashes(container, route, signal) {
    const tab = route.query.get('tab') === 'invalid' ? 'invalid' : 'packages';
    const state = {
        program: route.query.get('program') || '',
        status: route.query.get('status') || '',
        signal: route.query.get('signal') || '',
    };
    const crashes = new Map(); // id -> crash (list fields, plus reason once known)
    const fresh = new Set(); // ids changed by an event since the page opened
    let runs = new Map();
    let runsAsked = 0;

    const filter = el('input', {
        type: 'search',
        id: 'crash-filter',
        placeholder: 'filter: program, run, signal, status, id, reason',
        'aria-label': 'filter',
        value: route.query.get('q') || '',
    });
    const selects = el('span', { class: 'crash-selects' });
    const live = el(
        'span',
        { class: 'crash-live', id: 'crash-live', dataset: { state: 'connecting' } },
        'connecting…',
    );
    const tabs = el('nav', { class: 'crash-tabs', id: 'crash-tabs', 'aria-label': 'crash tabs' });
    const list = el('div', { id: 'crash-list' }, el('p', { class: 'note' }, 'Loading crashes…'));
    const shownNote = el('p', { class: 'note', id: 'crash-shown' });
    replace(
        container,
        el('h1', null, 'Crashes'),
        tabs,
        el('div', { class: 'toolbar' }, filter, selects, live),
        list,
        shownNote,
    );

    /** Keep the filters in the URL without a new history entry or a re-render. */
    const keepInUrl = () => {
        const q = {};
        if (tab === 'invalid') {
            q.tab = 'invalid';
        }
        for (const k of ['program', 'status', 'signal']) {
            if (state[k]) {
                q[k] = state[k];
            }
        }
        if (filter.value) {
            q.q = filter.value;
        }
        window.history.replaceState(null, '', hashFor('crashes', {}, q));
    };

    const inTab = (c) => (tab === 'invalid' ? c.status === 'invalid' : c.status !== 'invalid');

    const drawTabs = () => {
        const all = [...crashes.values()];
        replace(
            tabs,
            TABS.map(([name, title]) =>
                el(
                    'a',
                    {
                        href: hashFor('crashes', {}, name === 'invalid' ? { tab: 'invalid' } : null),
                        class: 'crash-tab',
                        id: `crash-tab-${name}`,
                        'aria-current': name === tab ? 'page' : null,
                    },
                    `${title} (${all.filter((c) => (name === 'invalid' ? c.status === 'invalid' : c.status !== 'invalid')).length})`,
                ),
            ),
        );
    };

    const drawSelects = () => {
        const rows = [...crashes.values()].filter(inTab);
        const onChange = () => {
            for (const s of selects.querySelectorAll('select')) {
                state[s.dataset.key] = s.value;
            }
            keepInUrl();
            draw();
        };
        const make = (key, label) => {
            const s = choice(
                `crash-${key}`,
                label,
                rows.map((c) => c[key]).filter((v) => typeof v === 'string' && v !== ''),
                state[key],
                onChange,
            );
            s.dataset.key = key;
            return s;
        };
        replace(
            selects,
            make('program', 'program'),
            tab === 'packages' ? make('status', 'status') : null,
            tab === 'packages' ? make('signal', 'signal') : null,
        );
    };

    const runCell = (c) => {
        const id = runs.get(runKey(c.program, c.run));
        return id ? el('a', { href: hashFor('run', { run: id }), class: 'crash-run' }, c.run) : c.run;
    };

    const rowProps = (c) => ({
        class: fresh.has(c.id) ? 'crash-row-new' : null,
        dataset: { crashId: c.id },
    });

    const draw = () => {
        const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
        const all = [...crashes.values()].filter(inTab).sort(newestFirst);
        const shown = all.filter((c) => {
            if (
                (state.program && c.program !== state.program) ||
                (tab === 'packages' && state.status && c.status !== state.status) ||
                (tab === 'packages' && state.signal && c.signal !== state.signal)
            ) {
                return false;
            }
            const hay = [c.program, c.run, c.signal, c.status, c.id, c.reason].join(' ').toLowerCase();
            return words.every((w) => hay.includes(w));
        });
        const rows = shown.slice(0, ROWS_MAX);
        replace(
            shownNote,
            shown.length > rows.length
                ? `Showing the newest ${rows.length} of ${shown.length}: narrow the filter for the rest.`
                : null,
        );
        if (rows.length === 0) {
            const none =
                crashes.size === 0
                    ? 'No crash has reached this server.'
                    : all.length === 0
                      ? tab === 'invalid'
                          ? 'No upload was refused.'
                          : 'Every crash upload was refused: see the invalid tab.'
                      : 'No crash matches the filter.';
            replace(list, el('p', { class: 'note' }, none));
            return;
        }
        const link = (c) => el('a', { href: hashFor('crash', { crash: c.id }) }, time(c.received));
        const t =
            tab === 'invalid'
                ? table(
                      [
                          { title: 'Received' },
                          { title: 'Program' },
                          { title: 'Run', mono: true },
                          { title: 'Why it was refused' },
                          { title: 'Archive', num: true },
                      ],
                      rows.map((c) => [
                          link(c),
                          c.program,
                          runCell(c),
                          el('span', { class: 'crash-reason' }, c.reason ?? '…'),
                          bytes(c.sizes?.archive),
                      ]),
                      { id: 'crash-invalid-table' },
                  )
                : table(
                      [
                          { title: 'Received' },
                          { title: 'Program' },
                          { title: 'Run', mono: true },
                          { title: 'Signal' },
                          { title: 'Status' },
                          { title: 'Archive', num: true },
                          { title: 'Extracted', num: true },
                      ],
                      rows.map((c) => [
                          link(c),
                          c.program,
                          runCell(c),
                          c.signal || '-',
                          statusBadge(c.status),
                          bytes(c.sizes?.archive),
                          bytes(c.sizes?.extracted),
                      ]),
                      { id: 'crash-table' },
                  );
        t.querySelectorAll('tbody tr').forEach((tr, i) => {
            const p = rowProps(rows[i]);
            Object.assign(tr.dataset, p.dataset);
            if (p.class) {
                tr.classList.add(p.class);
            }
        });
        replace(list, t);
        if (tab === 'invalid') {
            fetchReasons(rows);
        }
    };

    const redraw = () => {
        drawTabs();
        drawSelects();
        draw();
    };

    // The reasons of the invalid uploads drawn: GET /v1/crashes/<id> each, a few at a time.
    const asked = new Set();
    const fetchReasons = (rows) => {
        const todo = rows.slice(0, REASONS_MAX).filter((c) => c.reason === undefined && !asked.has(c.id));
        todo.forEach((c) => asked.add(c.id));
        let next = 0;
        const worker = async () => {
            while (next < todo.length && !signal.aborted) {
                const c = todo[next++];
                try {
                    const full = await getJson(`/v1/crashes/${encodeURIComponent(c.id)}`, { signal });
                    const now = crashes.get(c.id);
                    if (now) {
                        now.reason = full.reason ?? '(the server gave no reason)';
                    }
                } catch (err) {
                    const now = crashes.get(c.id);
                    if (now && !signal.aborted) {
                        now.reason = `(cannot read the reason: ${err.message})`;
                    }
                }
            }
        };
        if (todo.length > 0) {
            Promise.all(Array.from({ length: REASON_FETCHES }, worker)).then(() => {
                if (!signal.aborted) {
                    draw();
                }
            });
        }
    };

    const loadRuns = async () => {
        runsAsked = Date.now();
        try {
            runs = await runIds({ signal });
        } catch {
            /* the run column stays text */
        }
    };

    const loadAll = async () => {
        const [{ crashes: got }] = await Promise.all([getJson('/v1/crashes', { signal }), loadRuns()]);
        const reasons = new Map([...crashes].map(([id, c]) => [id, c.reason]));
        crashes.clear();
        for (const c of got) {
            crashes.set(c.id, { ...c, reason: reasons.get(c.id) });
        }
    };

    // One crash changed: read it again, then its row (and the runs, if its run is new to us).
    let runsTimer = null;
    const refreshOne = async (id) => {
        let c;
        try {
            c = await getJson(`/v1/crashes/${encodeURIComponent(id)}`, { signal });
        } catch {
            return; // pruned meanwhile, or the server went away: the next reset reads all
        }
        if (signal.aborted) {
            return;
        }
        const { files, ...row } = c;
        crashes.set(id, row);
        fresh.add(id);
        if (!runs.has(runKey(row.program, row.run)) && runsTimer === null) {
            const wait = Math.max(0, runsAsked + RUNS_REFRESH_MS - Date.now());
            runsTimer = setTimeout(async () => {
                await loadRuns();
                runsTimer = null;
                if (!signal.aborted) {
                    draw();
                }
            }, wait);
        }
        redraw();
    };
    signal.addEventListener('abort', () => clearTimeout(runsTimer), { once: true });

    filter.addEventListener('input', () => {
        keepInUrl();
        draw();
    });

    await loadAll();
    if (signal.aborted) {
        return;
    }
    redraw();
    container.dataset.ready = 'true';

    followEvents('/v1/events', {
        signal,
        onState: (s, err) => {
            live.dataset.state = s;
            replace(
                live,
                s === 'open'
                    ? 'live'
                    : s === 'reconnecting'
                      ? 'reconnecting…'
                      : `not live${err ? `: ${err.message}` : ''}`,
            );
        },
        onEvent: (e) => {
            if (e.type === 'crash') {
                const d = parseEvent(e);
                if (d && typeof d.id === 'string') {
                    refreshOne(d.id);
                }
            } else if (e.type === 'reset') {
                loadAll().then(
                    () => !signal.aborted && redraw(),
                    (err) => !signal.aborted && replace(list, errorBox(err)),
                );
            }
        },
    });
}
