// tests/browser/test_crashes.mjs (ctest browser.crashes) - the crash views in Debian's chromium
// against the real nwb-logserver: a real `nwb-demo --crash segv` (its crash handler and the
// nwb-crash uploader it starts) appears live in the open crash list, and its page shows
// SIGSEGV with the faulting address, the backtrace one frame a line, the log tail, app.txt,
// a link to the run's log at the crash time and the raw archive (downloaded, byte for byte);
// an invalid upload is in the invalid tab with the server's reason; the filters narrow the
// list and live in the URL; a package whose file contents are hostile markup shows them as
// text, and a binary file is offered for download, not shown. No console error, uncaught
// exception or CSP violation anywhere; screenshots into the build folder.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';

import {
    newPage,
    readyAfter,
    requireChromium,
    screenshot,
    textOf,
    textWhen,
    uploadCrash,
    useServerAndBrowser,
    waitFor,
} from './lib/harness.mjs';

requireChromium();

const demoExe = process.env.NWB_TEST_DEMO_EXE;
if (!demoExe) {
    console.error('test_crashes: NWB_TEST_DEMO_EXE is not set (run the test through ctest)');
    process.exit(2);
}

const work = mkdtempSync(path.join(process.env.TMPDIR || tmpdir(), 'nwb-crashes-'));
after(() => rmSync(work, { recursive: true, force: true }));

const ctx = useServerAndBrowser();

/** Run nwb-demo against @p server with @p args; resolves to {code, signal} when it ends. */
function runDemo(server, args) {
    const child = spawn(demoExe, [`--logserver=127.0.0.1:${server.port}`, ...args], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: {
            ...process.env,
            NWB_CRASH_DIR: path.join(work, 'crashes'),
            NWB_LOG_DIR: path.join(work, 'logs'),
        },
    });
    let err = '';
    child.stderr.on('data', (d) => {
        err += d;
    });
    return new Promise((resolve) =>
        child.once('exit', (code, signal) => resolve({ code, signal, stderr: err })),
    );
}

async function assertClean(page, seen) {
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
    assert.equal(await page.evaluate(() => window.__nwbPwned), undefined);
}

const json = async (server, p) => {
    const res = await fetch(server.url + p);
    assert.equal(res.status, 200, p);
    return res.json();
};

let segvId;

