// tests/browser/test_log.mjs (ctest browser.log) - the log view (#/runs/<id>/log) against the
// real server: it opens at the tail and a line written after the page opened (by nwb-log, and
// by a plain POST) is on screen within 1 s of the write's 200, auto-scrolled; away from the end
// new lines wait behind "Jump to end". Over a log of several MB: only bounded range reads (every
// request has ?limit= or ?tail=), a bounded number of DOM rows, ?offset= and a scrollbar drag to
// the middle show the right bytes (checked against log.txt on disk), the wheel moves by lines;
// the level filter and the search (in the lines held, and by range reads beyond them); a gap
// line and an undecoded name token are marked; a thread's name is in the thread column. No console error or CSP violation; screenshot.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { newPage, requireChromium, screenshot, useServerAndBrowser, waitFor } from './lib/harness.mjs';
import { DROPNOTE, logExe, nwbLog, postBatch, postText, requireExe, runIdOf } from './lib/clients.mjs';

requireChromium();
requireExe(logExe, 'nwb-log');

const BIG_RECORDS = 48000;
const MAX_ROWS = 80; // a screenful at 760 px is ~25 rows; the page must never hold many more
let bigId;

const ctx = useServerAndBrowser([], async ({ server }) => {
    // Several MB: INFO lines, every 10th WARNING, every 100th ERROR.
    const batch = [];
    for (let i = 0; i < BIG_RECORDS; i++) {
        const level = i % 100 === 99 ? 2 : i % 10 === 9 ? 1 : 0;
        batch.push({ level, msg: `seq=${String(i).padStart(6, '0')} ${'payload '.repeat(6)}end` });
        if (batch.length === 4000) {
            await postBatch(server, 'bigger', 'big1', batch.splice(0));
        }
    }
    bigId = await runIdOf(server, 'bigger', 'big1');
});

const logFile = (server, id) => readFileSync(path.join(server.dir, 'out', 'runs', id, 'log.txt'));

/** The start of the first line at or after byte @p off of @p buf (as the server answers). */
function lineStartAtOrAfter(buf, off) {
    if (off === 0 || buf[off - 1] === 10) {
        return off;
    }
    return buf.indexOf(10, off) + 1;
}

const lineAt = (buf, off) => buf.subarray(off, buf.indexOf(10, off)).toString('utf8');

const rowOffsets = (page) =>
    page.$$eval('#log-rows .log-row', (rows) => rows.map((r) => Number(r.dataset.offset)));

/**
 * Resolve (in the page) with Date.now() when a row holding @p text is in #log-rows; a time 10 s
 * late if it never comes (so the caller's bound fails rather than waits forever).
 */
function whenRowShows(page, text) {
    return page.evaluate(
        (t) =>
            new Promise((resolve) => {
                const rows = document.getElementById('log-rows');
                const look = () =>
                    [...rows.querySelectorAll('.log-row')].some((r) => r.textContent.includes(t));
                if (look()) {
                    resolve(Date.now());
                    return;
                }
                const mo = new MutationObserver(() => {
                    if (look()) {
                        mo.disconnect();
                        resolve(Date.now());
                    }
                });
                mo.observe(rows, { childList: true, subtree: true, characterData: true });
                setTimeout(() => resolve(Date.now() + 10000), 10000);
            }),
        text,
    );
}

function assertBoundedReads(urls) {
    const reads = urls.filter((u) => /\/v1\/runs\/[^/?]+\/log(\?|$)/.test(u));
    assert.ok(reads.length > 0, 'the log was read');
    for (const u of reads) {
        const q = new URL(u).searchParams;
        assert.ok(q.has('limit') || q.has('tail'), `a read without ?limit= or ?tail=: ${u}`);
        if (q.has('limit')) {
            assert.ok(Number(q.get('limit')) <= 4194304, u);
        }
    }
    return reads;
}

