// views/frames_memory.js - the run's memory from the report (GET /v1/runs/<id>/telemetry,
// "memory"): used bytes of each arena over the run in one chart (with the arenas' total), the
// heap total ("heapBacking", inclusive of what the arenas use) in a chart of its own beside it,
// never added to them; arenas whose use only grew are called out; a sortable table of every
// owner. Each series is the report's (at most 128 points per owner, each the min and max of
// its samples): the charts draw the max of each point.

import uPlot from '../uPlot.esm.js';
import { el } from '../dom.js';
import { bytes } from '../format.js';
import { sortableTable } from './frames_table.js';
import { colorOf, count } from './frames_util.js';

const CHART_ARENAS_MAX = 12; // lines in the arena chart; the table has every owner
const HEIGHT = 200;

/**
 * True when @p series never went down: each point's smallest sample is at least the previous
 * point's largest, and it ends above where it began. Judged on the report's downsampled points
 * (a dip inside one point that recovers before the point ends is not seen).
 */
export function onlyGrows(series) {
    const p = series?.points || [];
    if (p.length < 2) {
        return false;
    }
    for (let i = 1; i < p.length; i++) {
        if (p[i][1] < p[i - 1][2]) {
            return false;
        }
    }
    return p[p.length - 1][2] > p[0][1];
}

/** uPlot data for @p lines [{series}]: the union of their frames, null where a line has none. */
function joinSeries(lines) {
    const frames = new Set();
    for (const l of lines) {
        for (const pt of l.series?.points || []) {
            frames.add(pt[0]);
        }
    }
    const xs = [...frames].sort((a, b) => a - b);
    const at = new Map(xs.map((x, i) => [x, i]));
    const ys = lines.map((l) => {
        const y = new Array(xs.length).fill(null);
        for (const pt of l.series?.points || []) {
            y[at.get(pt[0])] = pt[2];
        }
        return y;
    });
    return [xs, ...ys];
}

function memoryChart(parent, lines, title) {
    const width = Math.max(320, parent.clientWidth - 2);
    const opts = {
        title,
        width,
        height: HEIGHT,
        scales: { x: { time: false } },
        series: [
            { label: 'frame', value: (u, v) => (v === null ? '-' : count(v)) },
            ...lines.map((l) => ({
                label: l.label,
                stroke: l.color,
                width: l.total ? 2 : 1.5,
                dash: l.total ? [6, 3] : undefined,
                spanGaps: true,
                points: { show: false },
                value: (u, v) => (v === null ? '-' : bytes(v)),
            })),
        ],
        axes: [
            { label: 'frame', values: (u, splits) => splits.map((v) => count(Math.round(v))) },
            { size: 76, values: (u, splits) => splits.map((v) => bytes(v)) },
        ],
        cursor: { drag: { x: false, y: false } },
    };
    return new uPlot(opts, joinSeries(lines), parent);
}

function ownerRows(memory) {
    return [...(memory.arenas || []), ...(memory.heapBacking || []), ...(memory.explicitScopes || [])];
}

/**
 * The memory section of @p report into @p parent (emptied first). Returns {destroy()} for the
 * charts it made.
 */
