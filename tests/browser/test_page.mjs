// tests/browser/test_page.mjs (ctest browser.page) - the viewer in Debian's chromium against
// the real nwb-logserver: the page and its assets carry the security headers; every view
// (#/runs, #/crashes, a crash, a run's log, a frame, an unknown place) renders with no console
// error, no uncaught exception and no CSP violation (uPlot included); links, back and forward
// move between views. A screenshot of each view goes to the build folder.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import {
    launchBrowser,
    newPage,
    requireChromium,
    screenshot,
    startServer,
    textOf,
    textWhen,
    uploadCrash,
} from './lib/harness.mjs';

requireChromium();

let server;
let browser;
let crashId;

before(async () => {
    server = await startServer();
    browser = await launchBrowser();
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

after(async () => {
    await browser?.close();
    await server?.stop();
});

test('the page, its assets and the API answer with the security headers', async () => {
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
    const { page, seen, context } = await newPage(browser);
    const views = [
        ['runs', '#/runs', '#runs-crashed-table'],
        ['crashes', '#/crashes', '#crash-table'],
        ['crash', `#/crashes/${crashId}`, '#crash-files'],
        ['log', '#/runs/run-0001/log', 'main[data-view="log"] .waiting'],
        ['frames', '#/runs/run-0001/frames/3', '#frames-chart .uplot'],
        ['notfound', '#/no/such/place', 'main[data-view="notfound"] h1'],
    ];
    for (const [name, hash, selector] of views) {
        await page.goto(`${server.url}/${hash}`);
        await page.waitForSelector(selector, { timeout: 10000 });
        await screenshot(page, `view-${name}`);
    }
    await textWhen(page, '#server-status', /^nwb-logserver \d+\.\d+\.\d+/);
    await page.goto(`${server.url}/#/runs`);
    const row = await textOf(page, '#runs-crashed-table tbody tr');
    assert.match(row, /demo-game/);
    assert.match(row, /run-0001/);
    assert.match(row, /SIGSEGV/);
    await page.goto(`${server.url}/#/crashes/${crashId}`);
    assert.equal(await textOf(page, '#crash-program'), 'demo-game');
    assert.match(await textOf(page, '#crash-files'), /crash\.txt/);
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});

test('links, back and forward move between views', async () => {
    const { page, seen, context } = await newPage(browser);
    const view = () => page.getAttribute('main', 'data-view');
    await page.goto(`${server.url}/`);
    await page.waitForSelector('#runs-crashed-table');
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
    await page.waitForSelector('#runs-crashed-table');
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
