// tests/browser/test_token.mjs (ctest browser.token) - a server started with --token-file:
// the page itself loads without the token, its data does not; the page asks for the token,
// refuses a malformed one before sending it, shows the server's refusal of a wrong one and
// asks again, works with the right one, keeps it for the tab (a reload does not ask again, a
// new tab does), and the token never appears in a URL, the page's HTML, the console or the
// server's output.

import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';

import {
    newPage,
    requireChromium,
    screenshot,
    textWhen,
    waitFor,
    useServerAndBrowser,
} from './lib/harness.mjs';

requireChromium();

const TOKEN = 'browser-token-0123456789-ABCDEF';
const WRONG = 'browser-token-0123456789-abcdeX';

const tokenDir = mkdtempSync(path.join(process.env.TMPDIR || tmpdir(), 'nwb-token-'));
const tokenFile = path.join(tokenDir, 'token');
writeFileSync(tokenFile, `${TOKEN}\n`);
chmodSync(tokenFile, 0o600);

const ctx = useServerAndBrowser(['--token-file', tokenFile]);
after(() => rmSync(tokenDir, { recursive: true, force: true }));

test('the page loads without the token, its data needs it', async () => {
    const { server } = ctx;
    for (const p of ['/', '/assets/main.js', '/assets/uPlot.esm.js']) {
        const res = await fetch(server.url + p);
        assert.equal(res.status, 200, p);
        assert.ok(!(await res.text()).includes(TOKEN), p);
    }
    for (const p of ['/v1/health', '/v1/crashes', '/metrics']) {
        const res = await fetch(server.url + p);
        assert.equal(res.status, 401, p);
        assert.match(res.headers.get('www-authenticate'), /^Bearer /);
        await res.text();
        const ok = await fetch(server.url + p, {
            headers: { Authorization: `Bearer ${TOKEN}` },
        });
        assert.equal(ok.status, 200, p);
        await ok.text();
    }
});

test('the page asks for the token, refuses a wrong one and works with the right one', async () => {
    const { server, browser } = ctx;
    const { page, seen, context } = await newPage(browser);
    const consoleText = [];
    const authHeaders = [];
    page.on('console', (m) => consoleText.push(m.text()));
    page.on('request', (r) => authHeaders.push(r.headers().authorization || ''));

    await page.goto(`${server.url}/#/runs`);
    await page.waitForSelector('#token-dialog[open]', { timeout: 10000 });
    assert.equal(await page.textContent('#token-message'), '');
    await screenshot(page, 'token-prompt');

    // Malformed: refused by the page, never sent.
    const sentBefore = authHeaders.filter((h) => h !== '').length;
    await page.fill('#token-input', 'short token');
    await page.click('#token-submit');
    await waitFor('the shape message', async () =>
        /16 to 255/.test(await page.textContent('#token-message')),
    );
    assert.equal(authHeaders.filter((h) => h !== '').length, sentBefore);

    // Wrong: the server's 401, shown, and asked again.
    await page.fill('#token-input', WRONG);
    await page.click('#token-submit');
    await waitFor('the refusal', async () =>
        /refused that token \(wrong bearer token\)/.test(await page.textContent('#token-message')),
    );
    assert.ok(await page.isVisible('#token-dialog[open]'));
    assert.ok(authHeaders.includes(`Bearer ${WRONG}`), 'the wrong token was tried');
    assert.equal(await page.inputValue('#token-input'), '', 'the field is cleared');
    await screenshot(page, 'token-refused');

    // Right: the dialog closes and the data shows.
    await page.fill('#token-input', TOKEN);
    await page.click('#token-submit');
    await textWhen(page, '#runs-status', /^0 runs, 0 live$/);
    await waitFor('the dialog to close', async () => !(await page.isVisible('#token-dialog[open]')));
    await textWhen(page, '#server-status', /^nwb-logserver/);
    assert.ok(authHeaders.includes(`Bearer ${TOKEN}`));
    await page.goto(`${server.url}/#/crashes`);
    await textWhen(page, '#crash-list', 'No crash has reached this server.');
    await screenshot(page, 'token-accepted');

    // Kept for the tab only: a reload does not ask, a new tab does.
    assert.equal(await page.evaluate(() => sessionStorage.getItem('nwb.viewer.token')), TOKEN);
    await page.reload();
    await textWhen(page, '#crash-list', 'No crash has reached this server.');
    assert.equal(await page.$('#token-dialog[open]'), null);
    const tab = await context.newPage();
    await tab.goto(`${server.url}/#/runs`);
    await tab.waitForSelector('#token-dialog[open]', { timeout: 10000 });
    await tab.close();

    // Never in a URL, the page's HTML, the console or the server's output.
    for (const u of [page.url(), ...seen.urls]) {
        assert.ok(!u.includes(TOKEN) && !u.includes(WRONG), u);
    }
    const html = await page.content();
    assert.ok(!html.includes(TOKEN) && !html.includes(WRONG));
    assert.ok(!consoleText.some((t) => t.includes(TOKEN) || t.includes(WRONG)));
    assert.ok(!server.stderr().includes(TOKEN));

    // The only console errors are the browser's own notes of the expected 401s.
    assert.deepEqual(
        seen.errors.filter((e) => !/status of 401/.test(e)),
        [],
    );
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});
