// views/crashes.js - #/crashes (every crash, newest first, with a filter) and #/crashes/<id>
// (what GET /v1/crashes/<id> says: manifest fields, the files of the package or the reason an
// upload was refused). Program, run, signal, file names and reasons come from clients: shown
// as text only (dom.js).

import { getJson } from '../api.js';
import { el, idHeading, linkRow, replace, table, waiting } from '../dom.js';
import { bytes, time } from '../format.js';
import { hashFor } from '../router.js';

function statusCell(status) {
    return el('span', { class: `status-${status}` }, status);
}

export async function renderCrashes(container, route, signal) {
    const filter = el('input', {
        type: 'search',
        id: 'crash-filter',
        placeholder: 'filter: program, run, signal, status',
        value: route.query.get('q') || '',
    });
    const list = el('div', { id: 'crash-list' }, el('p', { class: 'note' }, 'Loading crashes…'));
    replace(container, el('h1', null, 'Crashes'), el('div', { class: 'toolbar' }, filter), list);
    const { crashes } = await getJson('/v1/crashes', { signal });
    if (signal.aborted) {
        return;
    }
    const all = [...crashes].sort((a, b) => String(b.received).localeCompare(String(a.received)));
    const draw = () => {
        const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
        const shown = all.filter((c) => {
            const hay = [c.program, c.run, c.signal, c.status, c.id].join(' ').toLowerCase();
            return words.every((w) => hay.includes(w));
        });
        if (shown.length === 0) {
            replace(
                list,
                el(
                    'p',
                    { class: 'note' },
                    all.length === 0 ? 'No crash has reached this server.' : 'No crash matches the filter.',
                ),
            );
            return;
        }
        replace(
            list,
            table(
                [
                    { title: 'Received' },
                    { title: 'Program' },
                    { title: 'Run', mono: true },
                    { title: 'Signal' },
                    { title: 'Status' },
                    { title: 'Archive', num: true },
                    { title: 'Extracted', num: true },
                ],
                shown.map((c) => [
                    el('a', { href: hashFor('crash', { crash: c.id }) }, time(c.received)),
                    c.program,
                    c.run,
                    c.signal || '-',
                    statusCell(c.status),
                    bytes(c.sizes?.archive),
                    bytes(c.sizes?.extracted),
                ]),
                { id: 'crash-table' },
            ),
        );
    };
    filter.addEventListener('input', draw);
    draw();
}

export async function renderCrash(container, route, signal) {
    const id = route.params.crash;
    replace(container, idHeading('Crash ', id), el('p', { class: 'note' }, 'Loading…'));
    const c = await getJson(`/v1/crashes/${encodeURIComponent(id)}`, { signal });
    if (signal.aborted) {
        return;
    }
    const field = (name, value) => [el('dt', null, name), el('dd', null, value)];
    const parts = [
        el('h1', null, 'Crash of ', el('span', { id: 'crash-program' }, c.program || '(unknown program)')),
        linkRow([hashFor('crashes'), 'All crashes']),
        el(
            'dl',
            { class: 'fields', id: 'crash-fields' },
            field('id', c.id),
            field('received', time(c.received)),
            field('program', c.program),
            field('run', c.run),
            field('signal', c.signal || '-'),
            field('status', statusCell(c.status)),
            field('archive', bytes(c.sizes?.archive)),
            field('extracted', bytes(c.sizes?.extracted)),
        ),
    ];
    if (c.reason !== undefined) {
        parts.push(
            el('h2', null, 'Why it was refused'),
            el('p', { class: 'error', id: 'crash-reason' }, c.reason),
        );
    }
    if (Array.isArray(c.files)) {
        parts.push(
            el('h2', null, 'Files'),
            table(
                [
                    { title: 'Path', mono: true },
                    { title: 'Size', num: true },
                ],
                c.files.map((f) => [f.path, bytes(f.bytes)]),
                { id: 'crash-files' },
            ),
            waiting(
                `crash.txt, the log tail and the other files open here once the server serves them (GET /v1/crashes/${id}/files/<name>).`,
            ),
        );
    }
    replace(container, ...parts);
}
