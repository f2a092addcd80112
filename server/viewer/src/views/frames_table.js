// views/frames_table.js - a table whose columns sort when their header is clicked (or Enter /
// Space on it): the scope tables, the memory owners, the worst frames. Cells are text or nodes
// made by dom.js; the sort keys are the rows' values, never their rendered text.

import { el, replace } from '../dom.js';

/**
 * A sortable table. @p columns [{title, num?, mono?, value(row), cell?(row)}]: value() is the
 * sort key (numbers sort numerically, strings by locale), cell() what is shown (value() when
 * absent). @p rows: the data. @p opts {id, sort: column index, desc: bool}. Returns the table;
 * table.dataset.sort / .dir say the current order (tests read them).
 */
export function sortableTable(columns, rows, opts = {}) {
    const state = { col: opts.sort ?? 0, desc: opts.desc ?? true };
    const body = el('tbody');
    const heads = columns.map((c, i) =>
        el(
            'th',
            {
                class: c.num ? 'num sortable' : 'sortable',
                tabindex: '0',
                scope: 'col',
                dataset: { col: String(i) },
                on: {
                    click: () => sortBy(i),
                    keydown: (e) => {
                        if (e.key === 'Enter' || e.key === ' ') {
                            e.preventDefault();
                            sortBy(i);
                        }
                    },
                },
            },
            c.title,
        ),
    );
    const tableNode = el(
        'table',
        { class: 'data sortable-table', id: opts.id },
        el('thead', null, el('tr', null, heads)),
        body,
    );

    function compare(a, b) {
        const va = columns[state.col].value(a);
        const vb = columns[state.col].value(b);
        let r;
        if (typeof va === 'number' && typeof vb === 'number') {
            r = va - vb;
        } else {
            r = String(va ?? '').localeCompare(String(vb ?? ''));
        }
        return state.desc ? -r : r;
    }

    function draw() {
        const sorted = rows.slice().sort(compare);
        replace(
            body,
            sorted.map((row) =>
                el(
                    'tr',
                    null,
                    columns.map((c) =>
                        el(
                            'td',
                            { class: c.num ? 'num' : c.mono ? 'mono' : null },
                            c.cell ? c.cell(row) : String(c.value(row) ?? '-'),
                        ),
                    ),
                ),
            ),
        );
        heads.forEach((th, i) => {
            if (i === state.col) {
                th.setAttribute('aria-sort', state.desc ? 'descending' : 'ascending');
            } else {
                th.removeAttribute('aria-sort');
            }
        });
        tableNode.dataset.sort = String(state.col);
        tableNode.dataset.dir = state.desc ? 'desc' : 'asc';
    }

    function sortBy(i) {
        if (state.col === i) {
            state.desc = !state.desc;
        } else {
            state.col = i;
            // Numbers start largest first (what costs most), names A to Z.
            state.desc = Boolean(columns[i].num);
        }
        draw();
    }

    draw();
    return tableNode;
}
