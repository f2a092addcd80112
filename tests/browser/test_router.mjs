// tests/browser/test_router.mjs (ctest viewer.router) - the viewer's URLs
// (server/viewer/src/router.js) in node: every view's hash parses to its view and
// parameters, hashFor() gives it back, escapes survive the round trip, and anything else is
// "notfound".

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DEFAULT_HASH, hashFor, parseRoute } from '../../server/viewer/src/router.js';

test('every view parses and round-trips', () => {
    const cases = [
        ['#/runs', 'runs', {}],
        ['#/runs/game_20240501-120000_ab12', 'run', { run: 'game_20240501-120000_ab12' }],
        ['#/runs/r1/log', 'log', { run: 'r1' }],
        ['#/runs/r1/frames', 'frames', { run: 'r1' }],
        ['#/runs/r1/frames/1234', 'frame', { run: 'r1', frame: '1234' }],
        ['#/crashes', 'crashes', {}],
        [
            '#/crashes/0123456789abcdef0123456789abcdef',
            'crash',
            { crash: '0123456789abcdef0123456789abcdef' },
        ],
    ];
    for (const [hash, view, params] of cases) {
        const r = parseRoute(hash);
        assert.equal(r.view, view, hash);
        assert.deepEqual(r.params, params, hash);
        assert.equal(hashFor(view, params), hash);
    }
});

test('escapes, queries and defaults', () => {
    const h = hashFor('frame', { run: 'a b/<c>', frame: 7 }, { scope: 'x&y' });
    assert.equal(h, '#/runs/a%20b%2F%3Cc%3E/frames/7?scope=x%26y');
    const r = parseRoute(h);
    assert.equal(r.view, 'frame');
    assert.deepEqual(r.params, { run: 'a b/<c>', frame: '7' });
    assert.equal(r.query.get('scope'), 'x&y');
    assert.equal(parseRoute('').view, 'runs');
    assert.equal(parseRoute('#').view, 'runs');
    assert.equal(parseRoute('#/').view, 'runs');
    assert.equal(DEFAULT_HASH, '#/runs');
});

test('anything else is notfound', () => {
    for (const hash of [
        '#/nope',
        '#/runs/',
        '#/runs/a/frames/x',
        '#/runs/a/b/c',
        '#/crashes/a/b',
        '#/runs/%E0%A4%A/log',
        'runs',
    ]) {
        assert.equal(parseRoute(hash).view, 'notfound', hash);
    }
    assert.throws(() => hashFor('nope'), /no view/);
});
