// views/log_lines.js - one line of a run's log.txt as the log view shows it. The server writes
// "2026-12-01T07:34:00.123456789Z WARNING 4242[render] mygame main.c:42: message"
// (docs/protocol.md, "Log-batch format v1"): time, level, thread id with the thread's name in
// brackets when the client sent one (no space or bracket in it: escaped as \xNN), program, then
// the message with control bytes escaped. Marked: gap lines ("nwb: dropped N records here (ring full)", which the client puts
// where it lost records) and name tokens the server could not decode ("#" + 16 lowercase hex
// digits left as sent: no .namesym sidecar knew them). Search matches are <mark>ed. Text only.

import { el } from '../dom.js';

/** The levels the server writes, lowest first (anything else counts as INFO for the filter). */
export const LEVELS = ['INFO', 'WARNING', 'ERROR', 'FATAL'];
const RANK = new Map(LEVELS.map((l, i) => [l, i]));

/** Characters of a line drawn in its row; the rest is in the line's detail (click it). */
export const ROW_CHARS = 2000;

const LINE =
    /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z) (INFO|WARNING|ERROR|FATAL) +(\d+)(?:\[([^\]\s]+)\])? (\S+) ?/;
const DROP = /^nwb: dropped [0-9]+ records? here\b/;
// A name token the server left as it was: not after a '#', not followed by a further hex digit.
const UNKNOWN_TOKEN = /(?<!#)#[0-9a-f]{16}(?![0-9a-f])/g;

/**
 * The parts of @p text: {time, level, rank, thread, threadName, message, drop, tokens} (threadName
 * '' when the line has none, as written: escapes stay as they are); time '' and level
 * '' when the line is not of the server's form (a damaged file): then message is the text.
 */
export function parseLine(text) {
    const m = LINE.exec(text);
    const message = m === null ? text : text.slice(m[0].length);
    UNKNOWN_TOKEN.lastIndex = 0;
    return {
        time: m === null ? '' : m[1],
        level: m === null ? '' : m[2],
        rank: m === null ? 0 : RANK.get(m[2]),
        thread: m === null ? '' : m[3],
        threadName: m === null || m[4] === undefined ? '' : m[4],
        message,
        drop: DROP.test(message),
        tokens: UNKNOWN_TOKEN.test(message),
    };
}

/** The time column: "07:34:00.123456" (UTC, as written; microseconds). */
export function shortTime(iso) {
    return iso === '' ? '' : iso.slice(11, 26);
}

/**
 * Nodes of @p text with unknown name tokens wrapped in <span class="log-token-unknown"> and the
 * (case-insensitive, plain) @p needle wrapped in <mark>; at most ROW_CHARS characters unless
 * @p whole.
 */
export function markedText(text, needle, whole = false) {
    const shown = whole || text.length <= ROW_CHARS ? text : text.slice(0, ROW_CHARS);
    const spans = []; // [start, end, kind]
    UNKNOWN_TOKEN.lastIndex = 0;
    for (let m = UNKNOWN_TOKEN.exec(shown); m !== null; m = UNKNOWN_TOKEN.exec(shown)) {
        spans.push([m.index, m.index + m[0].length, 'token']);
    }
    if (needle) {
        const hay = shown.toLowerCase();
        const n = needle.toLowerCase();
        for (let i = hay.indexOf(n); i >= 0; i = hay.indexOf(n, i + n.length)) {
            spans.push([i, i + n.length, 'mark']);
        }
    }
    if (spans.length === 0) {
        return [shown];
    }
    // Marks win over tokens where they overlap: cut the token around them.
    spans.sort((a, b) => a[0] - b[0] || (a[2] === 'mark' ? -1 : 1));
    const out = [];
    let at = 0;
    for (const [s, e, kind] of spans) {
        const from = Math.max(s, at);
        if (from >= e) {
            continue;
        }
        if (from > at) {
            out.push(shown.slice(at, from));
        }
        const piece = shown.slice(from, e);
        out.push(
            kind === 'mark'
                ? el('mark', null, piece)
                : el(
                      'span',
                      {
                          class: 'log-token-unknown',
                          title: 'name token the server could not decode (no .namesym sidecar knows it)',
                      },
                      piece,
                  ),
        );
        at = e;
    }
    if (at < shown.length) {
        out.push(shown.slice(at));
    }
    return out;
}

/** Whether line @p line (with .text and .parsed) contains @p needle (lowercase), case-insensitive. */
export function lineHas(line, needle) {
    return needle !== '' && line.text.toLowerCase().includes(needle);
}

/**
 * The row of @p line ({offset, bytes, text, parsed}): byte offset, time, level, thread, message;
 * data-offset and data-level for links and tests; classes for gap lines, unknown tokens, levels.
 */
export function lineRow(line, needle, selected) {
    const p = line.parsed;
    const classes = ['log-row'];
    if (p.level) {
        classes.push(`level-${p.level.toLowerCase()}`);
    }
    if (p.drop) {
        classes.push('log-drop');
    }
    if (p.tokens) {
        classes.push('log-has-unknown');
    }
    if (selected) {
        classes.push('log-selected');
    }
    const more =
        line.text.length > ROW_CHARS
            ? el('span', { class: 'log-more' }, ` … (${line.bytes} bytes: click)`)
            : null;
    return el(
        'div',
        {
            class: classes.join(' '),
            role: 'row',
            dataset: { offset: String(line.offset), level: p.level || 'none' },
        },
        el('span', { class: 'log-off', title: `byte offset ${line.offset}` }, String(line.offset)),
        el('span', { class: 'log-time', title: p.time }, shortTime(p.time)),
        el('span', { class: 'log-level' }, p.level || '?'),
        el(
            'span',
            {
                class: p.threadName ? 'log-thread log-thread-named' : 'log-thread',
                title: p.threadName ? `thread ${p.thread} (${p.threadName})` : `thread ${p.thread}`,
            },
            p.threadName ? `${p.thread} ${p.threadName}` : p.thread,
        ),
        el('span', { class: 'log-msg' }, markedText(p.level ? p.message : line.text, needle), more),
    );
}
