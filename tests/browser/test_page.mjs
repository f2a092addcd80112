// tests/browser/test_page.mjs (ctest browser.page) - the viewer in Debian's chromium against
// the real nwb-logserver: the page and its assets carry the security headers; every view
// (#/runs, #/crashes, a crash, a run, its log, a frame, an unknown place) renders with no console
// error, no uncaught exception and no CSP violation (uPlot included); links, back and forward
// move between views; the event stream is read through fetch() with the token and resumes
// with Last-Event-ID. A screenshot of each view goes to the build folder.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
    newPage,
    requireChromium,
    screenshot,
    textOf,
    textWhen,
    uploadCrash,
    useServerAndBrowser,
} from './lib/harness.mjs';

requireChromium();

let crashId;
let runId;

const ctx = useServerAndBrowser([], async ({ server }) => {
    // A run with a log line, so the runs list, the run and its log have something to show.
    const posted = await fetch(`${server.url}/v1/log`, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain', 'X-NWB-Program': 'demo-game', 'X-NWB-Run': 'run-0001' },
        body: 'demo-game started\n',
    });
    assert.equal(posted.status, 200);
    runId = (await (await fetch(`${server.url}/v1/runs?program=demo-game`)).json()).runs[0].id;
    crashId = await uploadCrash(server, {
        manifest: {
            kind: 'signal',
            program: 'demo-game',
            run: 'run-0001',
            signal: 'SIGSEGV',
        },
        files: { 'crash.txt': 'SIGSEGV at 0x0\n#0 main\n' },
        headers: { 'X-NWB-Program': 'demo-game', 'X-NWB-Run': 'run-0001' },
    });
});

test('the page, its assets and the API answer with the security headers', async () => {
    const { server } = ctx;
    const types = {
        '/': 'text/html; charset=utf-8',
        '/assets/main.js': 'text/javascript; charset=utf-8',
        '/assets/uPlot.esm.js': 'text/javascript; charset=utf-8',
        '/assets/viewer.css': 'text/css; charset=utf-8',
        '/v1/health': 'application/json',
        '/assets/nope.js': 'text/plain; charset=utf-8',
    };
    for (const [p, type] of Object.entries(types)) {
        const res = await fetch(server.url + p);
        assert.equal(res.status, p === '/assets/nope.js' ? 404 : 200, p);
        assert.equal(res.headers.get('content-type'), type, p);
        assert.equal(res.headers.get('content-security-policy'), "default-src 'self'", p);
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff', p);
        assert.equal(res.headers.get('referrer-policy'), 'no-referrer', p);
        await res.arrayBuffer();
    }
    const page = await fetch(`${server.url}/`);
    assert.match(page.headers.get('etag'), /^"[0-9a-f]{16}"$/);
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    const html = await page.text();
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)/, 'no inline script');
    assert.doesNotMatch(html, /<style|\sstyle=/, 'no inline style');
});

test('every view renders with no console error and no CSP violation', async () => {
    const { server, browser } = ctx;
    const { page, seen, context } = await newPage(browser);
    const views = [
        ['runs', '#/runs', '#runs-table tbody tr'],
        ['crashes', '#/crashes', '#crash-table'],
        ['crash', `#/crashes/${crashId}`, '#crash-files'],
        ['run', `#/runs/${runId}`, 'main[data-view="run"][data-ready]'],
        ['log', `#/runs/${runId}/log`, 'main[data-view="log"][data-ready] #log-rows .log-row'],
        ['frames', `#/runs/${runId}/frames/3`, 'main[data-view="frame"][data-ready] #frames-waiting'],
        ['notfound', '#/no/such/place', 'main[data-view="notfound"] h1'],
    ];
    for (const [name, hash, selector] of views) {
        await page.goto(`${server.url}/${hash}`);
        await page.waitForSelector(selector, { timeout: 10000 });
        await screenshot(page, `view-${name}`);
    }
    await textWhen(page, '#server-status', /^nwb-logserver \d+\.\d+\.\d+/);
    await page.goto(`${server.url}/#/runs`);
    const row = await textOf(page, `#runs-table tr[data-run-id="${runId}"]`);
    assert.match(row, /demo-game/);
    assert.match(row, /run-0001/);
    await textWhen(page, `#runs-table tr[data-run-id="${runId}"] td[data-col="crashes"]`, '1');
    await page.goto(`${server.url}/#/crashes/${crashId}`);
    assert.equal(await textOf(page, '#crash-program'), 'demo-game');
    assert.match(await textOf(page, '#crash-files'), /crash\.txt/);
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});