test('the tail shows a line written after the page opened within 1 s', async () => {
    const { server, browser } = ctx;
    // The run starts with lines without X-NWB-Seq; nwb-log's batch is then the run's first with
    // a seq (a later nwb-log of the same run would reuse the seqs: a duplicate, not written).
    await postText(server, 'tailer', 't1', 'first line\nsecond line\n');
    const id = await runIdOf(server, 'tailer', 't1');
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/runs/${id}/log`);
    await page.waitForSelector('main[data-view="log"][data-ready]');
    await page.waitForFunction(() => document.querySelector('main').dataset.logMode === 'tail');
    await page.waitForFunction(() => document.getElementById('log-live').textContent.startsWith('live'));
    assert.match(await page.textContent('#log-rows'), /second line/);

    // nwb-log exits 0 after the server's 200: measure from there to the row in the DOM.
    const marker = `tail-marker-${Date.now()}`;
    const shown = whenRowShows(page, marker);
    await nwbLog(server, { program: 'tailer', runId: 't1', message: marker });
    const wrote = Date.now();
    const at = await shown;
    assert.ok(at - wrote < 1000, `nwb-log line on screen ${at - wrote} ms after its 200`);
    const last = await page.$eval('#log-rows .log-row:last-child', (r) => r.textContent);
    assert.ok(last.includes(marker), 'auto-scrolled: the new line is the last row');
    // And a few plain POSTs, measured from the 200 each gets.
    for (let i = 0; i < 3; i++) {
        const direct = `posted-${i}-${Date.now()}`;
        const shownDirect = whenRowShows(page, direct);
        await postText(server, 'tailer', 't1', `${direct}\n`);
        const posted = Date.now();
        const on = await shownDirect;
        assert.ok(on - posted < 1000, `POST /v1/log line on screen ${on - posted} ms after its 200`);
    }

    // Away from the end, new lines wait behind "Jump to end" (End goes there).
    await postText(server, 'tailer', 't1', Array.from({ length: 80 }, (_, i) => `filler ${i}\n`).join(''));
    await page.waitForFunction(() => document.getElementById('log-rows').textContent.includes('filler 79'));
    await page.keyboard.press('Home');
    await page.waitForFunction(() => document.querySelector('main').dataset.logMode === 'at');
    await postText(server, 'tailer', 't1', Array.from({ length: 60 }, (_, i) => `later ${i}\n`).join(''));
    await page.waitForSelector('#log-jump-end.log-new-data');
    assert.doesNotMatch(await page.textContent('#log-rows'), /later 59/);
    await page.keyboard.press('End');
    await page.waitForFunction(() => document.getElementById('log-rows').textContent.includes('later 59'));
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    assertBoundedReads(seen.urls);
    await context.close();
});

test('a log of several MB: bounded range reads, bounded rows, the middle shows the right bytes', async () => {
    const { server, browser } = ctx;
    const file = logFile(server, bigId);
    assert.ok(file.length > 4 * 1024 * 1024, `log.txt is ${file.length} bytes`);
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/runs/${bigId}/log`);
    await page.waitForSelector('main[data-view="log"][data-ready]');
    let offsets = await rowOffsets(page);
    assert.ok(offsets.length > 5 && offsets.length <= MAX_ROWS, `${offsets.length} rows`);
    assert.equal(lineAt(file, offsets.at(-1)), file.subarray(offsets.at(-1), file.length - 1).toString());

    // A link into the middle: ?offset= shows the line starting at or after it.
    const mid = Math.floor(file.length / 2);
    await page.goto(`${server.url}/#/runs/${bigId}/log?offset=${mid}`);
    await page.waitForSelector('main[data-view="log"][data-ready]');
    const want = lineStartAtOrAfter(file, mid);
    offsets = await rowOffsets(page);
    assert.equal(offsets[0], want);
    const seqOf = (off) => /seq=[0-9]{6}/.exec(lineAt(file, off))[0];
    assert.ok((await page.textContent('#log-rows .log-row')).includes(seqOf(want)));
    for (let i = 1; i < offsets.length; i++) {
        assert.equal(offsets[i], file.indexOf(10, offsets[i - 1]) + 1, 'rows are consecutive lines');
    }

    // The wheel moves by lines: 200 px is 10 rows of 20 px.
    await page.hover('#log-rows');
    await page.mouse.wheel(0, 200);
    await page.waitForFunction(
        (o) => Number(document.querySelector('#log-rows .log-row').dataset.offset) !== o,
        offsets[0],
    );
    let at = offsets[0];
    for (let i = 0; i < 10; i++) {
        at = file.indexOf(10, at) + 1;
    }
    assert.equal((await rowOffsets(page))[0], at);

    // Dragging the scrollbar to a quarter jumps to about a quarter of the bytes.
    const before = (await rowOffsets(page))[0];
    await page.$eval('#log-scrollbar', (b) => {
        b.scrollTop = Math.round((b.scrollHeight - b.clientHeight) / 4);
    });
    await page.waitForFunction(
        (o) => Number(document.querySelector('#log-rows .log-row').dataset.offset) !== o,
        before,
    );
    const quarter = (await rowOffsets(page))[0];
    assert.ok(Math.abs(quarter - file.length / 4) < 4096, `quarter at ${quarter} of ${file.length}`);
    assert.equal(file[quarter - 1], 10, 'a line start');
    assert.ok((await page.textContent('#log-rows .log-row')).includes(seqOf(quarter)));
    await page.waitForFunction((o) => location.hash.includes(`offset=${o}`), quarter);

    // Paging through stays bounded.
    for (let i = 0; i < 40; i++) {
        await page.keyboard.press('PageDown');
    }
    await page.keyboard.press('End');
    await page.waitForFunction(() => document.querySelector('main').dataset.logMode === 'tail');
    const rows = await page.$$eval('#log-rows .log-row', (r) => r.length);
    assert.ok(rows <= MAX_ROWS, `${rows} rows`);
    const reads = assertBoundedReads(seen.urls);
    assert.ok(reads.length < 60, `${reads.length} reads`);
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});

