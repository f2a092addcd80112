// tests/browser/test_hostile.mjs (ctest browser.hostile) - strings from clients are shown as
// text, never as markup. Through the real server: a crash package whose manifest names the
// program, run and signal with HTML that would run script, sent with such an X-NWB-Program,
// holding a file named like an <svg onload=...> tag, and a refused upload with the same
// header. The server makes names safe itself and keeps file names as they are; the page
// shows exactly what the API says; log lines holding such markup, in the runs list, the run's
// page and its log. Then the same views fed answers (page.route) whose every string is
// hostile (a run id, program, times, log lines; the crash list's both tabs), as a later server
// or a read-API field might send: all literal text. Hostile file contents: test_crashes.mjs.
// Nothing runs, no element comes of them, nothing is fetched, no CSP violation.

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

const PROGRAM = '<img src=x onerror="window.__nwbPwned=1">';
const RUN = '<script>window.__nwbPwned=2</script>';
const SIGNAL = '<b onmouseover="window.__nwbPwned=3">SIGSEGV</b>';
const FILE = '<svg onload=window.__nwbPwned=4>.txt';
const REASON = '<iframe src="javascript:window.__nwbPwned=5"></iframe>';

let crashId;
let invalidId;
let runId;

// Log lines that would be markup, sent with such program and run headers (the server makes the
// names safe for its run id; the lines are kept as they are, control bytes escaped).
const LINES = [PROGRAM, RUN, SIGNAL, FILE, REASON, '<a href="javascript:window.__nwbPwned=6">x</a>'];

const ctx = useServerAndBrowser([], async ({ server }) => {
    const posted = await fetch(`${server.url}/v1/log`, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain', 'X-NWB-Program': PROGRAM, 'X-NWB-Run': RUN },
        body: `${LINES.join('\n')}\n`,
    });
    assert.equal(posted.status, 200);
    runId = (await (await fetch(`${server.url}/v1/runs`)).json()).runs[0].id;
    crashId = await uploadCrash(server, {
        manifest: { kind: 'signal', program: PROGRAM, run: RUN, signal: SIGNAL },
        files: { 'crash.txt': 'SIGSEGV\n', [FILE]: 'x' },
        headers: { 'X-NWB-Program': PROGRAM, 'X-NWB-Run': 'hostile' },
    });
    invalidId = await uploadCrash(server, {
        raw: Buffer.from(`not an archive ${PROGRAM}`),
        headers: { 'X-NWB-Program': PROGRAM, 'X-NWB-Run': RUN },
        status: 'invalid',
    });
});

async function assertNothingRan(page, seen) {
    assert.equal(await page.evaluate(() => window.__nwbPwned), undefined);
    const made =
        'main img, main script, main svg, main b, main iframe, main [onerror], main [onload], main [onmouseover]';
    assert.equal(await page.$$eval(made, (n) => n.length), 0);
    assert.equal(await page.$$eval('script', (n) => n.length), 1, "only the page's own module script");
    assert.equal(await page.$$eval('iframe, img', (n) => n.length), 0);
    assert.ok(!seen.urls.some((u) => /\/x$/.test(u)), 'the <img src=x> was never fetched');
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
}

test('what the real server says about hostile uploads shows as text', async () => {
    const { server, browser } = ctx;
    const { page, seen, context } = await newPage(browser);
    const crash = await (await fetch(`${server.url}/v1/crashes/${crashId}`)).json();
    const invalid = await (await fetch(`${server.url}/v1/crashes/${invalidId}`)).json();
    assert.ok(
        crash.files.some((f) => f.path === FILE),
        'the server keeps the file name as it is',
    );

    const run = await (await fetch(`${server.url}/v1/runs/${runId}`)).json();
    await page.goto(`${server.url}/#/runs`);
    const runs = await textOf(page, `#runs-table tr[data-run-id="${runId}"]`);
    assert.ok(runs.includes(run.program) && runs.includes(run.run), runs);
    await page.goto(`${server.url}/#/runs/${runId}`);
    await page.waitForSelector('main[data-view="run"][data-ready]');
    assert.equal(await textOf(page, '#run-fields dd[data-field="program"]'), run.program);
    assert.ok((await textOf(page, '#run-tail')).includes(PROGRAM));
    await page.goto(`${server.url}/#/runs/${runId}/log?q=${encodeURIComponent('<')}`);
    await page.waitForSelector('main[data-view="log"][data-ready] #log-rows .log-row');
    const msgs = await page.$$eval('#log-rows .log-msg', (m) => m.map((x) => x.textContent));
    assert.deepEqual(msgs, LINES, 'every hostile line is its literal text');
    await page.click('#log-rows .log-row');
    assert.ok((await textOf(page, '#log-detail')).includes(PROGRAM));
    await screenshot(page, 'hostile-log');
    await page.goto(`${server.url}/#/crashes`);
    const list = await textOf(page, '#crash-table');
    assert.ok(list.includes(crash.program) && list.includes(crash.signal), list);
    await page.goto(`${server.url}/#/crashes/${crashId}`);
    assert.equal(await textOf(page, '#crash-program'), crash.program);
    assert.ok((await textOf(page, '#crash-files')).includes(FILE));
    await screenshot(page, 'hostile-crash');
    await page.goto(`${server.url}/#/crashes/${invalidId}`);
    assert.equal(await textOf(page, '#crash-reason'), invalid.reason);
    await page.hover('#crash-fields');
    await assertNothingRan(page, seen);
    await context.close();
});

