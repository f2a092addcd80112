// tests/browser/test_follow.mjs (ctest browser.follow) - "follow newest" against the real
// server: #/runs?follow=<program> opens the newest run's log with follow on; a new run of the
// program (nwb-log, then nwb-demo) switches the page to its log within 2 s of that run's first
// record (from nwb-log's 200; for the demo, from the time its first line carries); "f" turns
// follow off (then a new run does not move the page); the run page follows too. No console
// error or CSP violation; a screenshot of a followed demo log.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { newPage, requireChromium, screenshot, useServerAndBrowser } from './lib/harness.mjs';
import { demoExe, logExe, nwbLog, postText, requireExe, runIdOf, startDemo } from './lib/clients.mjs';

requireChromium();
requireExe(logExe, 'nwb-log');

const ctx = useServerAndBrowser(['--run-live-s', '5']);

/**
 * Resolve (in the page) with Date.now() once a log row holding @p text is drawn, whatever view
 * comes meanwhile (a time 10 s late if it never is).
 */
function whenLineShows(page, text) {
    return page.evaluate(
        (t) =>
            new Promise((resolve) => {
                const look = () =>
                    [...document.querySelectorAll('#log-rows .log-row')].some((r) =>
                        r.textContent.includes(t),
                    );
                const mo = new MutationObserver(() => {
                    if (look()) {
                        mo.disconnect();
                        resolve(Date.now());
                    }
                });
                mo.observe(document.getElementById('view'), { childList: true, subtree: true });
                setTimeout(() => resolve(Date.now() + 10000), 10000);
            }),
        text,
    );
}

const streamOpen = (page) =>
    page.waitForFunction(() => document.getElementById('log-live')?.textContent.match(/^(live|ended)/));

test('following a program switches to its next run within 2 s of its first record', async () => {
    const { server, browser } = ctx;
    await nwbLog(server, { program: 'follower', runId: 'r1', message: 'run one' });
    const r1 = await runIdOf(server, 'follower', 'r1');
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/runs?follow=follower`);
    await page.waitForFunction((id) => location.hash === `#/runs/${id}/log?follow=1`, r1);
    await page.waitForSelector('main[data-view="log"][data-ready]');
    assert.equal(await page.isChecked('#follow-newest'), true);
    await streamOpen(page);

    const shows = whenLineShows(page, 'run two, first record');
    await nwbLog(server, { program: 'follower', runId: 'r2', message: 'run two, first record' });
    const wrote = Date.now();
    const r2 = await runIdOf(server, 'follower', 'r2');
    const shown = await shows;
    assert.ok(shown - wrote < 2000, `the next run's log on screen ${shown - wrote} ms after its first 200`);
    assert.equal(new URL(page.url()).hash, `#/runs/${r2}/log?follow=1`);
    assert.equal(await page.isChecked('#follow-newest'), true, 'still following');

    // "f" turns it off: a third run does not move the page. The third run's "run" event comes
    // before the log event of r2's next line, so once that line shows, the page has had it.
    await page.keyboard.press('f');
    assert.equal(await page.isChecked('#follow-newest'), false);
    await page.waitForFunction(() => !location.hash.includes('follow=1'));
    await nwbLog(server, { program: 'follower', runId: 'r3', message: 'run three' });
    await postText(server, 'follower', 'r2', 'r2 goes on\n');
    await page.waitForFunction(() => document.getElementById('log-rows').textContent.includes('r2 goes on'));
    assert.ok(page.url().includes(encodeURIComponent(r2)) || page.url().includes(r2), page.url());

    // The run page follows too.
    const r3 = await runIdOf(server, 'follower', 'r3');
    await page.goto(`${server.url}/#/runs/${r3}?follow=1`);
    await page.waitForSelector('main[data-view="run"][data-ready]');
    await page.waitForFunction(() => document.querySelector('main').dataset.stream === 'open');
    const r4Seen = page.waitForFunction(() =>
        /#\/runs\/follower_[0-9]{8}-[0-9]{6}_r4\?follow=1$/.test(location.hash),
    );
    await nwbLog(server, { program: 'follower', runId: 'r4', message: 'run four' });
    await r4Seen;
    await page.waitForSelector('main[data-view="run"][data-ready]');
    assert.equal(await page.textContent('#run-fields dd[data-field="run"]'), 'r4');
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});

test('following nwb-demo switches to its second run', async (t) => {
    if (!demoExe) {
        t.skip('nwb-demo is not built in this configuration');
        return;
    }
    const { server, browser } = ctx;
    const first = startDemo(server, ['--frames', '30', '--fast']);
    assert.equal((await first.done).code, 0);
    const d1 = await runIdOf(server, 'nwb-demo');
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/runs?program=nwb-demo`);
    await page.waitForSelector('main[data-view="runs"][data-ready]');
    await page.click('#runs-follow');
    await page.waitForFunction((id) => location.hash === `#/runs/${id}/log?follow=1`, d1);
    await page.waitForSelector('main[data-view="log"][data-ready]');
    await streamOpen(page);

    const second = startDemo(server, ['--frames', '240', '--hz', '60']);
    try {
        await page.waitForFunction(
            (id) => /^#\/runs\/nwb-demo_/.test(location.hash) && !location.hash.includes(id),
            d1,
            { timeout: 10000 },
        );
        const shownAt = await page.evaluate(() => Date.now());
        const hash = new URL(page.url()).hash;
        const d2 = decodeURIComponent(/^#\/runs\/([^/]+)\/log/.exec(hash)[1]);
        await page.waitForSelector('main[data-view="log"][data-ready]');
        // The demo's first line carries the wall-clock time it was logged (before its 200).
        const log = readFileSync(path.join(server.dir, 'out', 'runs', d2, 'log.txt'), 'utf8');
        const firstAt = Date.parse(`${log.slice(0, 23)}Z`);
        assert.ok(shownAt - firstAt < 2000, `switched ${shownAt - firstAt} ms after the first record`);
        await page.waitForFunction(() => document.querySelectorAll('#log-rows .log-row').length > 10, null, {
            timeout: 10000,
        });
        await screenshot(page, 'viewer-log-demo');
        assert.equal((await second.done).code, 0);
    } finally {
        second.kill();
    }
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});