test('the level filter and the search, within the lines held and beyond them', async () => {
    const { server, browser } = ctx;
    const file = logFile(server, bigId);
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/runs/${bigId}/log`);
    await page.waitForSelector('main[data-view="log"][data-ready]');
    const levels = () => page.$$eval('#log-rows .log-row', (r) => r.map((x) => x.dataset.level));

    // The 400 lines of the tail hold 4 ERROR lines: the view reads back until the rows are full.
    await page.selectOption('#log-level', 'ERROR');
    await page.waitForFunction(() => {
        const rows = [...document.querySelectorAll('#log-rows .log-row')];
        return rows.length > 10 && rows.every((r) => r.dataset.level === 'ERROR');
    });
    assert.ok((await levels()).every((l) => l === 'ERROR'));
    await page.selectOption('#log-level', 'WARNING');
    await page.waitForFunction(() =>
        [...document.querySelectorAll('#log-rows .log-row')].some((r) => r.dataset.level === 'WARNING'),
    );
    assert.ok((await levels()).every((l) => l === 'WARNING' || l === 'ERROR'));
    await page.waitForFunction(() => location.hash.includes('level=WARNING'));
    await page.selectOption('#log-level', '');

    // In the lines held: "/" focuses the search, Shift+Enter finds the previous match.
    const near = `seq=${String(BIG_RECORDS - 30).padStart(6, '0')}`;
    await page.keyboard.press('/');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'log-search');
    await page.keyboard.type(near);
    await page.keyboard.press('Shift+Enter');
    await page.waitForSelector('#log-rows .log-row.log-selected mark');
    assert.equal(await page.textContent('#log-rows .log-row.log-selected mark'), near);
    const nearOff = file.indexOf(near) - file.lastIndexOf(10, file.indexOf(near)) - 1;
    assert.ok(nearOff >= 0);
    assert.equal(
        Number(await page.getAttribute('#log-rows .log-row.log-selected', 'data-offset')),
        file.lastIndexOf(10, file.indexOf(near)) + 1,
    );
    assert.ok((await page.textContent('#log-detail')).includes(near));

    // Far before what is held: the previous match is found by range reads.
    const far = 'seq=000123';
    await page.fill('#log-search', far);
    await page.press('#log-search', 'Shift+Enter');
    await page.waitForFunction(
        (t) => document.querySelector('#log-rows .log-row.log-selected mark')?.textContent === t,
        far,
        { timeout: 15000 },
    );
    assert.equal(
        Number(await page.getAttribute('#log-rows .log-row.log-selected', 'data-offset')),
        file.lastIndexOf(10, file.indexOf(far)) + 1,
    );
    assert.match(await page.textContent('#log-search-status'), /Match at byte/);
    // The link to the selected line opens the log there.
    const link = await page.getAttribute('#log-line-link', 'href');
    await page.goto(`${server.url}/${link}`);
    await page.waitForSelector('main[data-view="log"][data-ready]');
    assert.ok((await page.textContent('#log-rows .log-row')).includes(far));
    assertBoundedReads(seen.urls);
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});

test('gap lines and undecoded name tokens are marked', async () => {
    const { server, browser } = ctx;
    await postBatch(server, 'marked', 'm1', [
        { level: 0, msg: 'loading level 3: 812 entities', threadName: 'render' },
        { level: 1, msg: 'frame 193 took 30.3 ms (budget 16.7 ms)' },
        { level: 1, flags: DROPNOTE, msg: 'nwb: dropped 17 records here (ring full)' },
        { level: 0, msg: 'arena #0123456789abcdef grew to 2031616 bytes' },
        { level: 2, msg: 'texture streaming fell behind: 41 requests waiting' },
        { level: 3, msg: 'out of GPU memory while creating the shadow atlas' },
        { level: 0, msg: 'frame 194 took 15.9 ms' },
    ]);
    const id = await runIdOf(server, 'marked', 'm1');
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/runs/${id}/log?q=frame`);
    await page.waitForSelector('main[data-view="log"][data-ready]');
    const drop = await page.textContent('#log-rows .log-row.log-drop');
    assert.match(drop, /nwb: dropped 17 records here \(ring full\)/);
    assert.equal(await page.$$eval('#log-rows .log-row.log-drop', (r) => r.length), 1);
    assert.equal(await page.textContent('#log-rows .log-token-unknown'), '#0123456789abcdef');
    assert.equal(await page.$$eval('#log-rows mark', (m) => m.length), 2, 'the ?q= search is highlighted');
    // The thread column shows the thread's name from log.txt's "4242[render]" (every line of
    // thread 4242: the server remembers the name for the run).
    assert.deepEqual(
        [...new Set(await page.$$eval('#log-rows .log-thread', (t) => t.map((x) => x.textContent)))],
        ['4242 render'],
    );
    assert.deepEqual(await page.$$eval('#log-rows .log-row', (r) => r.map((x) => x.dataset.level)), [
        'INFO',
        'WARNING',
        'WARNING',
        'INFO',
        'ERROR',
        'FATAL',
        'INFO',
    ]);
    await page.click('#log-rows .log-row.level-error');
    await page.waitForSelector('#log-detail:not([hidden])');
    await screenshot(page, 'viewer-log');
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    await context.close();
});