test('a real --crash segv package appears live and its page shows the signal and backtrace', async () => {
    const { server, browser } = ctx;
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/crashes`);
    await page.waitForSelector('#view[data-ready]');
    await textWhen(page, '#crash-live', 'live');
    assert.equal(await textOf(page, '#crash-list'), 'No crash has reached this server.');

    // The demo dies of SIGSEGV in frame 40; its handler writes the package, nwb-crash uploads it.
    const end = await runDemo(server, [
        '--frames',
        '400',
        '--fast',
        '--crash',
        'segv',
        '--crash-frame',
        '40',
    ]);
    assert.equal(end.signal, 'SIGSEGV', `nwb-demo ended with ${end.code ?? end.signal}: ${end.stderr}`);
    const row = await page.waitForSelector('#crash-table tbody tr[data-crash-id]', { timeout: 20000 });
    segvId = await row.getAttribute('data-crash-id');
    await waitFor('the row to say extracted', async () =>
        /extracted/.test(await page.textContent(`#crash-table tr[data-crash-id="${segvId}"]`)),
    );
    const crash = await json(server, `/v1/crashes/${segvId}`);
    assert.equal(crash.signal, 'SIGSEGV');
    assert.equal(crash.program, 'nwb-demo');
    const listed = await page.textContent(`#crash-table tr[data-crash-id="${segvId}"]`);
    assert.ok(
        listed.includes('SIGSEGV') && listed.includes('nwb-demo') && listed.includes(crash.run),
        listed,
    );
    // The run column links to the run the crash came from.
    const { runs } = await json(server, '/v1/runs');
    const run = runs.find((r) => r.program === 'nwb-demo' && r.run === crash.run);
    assert.ok(run, 'the demo run is listed');
    await waitFor('the run link', () => page.$(`#crash-table tr[data-crash-id="${segvId}"] a.crash-run`));
    assert.equal(
        await page.getAttribute(`#crash-table tr[data-crash-id="${segvId}"] a.crash-run`, 'href'),
        `#/runs/${encodeURIComponent(run.id)}`,
    );

    await readyAfter(page, () => page.click(`#crash-table tr[data-crash-id="${segvId}"] a`));
    assert.equal(new URL(page.url()).hash, `#/crashes/${segvId}`);
    assert.match(await textOf(page, '#crash-signal'), /^SIGSEGV \(SEGV_MAPERR\) at address 0x0+ in thread /);
    assert.match(await textOf(page, '#crash-address'), /^0x[0-9a-f]+$/);
    const frames = await page.$$eval('#crash-frames li', (lis) => lis.map((li) => li.textContent));
    assert.ok(frames.length >= 3, `frames: ${frames.join(' | ')}`);
    frames.forEach((f, i) => assert.match(f, new RegExp(`^#${i} 0x[0-9a-f]+ \\S+\\+0x[0-9a-f]+$`), f));
    assert.match(frames[0], /\/nwb-demo\+0x/, 'frame 0 is in the demo');
    // One frame a line, in monospace.
    const style = await page.$eval('#crash-frames li', (li) => {
        const s = getComputedStyle(li);
        return { white: s.whiteSpace, font: s.fontFamily, display: s.display };
    });
    assert.equal(style.white, 'pre');
    assert.match(style.font, /mono/i);
    assert.equal(style.display, 'list-item');
    assert.match(await textOf(page, '#crash-log-tail'), /crashing on purpose: segv in frame 40/);
    assert.match(await textOf(page, '#crash-app'), /nwb-demo frame=40/);
    assert.ok((await textOf(page, '#crash-files')).includes('maps.txt'));
    await screenshot(page, 'crash');

    // The log link: at the line of the crash time, or the tail when the run ended there.
    const link = await page.waitForSelector('#crash-log-link[data-offset]');
    const offset = Number(await link.getAttribute('data-offset'));
    const href = await link.getAttribute('href');
    const logOf = `#/runs/${encodeURIComponent(run.id)}/log`;
    assert.ok(href === logOf || href === `${logOf}?offset=${offset}`, href);
    const manifest = await (await fetch(`${server.url}/v1/crashes/${segvId}/files/manifest.txt`)).text();
    const crashNs = BigInt(/^crash_time_ns=([0-9]+)$/m.exec(manifest)[1]);
    const lineAt = await (
        await fetch(`${server.url}/v1/runs/${run.id}/log?offset=${offset}&limit=4096`)
    ).text();
    const secs = BigInt(Date.parse(`${lineAt.slice(0, 19)}Z`) / 1000);
    const lineTime = secs * 1000000000n + BigInt(lineAt.slice(20, 29));
    assert.ok(lineTime <= crashNs, `the line at ${offset} (${lineAt.slice(0, 30)}) is not after the crash`);
    assert.match(lineAt.split('\n')[0], /crashing on purpose|frame 40|worker/, lineAt.split('\n')[0]);

    // The raw archive, downloaded through the page, is the upload: its SHA-256 starts with the id.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#crash-archive')]);
    const file = path.join(work, 'archive.bin');
    await download.saveAs(file);
    assert.equal(createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 32), segvId);
    assert.match(download.suggestedFilename(), new RegExp(`^${segvId}\\.`));

    await page.click('#crash-log-link');
    await waitFor('the log view', async () => new URL(page.url()).hash.startsWith(logOf));
    await assertClean(page, seen);
    await context.close();
});

test('an invalid upload is in its own tab with the reason the server gave', async () => {
    const { server, browser } = ctx;
    const badId = await uploadCrash(server, {
        raw: Buffer.from('this is not a crash archive'),
        headers: { 'X-NWB-Program': 'broken-tool', 'X-NWB-Run': 'b1' },
        status: 'invalid',
    });
    const { reason } = await json(server, `/v1/crashes/${badId}`);
    assert.ok(reason.length > 0);
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/crashes`);
    await page.waitForSelector('#view[data-ready]');
    assert.equal(await page.$(`#crash-table tr[data-crash-id="${badId}"]`), null, 'not among the packages');
    assert.match(await textOf(page, '#crash-tab-invalid'), /Invalid uploads \(1\)/);
    await readyAfter(page, () => page.click('#crash-tab-invalid'));
    assert.equal(new URL(page.url()).hash, '#/crashes?tab=invalid');
    const sel = `#crash-invalid-table tr[data-crash-id="${badId}"]`;
    await textWhen(page, sel, reason);
    assert.ok((await page.textContent(sel)).includes('broken-tool'));
    await screenshot(page, 'crashes-invalid');
    await readyAfter(page, () => page.click(`${sel} a`));
    assert.equal(await textOf(page, '#crash-reason'), reason);
    await assertClean(page, seen);
    await context.close();
});

