// views/frames_graph.js - the frame graph from the report (GET /v1/runs/<id>/telemetry,
// "frameGraph"): totals, queues and passes. The report aggregates the frame graph over the
// run, and GET /v1/runs/<id>/frames/<frame> has no frame-graph part, so this is the run's
// graph, and the page says so where a frame is shown.

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
        el(
            'p',
            { class: 'note' },
            `Summed over the run's ${count(g.frames)} frame-graph frames (the read API has the frame graph per run, not per frame).`,
        ),
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
