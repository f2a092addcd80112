// views/frames_lists.js - the report's lists of frames (GET /v1/runs/<id>/telemetry): the
// worst frames (the 10 slowest, with their top scopes and first log lines) and the
// diagnostics (the first 64, with their frame, severity, code and key/value pairs). Each
// frame links to its page.

import { el } from '../dom.js';
import { hashFor } from '../router.js';
import { sortableTable } from './frames_table.js';
import { count, ms } from './frames_util.js';

function frameLink(run, frame, query) {
    return el('a', { href: hashFor('frame', { run, frame }, query), class: 'mono' }, count(frame));
}

/** The worst frames of @p report as a table (links keep the chart's window @p query). */
export function worstSection(report, run, query) {
    const worst = report.frames?.worst || [];
    if (worst.length === 0) {
        return [el('p', { class: 'note' }, 'No frames recorded.')];
    }
    return [
        sortableTable(
            [
                {
                    title: 'Frame',
                    num: true,
                    value: (w) => w.frame,
                    cell: (w) => frameLink(run, w.frame, query),
                },
                { title: 'Time', num: true, value: (w) => w.ms, cell: (w) => ms(w.ms) },
                {
                    title: 'Longest scopes',
                    value: (w) => (w.topScopes || []).map((s) => s.name).join(', '),
                    cell: (w) =>
                        (w.topScopes || [])
                            .slice(0, 4)
                            .map((s, i) => [
                                i > 0 ? ', ' : null,
                                el('span', { class: 'mono' }, String(s.name)),
                                ` ${ms(s.ms)}`,
                            ]),
                },
                {
                    title: 'Log lines',
                    num: true,
                    value: (w) => (w.logs || []).length + (w.moreLogs || 0),
                    cell: (w) => count((w.logs || []).length + (w.moreLogs || 0)),
                },
            ],
            worst,
            { id: 'frames-worst', sort: 1, desc: true },
        ),
    ];
}

/** The diagnostics of @p report: counts by severity and the listed ones. */
export function diagnosticsSection(report, run, query) {
    const d = report.diagnostics || {};
    if (!d.count) {
        return [el('p', { class: 'note' }, 'No diagnostics recorded.')];
    }
    const sev = d.bySeverity || {};
    return [
        el(
            'p',
            null,
            `${count(d.count)} diagnostics: `,
            ['info', 'warning', 'error', 'fatal'].map((k, i) => [
                i > 0 ? ', ' : null,
                el('span', { class: `sev sev-${k}` }, `${count(sev[k] || 0)} ${k}`),
            ]),
            d.omitted
                ? ` (the first ${count((d.listed || []).length)} are listed; ${count(d.omitted)} more are counted only)`
                : '',
            '. Each is a diamond at the bottom of the chart.',
        ),
        sortableTable(
            [
                {
                    title: 'Frame',
                    num: true,
                    value: (x) => x.frame,
                    cell: (x) => frameLink(run, x.frame, query),
                },
                {
                    title: 'Severity',
                    value: (x) => ['info', 'warning', 'error', 'fatal'].indexOf(x.severity),
                    cell: (x) => el('span', { class: `sev sev-${x.severity}` }, String(x.severity)),
                },
                { title: 'Code', mono: true, value: (x) => String(x.code) },
                {
                    title: 'Details',
                    value: (x) => (x.pairs || []).map((p) => p.join('=')).join(' '),
                    cell: (x) => (x.pairs || []).map(([k, v], i) => [i > 0 ? ' · ' : null, `${k}=${v}`]),
                },
            ],
            d.listed || [],
            { id: 'frames-diagnostics', sort: 0, desc: false },
        ),
    ];
}
