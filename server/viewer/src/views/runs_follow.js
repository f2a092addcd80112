// views/runs_follow.js - "follow newest": the run and log pages, with ?follow=1 in their URL,
// switch to the newer run of the same program as soon as its "run" event arrives (the server
// publishes it at once, before the run's first "log" event). #/runs?follow=<program> opens the
// newest run of that program this way. Here: the test of an event and the page's control.

import { el } from '../dom.js';
import { runIdTime } from './runs_events.js';

/**
 * Whether the "run" event @p data (change "active": the run got data for the first time in
 * the server's lifetime) is another run of @p program, started no earlier than @p currentId
 * (by the time in the id, whole seconds: a run of the same second counts as the next one,
 * since it just started; an older run that sends again after a server restart does not).
 */
export function isNewerRunOf(data, program, currentId) {
    return (
        data.change === 'active' &&
        typeof data.id === 'string' &&
        data.program === program &&
        data.id !== currentId &&
        runIdTime(data.id) >= runIdTime(currentId)
    );
}

/** Whether @p query (URLSearchParams) asks to follow: ?follow=1 (or "true", or empty). */
export function followWanted(query) {
    const v = query.get('follow');
    return v !== null && v !== '0' && v !== 'false';
}

/**
 * The "Follow newest" checkbox: @p on at first, @p onChange(on) when the person (or the 'f' key,
 * through .toggle()) flips it. Returns {node, toggle(), set(on)}.
 */
export function followControl(program, on, onChange) {
    const box = el('input', {
        type: 'checkbox',
        id: 'follow-newest',
        checked: on,
        on: { change: () => onChange(box.checked) },
    });
    const node = el(
        'label',
        { class: 'follow-control', title: `Switch to the next run of ${program} as soon as it starts (f)` },
        box,
        ' Follow newest ',
        el('span', { class: 'mono' }, program),
    );
    return {
        node,
        toggle() {
            box.checked = !box.checked;
            onChange(box.checked);
        },
        set(v) {
            box.checked = v;
        },
    };
}