test('hostile strings in every field the views show are text', async () => {
    const { server, browser } = ctx;
    const { page, seen, context } = await newPage(browser);
    const id = '0123456789abcdef0123456789abcdef';
    const hostileCrash = {
        id,
        received: PROGRAM,
        program: PROGRAM,
        run: RUN,
        signal: SIGNAL,
        status: 'invalid',
        sizes: { archive: 1, extracted: null },
        reason: REASON,
        files: [{ path: FILE, bytes: 1 }],
    };
    const answer = (body) => ({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify(body),
    });
    await page.route('**/v1/health', (r) =>
        r.fulfill(answer({ status: RUN, version: PROGRAM, uptime_s: 1 })),
    );
    // One more in the packages tab, with a hostile status too (the invalid one is in its tab).
    const listed = { ...hostileCrash, id: 'fedcba9876543210fedcba9876543210', status: PROGRAM };
    await page.route('**/v1/crashes', (r) => r.fulfill(answer({ crashes: [hostileCrash, listed] })));
    await page.route(`**/v1/crashes/${id}`, (r) => r.fulfill(answer(hostileCrash)));
    // A run whose every string is hostile, its id included (the page escapes it in URLs).
    const hostileRun = {
        id: RUN,
        program: PROGRAM,
        run: SIGNAL,
        started: REASON,
        lastActivity: FILE,
        live: false,
        logBytes: 1,
        records: 2,
        telemetry: true,
        crashes: 1,
        counters: { records: 2, drops: 1, tokensDecoded: 0, tokensUnknown: 0, telemetryUploads: 1 },
        listed: true,
    };
    const logText = `${LINES.map((l) => `2026-12-01T07:34:00.123456789Z INFO    1 hostile-program ${l}`).join('\n')}\n`;
    await page.route(/\/v1\/runs(\?.*)?$/, (r) => r.fulfill(answer({ runs: [hostileRun] })));
    await page.route(/\/v1\/runs\/[^/?]+(\?.*)?$/, (r) => r.fulfill(answer(hostileRun)));
    await page.route(/\/v1\/runs\/[^/?]+\/log\?/, (r) =>
        r.fulfill({
            status: 200,
            contentType: 'text/plain; charset=utf-8',
            headers: {
                'X-NWB-Log-Size': String(Buffer.byteLength(logText)),
                'X-NWB-Log-Offset': '0',
            },
            body: logText,
        }),
    );
    await page.route('**/v1/events', (r) =>
        r.fulfill({
            status: 200,
            contentType: 'text/event-stream',
            body: `retry: 600000\nid: 1\nevent: run\ndata: ${JSON.stringify({ id: RUN, program: PROGRAM, run: SIGNAL, change: 'active' })}\n\n`,
        }),
    );

    await page.goto(`${server.url}/#/runs`);
    const runs = await textOf(page, '#runs-table tbody tr');
    assert.ok(runs.includes(PROGRAM) && runs.includes(SIGNAL) && runs.includes(REASON), runs);
    await textWhen(page, '#server-status', PROGRAM);
    await screenshot(page, 'hostile-runs');
    await page.click('#runs-table tbody td[data-col="id"] a');
    await page.waitForSelector('main[data-view="run"][data-ready]');
    assert.equal(new URL(page.url()).hash, `#/runs/${encodeURIComponent(RUN)}`);
    assert.equal(await textOf(page, '#run-fields dd[data-field="program"]'), PROGRAM);
    assert.ok((await textOf(page, '#run-tail')).includes(REASON));
    await page.click('#run-links a');
    await page.waitForSelector('main[data-view="log"][data-ready] #log-rows .log-row');
    const msgs = await page.$$eval('#log-rows .log-msg', (m) => m.map((x) => x.textContent));
    assert.deepEqual(msgs, LINES);
    await page.hover('#log-rows');
    await page.goto(`${server.url}/#/crashes`);
    const list = await textOf(page, '#crash-table');
    assert.ok(list.includes(PROGRAM) && list.includes(RUN) && list.includes(SIGNAL), list);
    await screenshot(page, 'hostile-crashes');
    await page.goto(`${server.url}/#/crashes?tab=invalid`);
    const refused = await textWhen(page, '#crash-invalid-table', REASON);
    assert.ok(refused.includes(PROGRAM) && refused.includes(RUN), refused);
    await page.goto(`${server.url}/#/crashes/${id}`);
    assert.equal(await textOf(page, '#crash-program'), PROGRAM);
    assert.equal(await textOf(page, '#crash-reason'), REASON);
    assert.ok((await textOf(page, '#crash-fields')).includes(SIGNAL));
    assert.ok((await textOf(page, '#crash-files')).includes(FILE));
    await page.hover('#crash-fields');
    await assertNothingRan(page, seen);
    await context.close();
});
