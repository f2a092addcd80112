// tests/browser/test_hostile.mjs (ctest browser.hostile) - strings from clients are shown as
// text, never as markup. Through the real server: a crash package whose manifest names the
// program, run and signal with HTML that would run script, sent with such an X-NWB-Program,
// holding a file named like an <svg onload=...> tag, and a refused upload with the same
// header. The server makes names safe itself and keeps file names as they are; the page
// shows exactly what the API says. Then the same views fed answers (page.route) whose every
// string is hostile, as a later server or a read-API field might send (the crash list's both
// tabs included): all literal text. Hostile file contents: test_crashes.mjs.
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

const ctx = useServerAndBrowser([], async ({ server }) => {
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

    await page.goto(`${server.url}/#/runs`);
    const runs = await textOf(page, '#runs-crashed-table');
    assert.ok(runs.includes(crash.program) && runs.includes(crash.run), runs);
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

    await page.goto(`${server.url}/#/runs`);
    const runs = await textOf(page, '#runs-crashed-table');
    assert.ok(runs.includes(PROGRAM) && runs.includes(RUN) && runs.includes(SIGNAL), runs);
    await textWhen(page, '#runs-server', PROGRAM);
    await textWhen(page, '#server-status', PROGRAM);
    await screenshot(page, 'hostile-runs');
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
