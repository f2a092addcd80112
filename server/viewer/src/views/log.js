// views/log.js - #/runs/<id>/log: a run's log.txt, read only by ranges (GET
// /v1/runs/<id>/log?offset=&limit= or ?tail=; log_store.js) into a virtual scroller over the
// whole file by byte offset (log_pane.js), with the live tail ("log" events of /v1/events),
// a level filter, text search (log_search.js), gap lines and undecoded name tokens marked
// (log_lines.js). URL state: ?offset=N (the top line; none: the tail), ?time=ISO (opens at the
// first line written then), ?level=WARNING, ?q=text, ?follow=1 (switch to the next run of the
// program as it starts). Keys: / search, n N next/previous match, End tail, Home start,
// PageUp PageDown arrows j k move, f follow, Esc leave search.

import { getJson } from '../api.js';
import { el, errorBox, idHeading, replace } from '../dom.js';
import { bytes } from '../format.js';
import { hashFor } from '../router.js';
import { LEVELS, lineHas } from './log_lines.js';
import { LogPane } from './log_pane.js';
import { firstLineAt, offsetOfTime, scanLog, SCAN_BYTES } from './log_search.js';
import { CACHE_BYTES, CACHE_LINES, LogStore } from './log_store.js';
import { watchEvents } from './runs_events.js';
import { followControl, followWanted, isNewerRunOf } from './runs_follow.js';
import { onViewKeys } from './runs_keys.js';

const URL_SETTLE_MS = 250; // the URL follows the position once it rests this long

const HELP =
    'Keys: / search · Enter or n next match, Shift+Enter or N previous · End tail (live) · Home start · ' +
    'PgUp PgDn ↑ ↓ move · f follow newest · Esc leave search. Click a line to select it and link to it.';

function levelSelect(value, onChange) {
    const select = el(
        'select',
        { id: 'log-level', 'aria-label': 'level filter', on: { change: () => onChange(select.value) } },
        el('option', { value: '' }, 'all levels'),
        LEVELS.slice(1).map((l) => el('option', { value: l }, `${l} and above`)),
    );
    select.value = LEVELS.includes(value) ? value : '';
    return select;
}