test('the filters narrow the list and live in the URL', async () => {
    const { server, browser } = ctx;
    const abortId = await uploadCrash(server, {
        manifest: { kind: 'signal', program: 'other-game', run: 'o1', signal: 'SIGABRT' },
        files: { 'crash.txt': 'signal=SIGABRT\n\n[backtrace]\n#0 0x1000 /opt/other-game+0x1000\n' },
        headers: { 'X-NWB-Program': 'other-game', 'X-NWB-Run': 'o1' },
    });
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/crashes`);
    await page.waitForSelector('#view[data-ready]');
    const ids = async () => page.$$eval('#crash-table tbody tr', (t) => t.map((r) => r.dataset.crashId));
    assert.ok((await ids()).includes(abortId) && (await ids()).includes(segvId));
    await page.selectOption('#crash-program', 'other-game');
    assert.deepEqual(await ids(), [abortId]);
    assert.equal(new URL(page.url()).hash, '#/crashes?program=other-game');
    await page.selectOption('#crash-program', '');
    await page.selectOption('#crash-signal', 'SIGSEGV');
    assert.deepEqual(await ids(), [segvId]);
    await page.fill('#crash-filter', 'abrt');
    assert.equal(await textOf(page, '#crash-list'), 'No crash matches the filter.');
    await page.selectOption('#crash-signal', '');
    assert.deepEqual(await ids(), [abortId]);
    // A shared link opens with the same filters.
    await page.goto(`${server.url}/#/crashes?status=extracted&q=nwb-demo`);
    await page.reload();
    await page.waitForSelector('#view[data-ready]');
    assert.deepEqual(await ids(), [segvId]);
    assert.equal(await page.inputValue('#crash-filter'), 'nwb-demo');
    assert.equal(await page.inputValue('#crash-status'), 'extracted');
    await readyAfter(page, () => page.goto(`${server.url}/#/crashes`));
    await screenshot(page, 'crashes');
    await assertClean(page, seen);
    await context.close();
});

test('hostile file contents show as text; binary files are offered for download', async () => {
    const { server, browser } = ctx;
    const html = '<img src=x onerror="window.__nwbPwned=1"><script>window.__nwbPwned=2</script>';
    const binary = Buffer.from([0, 1, 2, 0xff, 0xfe, ...Buffer.from('<svg onload=window.__nwbPwned=3>')]);
    const id = await uploadCrash(server, {
        manifest: { kind: 'signal', program: 'hostile', run: 'h1', signal: 'SIGSEGV', crash_time_ns: '1' },
        files: {
            'crash.txt': `signal=SIGSEGV\naddress=${html}\n\n[backtrace]\n#0 0x10 ${html}+0x10\n${html}\n`,
            'log_tail.txt': `1796176139112655906 ERROR 1 a.c:1: ${html}\n`,
            'app.txt': html,
            'gpu_crash.txt': html,
            'gpu_crash.rgd': binary,
            'notes.json': JSON.stringify({ html }),
            'core.bin': binary,
        },
        headers: { 'X-NWB-Program': 'hostile', 'X-NWB-Run': 'h1' },
    });
    const { page, seen, context } = await newPage(browser);
    await page.goto(`${server.url}/#/crashes/${id}`);
    await page.waitForSelector('#view[data-ready]');
    assert.ok((await textOf(page, '#crash-address')).includes(html));
    assert.ok((await textOf(page, '#crash-frames')).includes(html));
    assert.ok((await textOf(page, '#crash-log-tail')).includes(html));
    assert.equal(await textOf(page, '#crash-app .crash-text'), html);
    assert.ok((await textOf(page, '#crash-gpu')).includes(html));
    assert.match(await textOf(page, '#crash-gpu'), /gpu_crash\.rgd .*\(binary\)/);
    // Other text files open on demand, as text; binary ones are in the file table only.
    await page.click('#crash-other-files details[data-file="notes.json"] summary');
    await textWhen(page, '#crash-other-files details[data-file="notes.json"]', 'onerror');
    assert.equal(await page.$('#crash-other-files details[data-file="core.bin"]'), null);
    const files = await textOf(page, '#crash-files');
    assert.match(files, /core\.bin.*application\/octet-stream/);
    const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.click('#crash-files tr:has-text("core.bin") button'),
    ]);
    const file = path.join(work, 'core.bin');
    await download.saveAs(file);
    assert.deepEqual(readFileSync(file), binary);
    assert.equal(await page.$$eval('main img, main script, main svg, main iframe', (n) => n.length), 0);
    assert.ok(!seen.urls.some((u) => /\/x$/.test(u)), 'the <img src=x> was never fetched');
    await screenshot(page, 'crash-hostile');
    await assertClean(page, seen);
    await context.close();
});
