// views/frames_scopes.js - the run's scopes from the report (GET /v1/runs/<id>/telemetry,
// "scopes"): a sortable table each for CPU and GPU scopes with count, total, share of the frame
// time, mean, p95, p99 and max (p95/p99 from the report's per-scope histogram).

import { el } from '../dom.js';
import { sortableTable } from './frames_table.js';
import { count, ms } from './frames_util.js';

function scopeColumns(frameTotalMs) {
    return [
        { title: 'Scope', mono: true, value: (s) => String(s.name) },
        { title: 'Count', num: true, value: (s) => s.samples, cell: (s) => count(s.samples) },
        { title: 'Total', num: true, value: (s) => s.totalMs, cell: (s) => ms(s.totalMs) },
        {
            title: '% of frames',
            num: true,
            value: (s) => (frameTotalMs > 0 ? s.totalMs / frameTotalMs : 0),
            cell: (s) => (frameTotalMs > 0 ? `${((100 * s.totalMs) / frameTotalMs).toFixed(1)} %` : '-'),
        },
        { title: 'Mean', num: true, value: (s) => s.meanMs, cell: (s) => ms(s.meanMs) },
        { title: 'p95', num: true, value: (s) => s.p95Ms, cell: (s) => ms(s.p95Ms) },
        { title: 'p99', num: true, value: (s) => s.p99Ms, cell: (s) => ms(s.p99Ms) },
        { title: 'Max', num: true, value: (s) => s.maxMs, cell: (s) => ms(s.maxMs) },
    ];
}

/** The scope tables of @p report, as nodes. */
export function scopeSection(report) {
    const scopes = report.scopes || { cpu: [], gpu: [] };
    const f = report.frames || {};
    const frameTotalMs = (f.meanMs || 0) * (f.count || 0);
    const part = (title, list, id, note) =>
        list.length === 0
            ? [el('h3', null, title), el('p', { class: 'note' }, 'None recorded.')]
            : [
                  el('h3', null, title, ' ', el('span', { class: 'note' }, `${count(list.length)} scopes`)),
                  sortableTable(scopeColumns(frameTotalMs), list, { id, sort: 2, desc: true }),
                  note ? el('p', { class: 'note' }, note) : null,
              ];
    return [
        el(
            'p',
            { class: 'note' },
            'Click a column to sort. p95 and p99 are the report\u2019s (nearest rank over a log-linear histogram, at most 3.1 % above the exact value).',
        ),
        part('CPU scopes', scopes.cpu || [], 'scopes-cpu'),
        part(
            'GPU scopes',
            scopes.gpu || [],
            'scopes-gpu',
            'GPU figures are over the publication windows the recorder sent (its averages per window).',
        ),
        scopes.omittedSamples
            ? el(
                  'p',
                  { class: 'note' },
                  `${count(scopes.omittedSamples)} samples of scopes past 4,096 not aggregated.`,
              )
            : null,
    ];
}