export async function renderLog(container, route, signal) {
    const id = route.params.run;
    const q = route.query;
    let run;
    try {
        run = await getJson(`/v1/runs/${encodeURIComponent(id)}`, { signal });
    } catch (err) {
        if (!signal.aborted) {
            replace(container, idHeading('Log of run ', id), errorBox(err));
            container.dataset.ready = 'true';
        }
        return;
    }
    if (signal.aborted) {
        return;
    }
    const store = new LogStore(id);
    store.noteSize(run.logBytes);
    let following = followWanted(q);
    let level = LEVELS.includes(q.get('level')) ? q.get('level') : '';
    let urlTimer = null;

    const position = el('span', { id: 'log-position', class: 'note' });
    const searchStatus = el('span', { id: 'log-search-status', class: 'note', 'aria-live': 'polite' });
    const liveState = el('span', { id: 'log-live', class: 'note' });
    const jumpEnd = el(
        'button',
        { type: 'button', id: 'log-jump-end', title: 'show the last lines and follow new ones (End)' },
        'Jump to end',
    );
    const search = el('input', {
        type: 'search',
        id: 'log-search',
        placeholder: 'search (/)',
        'aria-label': 'search the log',
        value: q.get('q') || '',
    });
    const prev = el('button', { type: 'button', id: 'log-prev', title: 'previous match (N)' }, '↑');
    const next = el('button', { type: 'button', id: 'log-next', title: 'next match (n)' }, '↓');
    const detail = el('div', { id: 'log-detail', class: 'log-detail', hidden: true });
    const error = el('div', { id: 'log-error' });

    const pane = new LogPane(
        store,
        {
            moved: () => {
                drawPosition();
                clearTimeout(urlTimer);
                urlTimer = setTimeout(writeUrl, URL_SETTLE_MS);
            },
            select: (line) => showDetail(line),
            failed: (err) => replace(error, errorBox(err)),
        },
        signal,
    );
    pane.minRank = Math.max(0, LEVELS.indexOf(level));
    pane.needle = search.value.toLowerCase();

    const follow = followControl(run.program, following, (on) => {
        following = on;
        writeUrl();
    });
    const levelBox = levelSelect(level, (v) => {
        level = v;
        pane.minRank = Math.max(0, LEVELS.indexOf(v));
        pane.render();
    });

    function queryNow() {
        const out = {};
        if (pane.mode === 'at') {
            out.offset = pane.topOffset();
        }
        if (level) {
            out.level = level;
        }
        if (search.value) {
            out.q = search.value;
        }
        if (following) {
            out.follow = 1;
        }
        return out;
    }

    function writeUrl() {
        if (!signal.aborted) {
            window.history.replaceState(null, '', hashFor('log', { run: id }, queryNow()));
        }
    }

    function drawPosition() {
        const size = store.size;
        const top = pane.topOffset();
        const pct = size > 0 ? Math.min(100, (100 * top) / size).toFixed(1) : '100.0';
        replace(
            position,
            pane.mode === 'tail'
                ? `at the end · ${bytes(size)}`
                : `byte ${top.toLocaleString('en-US')} of ${size.toLocaleString('en-US')} (${pct} %)`,
        );
        const behind = pane.mode === 'tail' ? 0 : size - store.end;
        jumpEnd.classList.toggle('log-new-data', pane.mode !== 'tail' && behind > 0 && run.live);
        replace(
            jumpEnd,
            pane.mode !== 'tail' && run.live ? `Jump to end (+${bytes(Math.max(0, behind))})` : 'Jump to end',
        );
        container.dataset.logMode = pane.mode;
    }

    function showDetail(line) {
        detail.hidden = false;
        replace(
            detail,
            el(
                'p',
                { class: 'log-detail-head' },
                `byte ${line.offset.toLocaleString('en-US')}, ${line.bytes} bytes · `,
                el(
                    'a',
                    { id: 'log-line-link', href: hashFor('log', { run: id }, { offset: line.offset }) },
                    'link to this line',
                ),
            ),
            el('pre', { class: 'log-detail-text' }, line.text),
        );
        writeUrl();
    }

    // ---- search -------------------------------------------------------------------------
    let searching = null; // AbortController of a scan in progress

    function matchTest() {
        const needle = search.value.toLowerCase();
        return (l) => l.parsed.rank >= pane.minRank && lineHas(l, needle);
    }

    async function findMatch(dir) {
        const needle = search.value.toLowerCase();
        if (needle === '') {
            replace(searchStatus, 'Type something to search for.');
            return;
        }
        const test = matchTest();
        const lines = store.lines;
        const from = pane.selected >= 0 ? store.indexAt(pane.selected) : pane.topIndex;
        if (dir > 0) {
            for (let i = from + 1; i < lines.length; i++) {
                if (test(lines[i])) {
                    return selectLine(lines[i].offset, false);
                }
            }
        } else {
            for (let i = Math.min(from, lines.length) - 1; i >= 0; i--) {
                if (test(lines[i])) {
                    return selectLine(lines[i].offset, false);
                }
            }
        }
        const start = dir > 0 ? store.end : store.begin;
        if ((dir > 0 && start >= store.size) || (dir < 0 && start <= 0)) {
            replace(searchStatus, `No ${dir > 0 ? 'later' : 'earlier'} match in the log.`);
            return;
        }
        searching?.abort();
        searching = new AbortController();
        const stop = searching;
        signal.addEventListener('abort', () => stop.abort(), { once: true });
        replace(searchStatus, 'Searching…');
        const found = await scanLog(id, test, start, dir, stop.signal, (n) =>
            replace(searchStatus, `Searching… ${bytes(n)} of at most ${bytes(SCAN_BYTES)} read`),
        );
        if (stop.signal.aborted) {
            return;
        }
        if (found.offset >= 0) {
            return selectLine(found.offset, true);
        }
        replace(
            searchStatus,
            found.end
                ? `No ${dir > 0 ? 'later' : 'earlier'} match in the log.`
                : `No match in the ${bytes(SCAN_BYTES)} read ${dir > 0 ? 'after' : 'before'} the lines shown (stopped at byte ${found.stop.toLocaleString('en-US')}); press ${dir > 0 ? 'n' : 'N'} again to go on from there.`,
        );
        if (!found.end) {
            await pane.jumpTo(found.stop);
        }
    }

    async function selectLine(offset, read) {
        if (read) {
            await pane.jumpTo(offset);
        } else {
            pane.mode = 'at';
            const fit = pane.fit();
            const i = store.indexAt(offset);
            // Keep the match in view: a third down from the top when it has to move.
            const shownNow = pane.shown.some((l) => l.offset === offset);
            if (!shownNow) {
                const back = Math.max(0, i - Math.floor(fit / 3));
                pane.anchor = store.lines[back].offset;
            } else {
                pane.anchor = pane.topOffset();
            }
        }
        pane.selected = offset;
        pane.render();
        const line = store.lines[store.indexAt(offset)];
        if (line && line.offset === offset) {
            showDetail(line);
            replace(searchStatus, `Match at byte ${offset.toLocaleString('en-US')}.`);
        }
    }

    search.addEventListener('input', () => {
        pane.needle = search.value.toLowerCase();
        replace(searchStatus, '');
        pane.render();
    });
    search.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') {
            e.preventDefault();
            findMatch(e.shiftKey ? -1 : 1);
        } else if (e.key === 'Escape') {
            search.blur();
            pane.rows.focus();
        }
    });
    prev.addEventListener('click', () => findMatch(-1));
    next.addEventListener('click', () => findMatch(1));
    jumpEnd.addEventListener('click', () => pane.toTail().catch(pane.hooks.failed));

    const links = el('p', { class: 'links', id: 'log-links' });
    const drawLinks = () =>
        replace(
            links,
            el('a', { href: hashFor('run', { run: id }) }, 'Run'),
            run.telemetry ? [' · ', el('a', { href: hashFor('frames', { run: id }) }, 'Frames')] : null,
            run.crashes > 0
                ? [' · ', el('a', { href: hashFor('crashes', {}, { q: run.run }) }, 'Crashes')]
                : null,
            ' · ',
            el('a', { href: hashFor('runs', {}, { program: run.program }) }, `Runs of ${run.program}`),
        );
    drawLinks();
    replace(
        container,
        idHeading('Log of run ', id),
        links,
        el(
            'div',
            { class: 'toolbar log-toolbar' },
            levelBox,
            search,
            prev,
            next,
            searchStatus,
            el('span', { class: 'toolbar-gap' }),
            follow.node,
            jumpEnd,
        ),
        el('p', { class: 'log-status' }, position, ' · ', liveState),
        error,
        pane.node,
        el('p', { class: 'help', id: 'log-help' }, HELP),
        el(
            'p',
            { class: 'note' },
            `The level filter and the highlighting act on the lines the page holds (at most ${CACHE_LINES.toLocaleString('en-US')} lines, ${bytes(CACHE_BYTES)}, around the place shown); ` +
                `the next/previous match searches further by range reads, ${bytes(SCAN_BYTES)} at a time.`,
        ),
        detail,
    );

    // ---- where to open ----------------------------------------------------------------------
    try {
        const offset = q.get('offset');
        const atTime = q.get('time');
        if (offset !== null && /^[0-9]+$/.test(offset)) {
            await pane.jumpTo(Number(offset));
        } else if (atTime !== null && !Number.isNaN(Date.parse(atTime))) {
            const ms = Date.parse(atTime);
            await pane.jumpTo(await offsetOfTime(id, ms, store.size, signal));
            const hit = firstLineAt(store.lines, ms);
            if (hit) {
                await selectLine(hit.offset, false);
            }
        } else {
            await pane.toTail();
        }
    } catch (err) {
        if (!signal.aborted) {
            replace(error, errorBox(err));
        }
    }
    if (signal.aborted) {
        return;
    }
    container.dataset.ready = 'true';

    // ---- live -------------------------------------------------------------------------------
    const drawLive = (s) =>
        replace(
            liveState,
            s === 'open'
                ? run.live
                    ? 'live: new lines appear as they are written'
                    : 'ended (watching for more)'
                : `events: ${s}`,
        );
    let streamState = 'connecting';
    drawLive(streamState);
    watchEvents(
        signal,
        {
            run: (d) => {
                if (following && isNewerRunOf(d, run.program, id)) {
                    window.location.hash = hashFor('log', { run: d.id }, { follow: 1 });
                } else if (d.id === id && d.change === 'ended') {
                    run.live = false; // the server says so: no polling for it
                    drawLive(streamState);
                    drawPosition();
                    drawLinks();
                }
            },
            log: (d) => {
                if (d.id !== id || !Number.isFinite(d.size)) {
                    return;
                }
                run.live = true;
                drawLive(streamState);
                store.noteSize(d.size);
                pane.grew();
            },
            reset: async () => {
                const fresh = await getJson(`/v1/runs/${encodeURIComponent(id)}`, { signal });
                run = fresh;
                store.noteSize(fresh.logBytes);
                pane.grew();
            },
            state: (s) => {
                streamState = s;
                drawLive(s);
            },
        },
        container,
    );

    onViewKeys(signal, (e) => {
        const keys = {
            '/': () => search.focus(),
            End: () => pane.toTail().catch(pane.hooks.failed),
            Home: () => pane.jumpTo(0).catch(pane.hooks.failed),
            PageDown: () => pane.page(1),
            PageUp: () => pane.page(-1),
            ArrowDown: () => pane.scrollBy(1),
            ArrowUp: () => pane.scrollBy(-1),
            j: () => pane.scrollBy(1),
            k: () => pane.scrollBy(-1),
            f: () => follow.toggle(),
            n: () => findMatch(1),
            N: () => findMatch(-1),
        };
        const fn = keys[e.key];
        if (fn) {
            e.preventDefault();
            fn();
        }
    });
    signal.addEventListener('abort', () => clearTimeout(urlTimer), { once: true });
}