test('links, back and forward move between views', async () => {
    const { server, browser } = ctx;
    const { page, seen, context } = await newPage(browser);
    const view = () => page.getAttribute('main', 'data-view');
    await page.goto(`${server.url}/`);
    await page.waitForSelector('#runs-table');
    assert.equal(new URL(page.url()).hash, '#/runs', 'an empty hash shows the runs');
    await page.click('header nav a[data-nav="crashes"]');
    await page.waitForSelector('#crash-table');
    assert.equal(new URL(page.url()).hash, '#/crashes');
    assert.equal(await page.getAttribute('header nav a[data-nav="crashes"]', 'aria-current'), 'page');
    await page.click('#crash-table tbody a');
    await page.waitForSelector('#crash-fields');
    assert.equal(new URL(page.url()).hash, `#/crashes/${crashId}`);
    await page.goBack();
    await page.waitForSelector('#crash-table');
    assert.equal(await view(), 'crashes');
    await page.goBack();
    await page.waitForSelector('#runs-table');
    assert.equal(await view(), 'runs');
    await page.goForward();
    await page.waitForSelector('#crash-table');
    assert.equal(await view(), 'crashes');
    // The filter narrows the list and says when nothing matches.
    await page.fill('#crash-filter', 'no-such-program');
    assert.equal(await textOf(page, '#crash-list'), 'No crash matches the filter.');
    await page.fill('#crash-filter', 'demo');
    await page.waitForSelector('#crash-table');
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});

test('the event stream is read through fetch with the token and resumes with Last-Event-ID', async () => {
    const { server, browser } = ctx;
    const { page, seen, context } = await newPage(browser);
    const token = 'page-token-0123456789abcdef';
    const asked = [];
    // Until the server has GET /v1/events, the stream comes from page.route: two answers that
    // end (as a dropped connection would), then a 404 that ends following.
    await page.route('**/v1/events', (route) => {
        const h = route.request().headers();
        if (h.authorization !== `Bearer ${token}`) {
            // The runs view's own stream (no token yet): an empty one it retries in 10 min.
            return route.fulfill({
                status: 200,
                contentType: 'text/event-stream',
                body: 'retry: 600000\nid: 1\n\n',
            });
        }
        asked.push({ auth: h.authorization || '', last: h['last-event-id'] || '', accept: h.accept || '' });
        const answers = [
            'retry: 10\n: keep-alive\nid: 5\nevent: run\ndata: {"n":1}\n\n',
            'id: 6\r\ndata: two\r\ndata: lines\r\n\r\n',
        ];
        if (asked.length <= answers.length) {
            return route.fulfill({
                status: 200,
                contentType: 'text/event-stream',
                body: answers[asked.length - 1],
            });
        }
        return route.fulfill({
            status: 404,
            contentType: 'text/plain; charset=utf-8',
            body: 'no such endpoint\n',
        });
    });
    await page.goto(`${server.url}/#/runs`);
    await page.waitForSelector('#runs-table');
    const got = await page.evaluate(async (t) => {
        sessionStorage.setItem('nwb.viewer.token', t);
        const { followEvents } = await import('/assets/api.js');
        return new Promise((resolve) => {
            const events = [];
            const states = [];
            followEvents('/v1/events', {
                onEvent: (e) => events.push(e),
                onState: (s, detail) => {
                    states.push(detail?.status ? `${s}:${detail.status}` : s);
                    if (s === 'closed') {
                        resolve({ events, states });
                    }
                },
            });
        });
    }, token);
    assert.deepEqual(got.events, [
        { type: 'run', data: '{"n":1}', lastEventId: '5' },
        { type: 'message', data: 'two\nlines', lastEventId: '6' },
    ]);
    assert.deepEqual(got.states, ['open', 'reconnecting', 'open', 'reconnecting', 'closed:404']);
    assert.deepEqual(
        asked.map((a) => a.last),
        ['', '5', '6'],
    );
    assert.ok(asked.every((a) => a.auth === `Bearer ${token}` && a.accept === 'text/event-stream'));
    assert.deepEqual(
        seen.errors.filter((e) => !/status of 404/.test(e)),
        [],
    );
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});
