// views/frames_detail.js - one frame (GET /v1/runs/<id>/frames/<frame>): its time against the
// budget, prev / next / worst-frame links (keys Left, Right, w; Esc back to the chart), its CPU
// scopes as a flame per thread (frames_flame.js) and as a list, its GPU samples, its log lines
// as text, its memory totals, and the run's frame graph (the API has none per frame).

import { el, replace, table } from '../dom.js';
import { bytes } from '../format.js';
import { hashFor } from '../router.js';
import { createFlame } from './frames_flame.js';
import { frameGraphOfFrame } from './frames_graph.js';
import { count, ms } from './frames_util.js';

/** The links of the frame page: {prev, next, worst, back} hashes (null when there is none). */
export function frameLinks(run, frame, bounds, worstFrame, query) {
    const at = (n) => hashFor('frame', { run, frame: n }, query);
    return {
        prev: bounds && frame > bounds.first ? at(Math.min(frame - 1, bounds.last)) : null,
        next: bounds && frame < bounds.last ? at(Math.max(frame + 1, bounds.first)) : null,
        worst: worstFrame !== null && worstFrame !== undefined ? at(worstFrame) : null,
        back: hashFor('frames', { run }, query),
    };
}

function navLink(href, text, key, id) {
    return href === null
        ? el('span', { class: 'button disabled', id, 'aria-disabled': 'true' }, text, el('kbd', null, key))
        : el('a', { class: 'button', href, id }, text, el('kbd', null, key));
}

/** The prev / next / worst / back row of the frame page. */
export function frameNav(links) {
    return el(
        'nav',
        { class: 'frame-nav toolbar', 'aria-label': 'frames' },
        navLink(links.prev, 'Previous frame ', '←', 'frame-prev'),
        navLink(links.next, 'Next frame ', '→', 'frame-next'),
        navLink(links.worst, 'Worst frame ', 'w', 'frame-worst'),
        navLink(links.back, 'Back to the chart ', 'Esc', 'frame-back'),
    );
}

function scopeList(detail) {
    const rows = [];
    for (const th of detail.threads || []) {
        for (const s of th.scopes) {
            rows.push([
                String(th.thread),
                String(s.depth),
                `${'\u00a0\u00a0'.repeat(Number(s.depth) || 0)}${s.name}`,
                ms((Number(s.startNs) - Number(detail.startNs)) / 1e6),
                ms(s.ms),
            ]);
        }
    }
    return el(
        'details',
        { class: 'scope-list' },
        el('summary', null, `The ${count(rows.length)} scopes as a list`),
        table(
            [
                { title: 'Thread', num: true },
                { title: 'Depth', num: true },
                { title: 'Scope', mono: true },
                { title: 'Starts at', num: true },
                { title: 'Time', num: true },
            ],
            rows,
            { class: 'data compact', id: 'frame-scopes' },
        ),
    );
}

function gpuTable(detail) {
    const gpu = detail.gpu || [];
    if (gpu.length === 0) {
        return el('p', { class: 'note', id: 'frame-gpu' }, 'No GPU samples arrived with this frame.');
    }
    return table(
        [
            { title: 'GPU scope', mono: true },
            { title: 'Source frames' },
            { title: 'Samples', num: true },
            { title: 'Mean', num: true },
            { title: 'Min', num: true },
            { title: 'Max', num: true },
        ],
        gpu.map((g) => [
            String(g.name),
            g.sourceFrameMin === g.sourceFrameMax
                ? count(g.sourceFrameMin)
                : `${count(g.sourceFrameMin)}–${count(g.sourceFrameMax)}`,
            count(g.windowSamples),
            ms(g.windowAvgMs),
            ms(g.windowMinMs),
            ms(g.windowMaxMs),
        ]),
        { class: 'data compact', id: 'frame-gpu' },
    );
}

function logLines(detail) {
    const logs = detail.logs || [];
    if (logs.length === 0) {
        return el('p', { class: 'note', id: 'frame-logs' }, 'No log lines were recorded in this frame.');
    }
    return [
        el(
            'ol',
            { class: 'frame-logs', id: 'frame-logs' },
            logs.map((l) =>
                el(
                    'li',
                    { class: `level-${String(l.level).toLowerCase()}` },
                    el('span', { class: 'level' }, String(l.level)),
                    el('span', { class: 'thread' }, `t${l.thread}`),
                    el('span', { class: 'message' }, String(l.message)),
                ),
            ),
        ),
        detail.moreLogs
            ? el(
                  'p',
                  { class: 'note' },
                  `${count(detail.moreLogs)} more lines in this frame (the API answers the first 256).`,
              )
            : null,
    ];
}

function memoryTotals(detail) {
    const m = detail.memory;
    if (!m) {
        return el('p', { class: 'note', id: 'frame-memory' }, 'No memory frame was recorded for this frame.');
    }
    const row = (k, v) => [el('dt', null, k), el('dd', null, v)];
    return el(
        'dl',
        { class: 'fields', id: 'frame-memory' },
        row('arenas used', bytes(m.arenaUsedBytes)),
        row('arenas reserved', bytes(m.arenaReservedBytes)),
        row('heap total used', bytes(m.heapBackingUsedBytes)),
        row('process RSS', m.processRssBytes ? bytes(m.processRssBytes) : 'not sampled'),
    );
}

/**
 * Draw @p detail (the /frames/<n> answer) into @p section: @p ctx {budgetMs, links, report}.
 * Returns {destroy()} (the flame's listeners).
 */
export function renderFrameDetail(section, detail, ctx) {
    const over = ctx.budgetMs > 0 && detail.durationMs > ctx.budgetMs;
    const flameBox = el('div', { class: 'flame-box' });
    replace(
        section,
        el(
            'h2',
            { id: 'frame-title' },
            `Frame ${count(detail.frame)}: `,
            el('span', { class: over ? 'over-budget' : null, id: 'frame-ms' }, ms(detail.durationMs)),
            ctx.budgetMs > 0 ? ` (budget ${ms(ctx.budgetMs)}${over ? ', over' : ''})` : '',
            `, ${count(detail.cpuScopes)} CPU scopes on ${count((detail.threads || []).length)} threads`,
        ),
        frameNav(ctx.links),
        el('h3', null, 'CPU scopes'),
        el(
            'p',
            { class: 'note' },
            'A lane per thread, a row per depth. Hover a box for its name, time and start; the wheel zooms, drag pans, double-click shows the whole frame.',
        ),
        flameBox,
        scopeList(detail),
        el('h3', null, 'GPU samples'),
        el(
            'p',
            { class: 'note' },
            'GPU results arrive frames later: these are the publication windows that came with this frame, with the frames they measured.',
        ),
        gpuTable(detail),
        el('h3', null, 'Log lines of this frame'),
        logLines(detail),
        el('h3', null, 'Memory'),
        memoryTotals(detail),
        el('h3', null, 'Frame graph of this frame'),
        frameGraphOfFrame(detail),
    );
    return createFlame(flameBox, detail);
}
