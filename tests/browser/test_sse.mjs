// tests/browser/test_sse.mjs (ctest viewer.sse) - the viewer's text/event-stream parser
// (server/viewer/src/sse.js) in node, no browser: fields, comments, multi-line data, every
// line ending, chunks split at every byte (CRLF across chunks included), id and retry, the
// BOM, events cut off by the end of the stream, and the size bound.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SSE_MAX_BYTES, SseParser } from '../../server/viewer/src/sse.js';

function parse(chunks) {
    const events = [];
    const retries = [];
    const p = new SseParser(
        (e) => events.push(e),
        (ms) => retries.push(ms),
    );
    for (const c of chunks) {
        p.push(c);
    }
    p.end();
    return { events, retries, lastEventId: p.lastEventId };
}

const STREAM =
    '\uFEFF: hello\n' +
    'event: run\ndata: {"id":"a"}\nid: 1\n\n' +
    'data: line one\r\ndata: line two\r\n\r\n' +
    'data\rdata:\r\r' +
    'retry: 2500\nretry: soon\n' +
    'id: 7\n\n' +
    'event: log\ndata:  two spaces\nunknown: x\n\n' +
    'data: cut off by the end';

const WANT = [
    { type: 'run', data: '{"id":"a"}', lastEventId: '1' },
    { type: 'message', data: 'line one\nline two', lastEventId: '1' },
    { type: 'message', data: '\n', lastEventId: '1' },
    { type: 'log', data: ' two spaces', lastEventId: '7' },
];

test('a whole stream gives its events', () => {
    const { events, retries, lastEventId } = parse([STREAM]);
    assert.deepEqual(events, WANT);
    assert.deepEqual(retries, [2500]);
    assert.equal(lastEventId, '7');
});

test('the same stream split at every point gives the same events', () => {
    for (let i = 0; i <= STREAM.length; i++) {
        const { events } = parse([STREAM.slice(0, i), STREAM.slice(i)]);
        assert.deepEqual(events, WANT, `split at ${i}`);
    }
    const { events } = parse([...STREAM]);
    assert.deepEqual(events, WANT, 'one character at a time');
});

test('CR then LF in the next chunk is one line end', () => {
    const { events } = parse(['data: a\r', '\ndata: b\r', '\n\r', '\n']);
    assert.deepEqual(events, [{ type: 'message', data: 'a\nb', lastEventId: '' }]);
});

test('a BOM counts only at the very start; an id with NUL is ignored', () => {
    const { events, lastEventId } = parse([
        '\uFEFFdata: x\n\n',
        '\uFEFFdata: y\n\n',
        'id: a\0b\ndata: z\n\n',
    ]);
    // The second BOM is part of a field name ("\uFEFFdata"): unknown, so no event "y".
    assert.deepEqual(
        events.map((e) => e.data),
        ['x', 'z'],
    );
    assert.equal(lastEventId, '');
});

test('a line or an event larger than the bound is an error, not a memory leak', () => {
    const p = new SseParser(() => {});
    assert.throws(() => p.push('data: ' + 'x'.repeat(SSE_MAX_BYTES + 1)), /longer than/);
    const q = new SseParser(() => {});
    const line = `data: ${'y'.repeat(1024 * 1024)}\n`;
    assert.throws(() => {
        for (let i = 0; i < 5; i++) {
            q.push(line);
        }
    }, /larger than/);
});
