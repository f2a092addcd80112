// tests/browser/test_runs.mjs (ctest browser.runs) - the runs view (#/runs) and a run's page
// (#/runs/<id>) against the real server (--run-live-s 2) and a real nwb-demo run: the list,
// opened before the run exists, shows the run while it plays (live badge, duration ticking,
// records and log size growing from /v1/events, telemetry linking to its frames) and marks it
// ended after; a crash package naming the run shows in its crash count (linking to the crash
// list) and on its page; the program filter keeps its URL; the run's page has its fields,
// counters and links. No console error, page error or CSP violation; screenshots of both.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
    newPage,
    requireChromium,
    screenshot,
    uploadCrash,
    useServerAndBrowser,
    waitFor,
} from './lib/harness.mjs';
import { demoExe, nwbLog, requireExe, runIdOf, startDemo } from './lib/clients.mjs';

requireChromium();
requireExe(demoExe, 'nwb-demo');

const ctx = useServerAndBrowser(['--run-live-s', '2']);

const cell = (page, id, col) => page.textContent(`#runs-table tr[data-run-id="${id}"] td[data-col="${col}"]`);

test('a demo run shows live while it plays and ended after', async () => {
    const { server, browser } = ctx;
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/runs`);
    await page.waitForSelector('main[data-view="runs"][data-ready]');
    assert.equal((await page.textContent('#runs-empty')).trim(), 'No run has reached this server yet.');
    await page.waitForFunction(() => document.querySelector('main')?.dataset.stream === 'open');

    const demo = startDemo(server, ['--frames', '360', '--hz', '60']);
    try {
        // The row comes from the run's "run" event; it is live while the demo sends.
        const row = await page.waitForSelector('#runs-table tr[data-program="nwb-demo"][data-live="true"]', {
            timeout: 10000,
        });
        const id = await row.getAttribute('data-run-id');
        assert.match(id, /^nwb-demo_[0-9]{8}-[0-9]{6}_/);
        assert.equal((await cell(page, id, 'state')).trim(), 'live');
        // Records and the log size grow from the run's "log" events, without reloading.
        const first = Number((await cell(page, id, 'records')).replace(/,/g, '')) || 0;
        await waitFor(
            'the records cell to grow while the demo runs',
            async () => Number((await cell(page, id, 'records')).replace(/,/g, '')) > first,
        );
        const d1 = await cell(page, id, 'duration');
        await waitFor('the duration to tick', async () => (await cell(page, id, 'duration')) !== d1, 4000);
        await screenshot(page, 'viewer-runs-live');
        const r = await demo.done;
        assert.equal(r.code, 0, r.stderr);

        // Nothing is sent any more: after --run-live-s (2 s) the list says ended, by itself.
        await page.waitForSelector(`#runs-table tr[data-run-id="${id}"][data-live="false"]`, {
            timeout: 10000,
        });
        assert.equal((await cell(page, id, 'state')).trim(), 'ended');
        const api = await (await fetch(`${server.url}/v1/runs/${id}`)).json();
        assert.equal(api.live, false);
        await waitFor(
            'the row to show the final counts',
            async () => Number((await cell(page, id, 'records')).replace(/,/g, '')) === api.counters.records,
        );
        assert.equal(Number((await cell(page, id, 'gaps')).replace(/,/g, '')), api.counters.drops);
        assert.equal((await cell(page, id, 'telemetry')).trim(), api.telemetry ? 'yes' : 'no');
        if (api.telemetry) {
            assert.equal(
                await page.getAttribute(
                    `#runs-table tr[data-run-id="${id}"] td[data-col="telemetry"] a`,
                    'href',
                ),
                `#/runs/${id}/frames`,
            );
        }
        assert.equal(
            await page.getAttribute(`#runs-table tr[data-run-id="${id}"] td[data-col="log"] a`, 'href'),
            `#/runs/${id}/log`,
        );

        // A crash package naming the run: its count grows from the run's "crash" event.
        await uploadCrash(server, {
            manifest: { kind: 'signal', program: 'nwb-demo', run: api.run, signal: 'SIGSEGV' },
            files: { 'crash.txt': 'SIGSEGV\n' },
        });
        await waitFor('the crash count', async () => (await cell(page, id, 'crashes')).trim() === '1');
        assert.equal(
            await page.getAttribute(`#runs-table tr[data-run-id="${id}"] td[data-col="crashes"] a`, 'href'),
            `#/crashes?q=${api.run}`,
        );
    } finally {
        demo.kill();
    }
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});

test('newest first, the program filter, and a run page with its counters', async () => {
    const { server, browser } = ctx;
    await nwbLog(server, { program: 'other-tool', runId: 'o1', message: 'hello from another program' });
    const otherId = await runIdOf(server, 'other-tool', 'o1');
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/runs`);
    await page.waitForSelector(`#runs-table tr[data-run-id="${otherId}"]`);
    const ids = await page.$$eval('#runs-table tbody tr', (rows) => rows.map((r) => r.dataset.runId));
    const { runs } = await (await fetch(`${server.url}/v1/runs`)).json();
    assert.deepEqual(
        ids,
        runs.map((r) => r.id),
        'the server order: newest first',
    );
    await page.waitForSelector(`#runs-table tr[data-run-id="${otherId}"] td[data-col="gaps"] span`);
    await screenshot(page, 'viewer-runs');

    await page.selectOption('#runs-program', 'nwb-demo');
    await page.waitForFunction(() => location.hash === '#/runs?program=nwb-demo');
    await page.waitForSelector('main[data-view="runs"][data-ready]');
    const shown = await page.$$eval('#runs-table tbody tr', (rows) => rows.map((r) => r.dataset.program));
    assert.ok(shown.length >= 1 && shown.every((p) => p === 'nwb-demo'), shown.join());
    assert.equal(await page.getAttribute('#runs-follow', 'href'), '#/runs?follow=nwb-demo');

    const demoId = runs.find((r) => r.program === 'nwb-demo').id;
    await page.click(`#runs-table tr[data-run-id="${demoId}"] td[data-col="id"] a`);
    await page.waitForSelector('main[data-view="run"][data-ready]');
    const api = await (await fetch(`${server.url}/v1/runs/${demoId}`)).json();
    const field = (name) => page.textContent(`#run-fields dd[data-field="${name}"]`);
    assert.equal(await field('program'), 'nwb-demo');
    assert.equal(await field('run'), api.run);
    assert.equal((await field('state')).trim(), 'ended');
    assert.equal(Number((await field('records')).replace(/,/g, '')), api.counters.records);
    assert.equal(Number((await field('drops')).replace(/,/g, '')), api.counters.drops);
    assert.equal(Number((await field('tokensUnknown')).replace(/,/g, '')), api.counters.tokensUnknown);
    const links = await page.$$eval('#run-links a', (as) => as.map((a) => a.getAttribute('href')));
    assert.ok(links.includes(`#/runs/${demoId}/log`), links.join());
    if (api.telemetry) {
        assert.ok(links.includes(`#/runs/${demoId}/frames`), links.join());
    }
    assert.ok((await page.textContent('#run-tail')).length > 0);
    await page.waitForSelector('#run-crashes-table');
    assert.match(await page.textContent('#run-crashes-table'), /SIGSEGV/);
    await screenshot(page, 'viewer-run');
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});