export function renderMemory(parent, report) {
    parent.replaceChildren();
    const memory = report.memory || {};
    const charts = [];
    const destroy = () => charts.forEach((c) => c.destroy());
    const arenas = memory.arenas || [];
    const heap = memory.heapBacking || [];
    if (!memory.frames) {
        parent.appendChild(el('p', { class: 'note' }, 'No memory frames recorded.'));
        return { destroy };
    }
    const growing = ownerRows(memory).filter((o) => onlyGrows(o.series));
    parent.appendChild(
        el(
            'p',
            { class: growing.length > 0 ? 'only-grows-list' : 'note', id: 'memory-only-grows' },
            growing.length > 0
                ? [
                      'Only grow (never freed back, over the whole run): ',
                      growing.map((o, i) => [
                          i > 0 ? ', ' : null,
                          el('span', { class: 'mono' }, String(o.name)),
                          ` (+${bytes(o.growthBytes)})`,
                      ]),
                  ]
                : 'No owner only grows.',
        ),
    );
    const grid = el('div', { class: 'memory-charts' });
    const arenaBox = el('div', { class: 'chart', id: 'memory-arenas-chart' });
    const heapBox = el('div', { class: 'chart', id: 'memory-heap-chart' });
    grid.append(arenaBox, heapBox);
    parent.appendChild(grid);
    const arenaLines = arenas.slice(0, CHART_ARENAS_MAX).map((a) => ({
        label: String(a.name),
        color: colorOf(String(a.name), 45),
        series: a.series,
    }));
    if (memory.arenaTotals?.series) {
        arenaLines.push({
            label: 'all arenas',
            color: '#1b1f24',
            total: true,
            series: memory.arenaTotals.series,
        });
    }
    const heapLines = heap.slice(0, CHART_ARENAS_MAX).map((h) => ({
        label: String(h.name),
        color: colorOf(String(h.name), 40),
        series: h.series,
    }));
    if (memory.heapBackingTotals?.series && heap.length !== 1) {
        heapLines.push({
            label: 'heap total',
            color: '#1b1f24',
            total: true,
            series: memory.heapBackingTotals.series,
        });
    }
    if (arenaLines.length > 0) {
        charts.push(memoryChart(arenaBox, arenaLines, 'Arenas: used bytes'));
    } else {
        arenaBox.appendChild(el('p', { class: 'note' }, 'No arenas.'));
    }
    if (heapLines.length > 0) {
        charts.push(
            memoryChart(heapBox, heapLines, 'Heap total (heapBacking, includes the arenas): used bytes'),
        );
    } else {
        heapBox.appendChild(el('p', { class: 'note' }, 'No heap total recorded.'));
    }
    if (arenas.length > CHART_ARENAS_MAX) {
        parent.appendChild(
            el(
                'p',
                { class: 'note' },
                `The chart shows the ${CHART_ARENAS_MAX} arenas with the largest peaks; the table has all ${count(arenas.length)}.`,
            ),
        );
    }
    parent.appendChild(
        sortableTable(
            [
                { title: 'Owner', mono: true, value: (o) => String(o.name) },
                { title: 'Kind', value: (o) => String(o.source) },
                { title: 'Used now', num: true, value: (o) => o.usedBytes, cell: (o) => bytes(o.usedBytes) },
                { title: 'Peak', num: true, value: (o) => o.peakBytes, cell: (o) => bytes(o.peakBytes) },
                {
                    title: 'Reserved',
                    num: true,
                    value: (o) => o.reservedBytes,
                    cell: (o) => bytes(o.reservedBytes),
                },
                {
                    title: 'Growth',
                    num: true,
                    value: (o) => o.growthBytes,
                    cell: (o) => `${o.growthBytes < 0 ? '−' : '+'}${bytes(Math.abs(o.growthBytes))}`,
                },
                {
                    title: 'Allocs',
                    num: true,
                    value: (o) => o.allocations,
                    cell: (o) => count(o.allocations),
                },
                { title: 'Frees', num: true, value: (o) => o.frees, cell: (o) => count(o.frees) },
                {
                    title: 'Trend',
                    value: (o) => (onlyGrows(o.series) ? 1 : 0),
                    cell: (o) =>
                        onlyGrows(o.series) ? el('span', { class: 'badge grows' }, 'only grows') : '',
                },
            ],
            ownerRows(memory),
            { id: 'memory-owners', sort: 3, desc: true },
        ),
    );
    if (memory.omittedRecords) {
        parent.appendChild(
            el(
                'p',
                { class: 'note' },
                `${count(memory.omittedRecords)} records of owners past 4,096 not kept.`,
            ),
        );
    }
    return {
        destroy,
        resize() {
            for (const c of charts) {
                c.setSize({ width: Math.max(320, c.root.parentNode.clientWidth - 2), height: HEIGHT });
            }
        },
    };
}
