// views/frames_graph.js - the frame graph: the run's from the report (GET /v1/runs/<id>/telemetry,
// "frameGraph": totals, queues and passes summed over the run), and one frame's as recorded
// (GET /v1/runs/<id>/frames/<frame>, "frameGraph": its passes in order with their queue,
// barriers and the passes each depends on).

import { el, table } from '../dom.js';
import { sortableTable } from './frames_table.js';
import { count } from './frames_util.js';

const TOTALS = [
    ['passes', 'passes'],
    ['packets', 'packets'],
    ['barriers', 'barriers'],
    ['waits', 'submission waits'],
    ['signals', 'signals'],
    ['edges', 'edges'],
    ['emittedWaits', 'emitted waits'],
    ['sameQueueElisions', 'same-queue elisions'],
    ['duplicateMerges', 'duplicate merges'],
    ['inheritedElisions', 'inherited elisions'],
];

/** The frame-graph nodes of @p report: totals (and per frame), queues, passes. */
export function frameGraphSection(report) {
    const g = report.frameGraph || {};
    if (!g.frames) {
        return [el('p', { class: 'note' }, 'No frame-graph frames recorded.')];
    }
    const totals = g.totals || {};
    const avg = (v) => (g.frames > 0 ? (v / g.frames).toFixed(1) : '-');
    return [
        el('p', { class: 'note' }, `Summed over the run's ${count(g.frames)} frame-graph frames.`),
        table(
            [{ title: '' }, { title: 'total', num: true }, { title: 'per frame', num: true }],
            TOTALS.filter(([k]) => k in totals).map(([k, label]) => [
                label,
                count(totals[k]),
                avg(totals[k]),
            ]),
            { class: 'data compact', id: 'frame-graph-totals' },
        ),
        el('h3', null, 'Queues'),
        sortableTable(
            [
                { title: 'Queue', mono: true, value: (q) => String(q.name) },
                { title: 'Type', value: (q) => String(q.type) },
                { title: 'Frames', num: true, value: (q) => q.frames, cell: (q) => count(q.frames) },
                { title: 'Packets', num: true, value: (q) => q.packets, cell: (q) => count(q.packets) },
                { title: 'Passes', num: true, value: (q) => q.passes, cell: (q) => count(q.passes) },
                { title: 'Waits', num: true, value: (q) => q.waits, cell: (q) => count(q.waits) },
                { title: 'Signals', num: true, value: (q) => q.signals, cell: (q) => count(q.signals) },
            ],
            g.queues || [],
            { id: 'frame-graph-queues', sort: 4, desc: true },
        ),
        el('h3', null, 'Passes'),
        sortableTable(
            [
                { title: 'Pass', mono: true, value: (p) => String(p.name) },
                { title: 'Queue', mono: true, value: (p) => String(p.queue) },
                { title: 'Frames', num: true, value: (p) => p.frames, cell: (p) => count(p.frames) },
                { title: 'Barriers', num: true, value: (p) => p.barriers, cell: (p) => count(p.barriers) },
                {
                    title: 'Barriers / frame',
                    num: true,
                    value: (p) => (p.frames ? p.barriers / p.frames : 0),
                    cell: (p) => avg0(p.barriers, p.frames),
                },
            ],
            g.passes || [],
            { id: 'frame-graph-passes', sort: 3, desc: true },
        ),
        g.omitted
            ? el('p', { class: 'note' }, `${count(g.omitted)} queues or passes past the report's bounds.`)
            : null,
    ];
}

function avg0(v, n) {
    return n > 0 ? (v / n).toFixed(1) : '-';
}

const FRAME_PASSES_SHOWN = 500; // rows of one frame's pass table (a frame may hold 16,384)

/** One frame's graph (@p detail.frameGraph of GET .../frames/<n>), or a note that it has none. */
export function frameGraphOfFrame(detail) {
    const g = detail.frameGraph;
    if (!g) {
        return [el('p', { class: 'note', id: 'frame-graph-none' }, 'This frame recorded no frame graph.')];
    }
    const queues = g.queues || [];
    const packets = g.packets || [];
    const passes = g.passes || [];
    const deps = passes.map(() => []);
    for (const [from, to] of g.edges || []) {
        if (to < deps.length && from < passes.length) {
            deps[to].push(from);
        }
    }
    const queueOf = (p) => {
        const packet = packets[p.packet];
        const q = packet ? queues[packet.queue] : null;
        return q ? `${q.name} (${q.type})` : '-';
    };
    const c = g.counters || {};
    const shown = passes.slice(0, FRAME_PASSES_SHOWN);
    return [
        el(
            'p',
            { class: 'note', id: 'frame-graph-summary' },
            `${count(passes.length)} passes on ${count(packets.length)} packets and ${count(queues.length)} queues, ` +
                `${count((g.edges || []).length)} dependency edges; waits emitted ${count(c.emittedWaits || 0)}, ` +
                `elided on the same queue ${count(c.sameQueueElisions || 0)}, merged ${count(c.duplicateMerges || 0)}, ` +
                `inherited ${count(c.inheritedElisions || 0)}.`,
        ),
        table(
            [
                { title: '#', num: true },
                { title: 'Pass', mono: true },
                { title: 'Queue', mono: true },
                { title: 'Barriers', num: true },
                { title: 'After', mono: true },
            ],
            shown.map((p, i) => [
                String(i),
                String(p.name),
                queueOf(p),
                count(p.barriers),
                deps[i].length === 0 ? '-' : deps[i].map((d) => String(passes[d].name)).join(', '),
            ]),
            { class: 'data compact', id: 'frame-graph-passes' },
        ),
        passes.length > shown.length
            ? el(
                  'p',
                  { class: 'note' },
                  `The first ${count(shown.length)} of ${count(passes.length)} passes.`,
              )
            : null,
    ];
}
