// tests/browser/test_frames.mjs - the frames view (#/runs/<id>/frames[/<n>]) in chromium
// against the real nwb-logserver fed by a real nwb-demo (not --fast: 600 frames at 200 Hz,
// streaming hitches of about 25 ms every 97 frames), names decoded through a .namesym sidecar
// made from what the demo records. The view follows the live run and ends with as many frames
// as the demo printed and the report counts; the worst frame (button, chart click, keys) shows
// its scopes in the flame (names, hover) and its log lines, a hitch (from the diagnostics
// table) its warning line; drag-zoom, pan and reset change the
// URL and ask the server for that window with at most the chart's width of points; the scope
// table sorts; the memory charts show the arenas and the heap total apart, with the arenas that
// only grow called out; no console error, page error or CSP violation. Screenshots:
// frames-overview, frames-zoomed, frame-detail, frame-hitch, frames-memory.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import {
    launchBrowser,
    newPage,
    readyAfter,
    requireChromium,
    screenshot,
    startServer,
    textWhen,
    waitFor,
} from './lib/harness.mjs';

requireChromium();

const need = (name) => {
    const v = process.env[name];
    if (!v) {
        console.error(`${name} is not set (run the test through ctest)`);
        process.exit(2);
    }
    return v;
};
const demoExe = need('NWB_TEST_DEMO_EXE');
const namesymExe = need('NWB_TEST_NAMESYM_EXE');

const DEMO_FRAMES = 600;
const DEMO_HZ = 200;

const ctx = { server: null, browser: null, tmp: null, run: null, demoFrames: 0, record: null };

/** Run a command to its end; its stdout. */
function runTool(exe, args, opts = {}) {
    const r = spawnSync(exe, args, { encoding: 'utf8', maxBuffer: 16 << 20, ...opts });
    if (r.status !== 0) {
        throw new Error(`${exe} ${args.join(' ')}: exit ${r.status ?? r.signal}: ${r.stderr}`);
    }
    return r.stdout;
}

/** The "scope cpu NAME #TOKEN N" lines etc. of a --record file: {cpu, gpu, memory} names. */
function readRecord(file) {
    const names = { cpu: [], gpu: [], memory: [], logs: [] };
    for (const line of readFileSync(file, 'utf8').split('\n')) {
        const f = line.split(' ');
        if (f[0] === 'scope') {
            names[f[1]].push(f[2]);
        } else if (f[0] === 'memory') {
            names.memory.push({ kind: f[1], name: f[2] });
        } else if (f[0] === 'log') {
            names.logs.push(f.slice(2).join(' '));
        }
    }
    return names;
}

async function api(p) {
    const res = await fetch(`${ctx.server.url}${p}`);
    assert.equal(res.status, 200, `${p}: ${res.status}`);
    return res.json();
}

before(async () => {
    ctx.tmp = mkdtempSync(path.join(process.env.TMPDIR || tmpdir(), 'nwb-frames-'));
    // The demo's names, from a one-frame standalone run, into a sidecar the server decodes with.
    const solo = path.join(ctx.tmp, 'solo');
    mkdirSync(solo);
    runTool(
        demoExe,
        ['--no-logserver', '--fast', '--frames', '1', '--record', path.join(ctx.tmp, 'names.txt')],
        {
            env: { ...process.env, NWB_LOG_DIR: solo },
        },
    );
    const names = readRecord(path.join(ctx.tmp, 'names.txt'));
    const nsDir = path.join(ctx.tmp, 'namesym');
    mkdirSync(nsDir);
    runTool(namesymExe, [
        'build',
        '--out',
        path.join(nsDir, 'nwb-demo.namesym'),
        ...names.cpu,
        ...names.gpu,
        ...names.memory.map((m) => m.name),
    ]);
    ctx.server = await startServer(['--namesym-dir', nsDir]);
    ctx.browser = await launchBrowser();
});

after(async () => {
    await ctx.browser?.close();
    await ctx.server?.stop();
    if (ctx.tmp) {
        rmSync(ctx.tmp, { recursive: true, force: true });
    }
});

/** Start the demo against the server; resolves {stdout} when it exits 0. */
function startDemo(args) {
    const child = spawn(demoExe, [...args, `--logserver=127.0.0.1:${ctx.server.port}`], {
        stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
        out += d;
    });
    child.stderr.on('data', (d) => {
        err += d;
    });
    return new Promise((resolve, reject) => {
        child.once('exit', (code, sig) =>
            code === 0 ? resolve({ stdout: out }) : reject(new Error(`nwb-demo: ${code ?? sig}: ${err}`)),
        );
    });
}

/** Everything a page saw go wrong, asserted empty. */
async function assertClean(seen) {
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(await seen.cspNow(), []);
}

const framesHash = () => `#/runs/${ctx.run}/frames`;
const ready = (page) => page.waitForSelector('#view[data-ready="true"]', { timeout: 10000 });
const shownCount = (page) => page.getAttribute('#frames-count', 'data-frames').then(Number);
const hashOf = (page) => decodeURIComponent(new URL(page.url()).hash);
/** Wait until the page's hash is @p want (saying which it is when it does not come). */
async function waitHash(page, want) {
    try {
        await waitFor(`hash ${want}`, () => hashOf(page) === want);
    } catch (err) {
        throw new Error(`${err.message}; the hash is ${hashOf(page)}`);
    }
}

/**
 * Do @p action (a click, a key, Back, a goto within the page) and wait until the view it leads
 * to is drawn at @p want: its own readiness, not the view before it (see readyAfter).
 */
async function navigate(page, want, action) {
    try {
        await readyAfter(page, action);
    } catch (err) {
        throw new Error(`${err.message}; the hash is ${hashOf(page)}, waiting for ${want}`);
    }
    await waitHash(page, want);
}

/** A new page at the run's frames view (with @p query), drawn; and the report's worst frame. */
async function openFrames(query = '') {
    assert.ok(ctx.run, 'the first test found the run');
    const report = await api(`/v1/runs/${ctx.run}/telemetry`);
    const opened = await newPage(ctx.browser);
    await opened.page.goto(`${ctx.server.url}/${framesHash()}${query}`);
    await ready(opened.page);
    return { ...opened, report, worst: report.frames.worst[0].frame };
}

test('the frames view follows the live run and ends with as many frames as the demo recorded', async () => {
    const record = path.join(ctx.tmp, 'run.txt');
    const demo = startDemo(['--frames', String(DEMO_FRAMES), '--hz', String(DEMO_HZ), '--record', record]);
    const runs = await waitFor('the demo run with telemetry', async () => {
        const r = await (await fetch(`${ctx.server.url}/v1/runs?program=nwb-demo`)).json();
        return r.runs.find((x) => x.telemetry) || null;
    });
    ctx.run = runs.id;
    const { page, seen, context } = await newPage(ctx.browser);
    await page.goto(`${ctx.server.url}/${framesHash()}`);
    await ready(page);
    await page.waitForSelector('#frames-chart .uplot');
    await textWhen(page, '#frames-live', 'following live');
    const first = await shownCount(page);
    const { stdout } = await demo;
    const m = /nwb-demo: (\d+) frames at/.exec(stdout);
    assert.ok(m, `the demo says how many frames it ran: ${stdout}`);
    ctx.demoFrames = Number(m[1]);
    assert.equal(ctx.demoFrames, DEMO_FRAMES);
    ctx.record = readRecord(record);
    // The live refresh brings the page to the demo's count, with no reload.
    await page.waitForFunction(
        (n) => Number(document.querySelector('#frames-count')?.dataset.frames) === n,
        ctx.demoFrames,
        { timeout: 15000 },
    );
    assert.ok(first <= ctx.demoFrames);
    const report = await api(`/v1/runs/${ctx.run}/telemetry`);
    assert.equal(report.frames.count, ctx.demoFrames, 'the report counts what the demo printed');
    assert.match(
        await page.textContent('#frames-summary'),
        new RegExp(`${ctx.demoFrames.toLocaleString('en-US')} frames`),
    );
    // Every window asked for at most the chart's width in points (the last one: its width now).
    const plotWidth = await page.$eval('#frames-chart .u-over', (n) => n.getBoundingClientRect().width);
    const viewport = page.viewportSize().width;
    const asked = seen.urls
        .filter((u) => /\/frames\?/.test(u))
        .map((u) => Number(new URL(u).searchParams.get('points')));
    assert.ok(asked.length >= 2, `the window was asked again live: ${asked}`);
    for (const p of asked) {
        assert.ok(p >= 1 && p < viewport && p <= 4096, `points=${p}, viewport ${viewport} px`);
    }
    assert.equal(asked.at(-1), Math.floor(plotWidth), `the last window had the plot's width`);
    // Hitches over budget are counted, the budget and percentiles are said.
    assert.match(await page.textContent('#frames-summary'), /budget 16\.7 ms · p50 .* p90 .* p99 /);
    assert.match(await page.textContent('#frames-hitches'), /^[1-9]\d* frames over budget in view/);
    await screenshot(page, 'frames-overview');
    await assertClean(seen);
    await context.close();
});

test('the worst frame shows its scopes in the flame and its log lines; keys move between frames', async () => {
    const { page, seen, context, report, worst } = await openFrames();
    await navigate(page, `${framesHash()}/${worst}`, () => page.click('#frames-worst'));
    await page.waitForSelector('#frame-flame');
    const detail = await api(`/v1/runs/${ctx.run}/frames/${worst}`);
    assert.match(
        await page.textContent('#frame-title'),
        new RegExp(`^Frame ${worst.toLocaleString('en-US')}: `),
    );
    // The flame's list has every scope the demo records in a frame, by name (decoded).
    const listed = await page.$$eval('#frame-scopes tbody tr td:nth-child(3)', (tds) =>
        tds.map((td) => td.textContent.trim()),
    );
    for (const name of ctx.record.cpu) {
        assert.ok(listed.includes(name), `scope ${name} in the frame's scopes: ${listed}`);
    }
    const apiScopes = detail.threads.reduce((n, t) => n + t.scopes.length, 0);
    assert.equal(listed.length, apiScopes);
    // The canvas: hovering the top row of the first lane shows the "frame" scope (depth 0).
    const box = await page.$eval('#frame-flame', (c) => {
        const r = c.getBoundingClientRect();
        return { x: r.left, y: r.top, w: r.width, h: r.height };
    });
    assert.ok(box.w > 300 && box.h > 40, `flame drawn ${box.w}x${box.h}`);
    const lane = detail.threads.find((t) => t.scopes.some((s) => s.name === 'frame'));
    const laneIndex = detail.threads.indexOf(lane);
    assert.equal(laneIndex, 0, 'the main thread (the "frame" scope) is the first lane');
    await page.mouse.move(box.x + box.w / 2, box.y + 18 + 9);
    const tip = await textWhen(page, '#frame-flame-tip', 'frame');
    // The "frame" scope opens a few µs after the frame's start (its NWB_PROFILE_BEGIN follows
    // nwb_tel_frame_begin): within the first 0.1 ms.
    assert.match(tip, /^frame[\d.]+ ms · starts at \+0\.0\d\d ms/);
    // Its log lines, as the server has them.
    if (detail.logs.length === 0) {
        assert.match(await page.textContent('#frame-logs'), /No log lines/);
    } else {
        const lines = await page.$$eval('#frame-logs li .message', (n) => n.map((x) => x.textContent));
        assert.deepEqual(
            lines,
            detail.logs.map((l) => l.message),
        );
    }
    // Its own frame graph (the demo describes one every frame): every pass, in order.
    assert.ok(detail.frameGraph, 'the demo records a frame graph each frame');
    const passes = await page.$$eval('#frame-graph-passes tbody tr td:nth-child(2)', (n) =>
        n.map((x) => x.textContent),
    );
    assert.deepEqual(
        passes,
        detail.frameGraph.passes.map((p) => p.name),
    );
    assert.match(await page.textContent('#frame-graph-summary'), /passes on \d+ packets/);
    await screenshot(page, 'frame-detail');
    // A streaming hitch (the demo's diagnostic marks each) has its warning line: through the
    // diagnostics table's link (the worst frames may be the machine's stalls, not hitches).
    // A hitch is often the worst frame itself, and a link to the frame shown changes nothing:
    // take another when the demo recorded one, and stay when it did not.
    const hitches = report.diagnostics.listed;
    const hitch = hitches.find((d) => d.frame !== worst) || hitches[0];
    assert.ok(hitch, 'the demo recorded a hitch diagnostic');
    if (hitch.frame !== worst) {
        await navigate(page, `${framesHash()}/${hitch.frame}`, () =>
            page.click(`#frames-diagnostics a[href$="/frames/${hitch.frame}"]`),
        );
    }
    await page.waitForSelector('#frame-flame');
    const hitchLines = await page.$$eval('#frame-logs li', (n) => n.map((x) => x.textContent));
    assert.ok(
        hitchLines.some(
            (l) => l.includes('WARNING') && l.includes(`frame ${hitch.frame} hitch: streaming took`),
        ),
        `the hitch line, its name decoded: ${hitchLines}`,
    );
    await page.$eval('#frame-detail', (n) => n.scrollIntoView());
    await screenshot(page, 'frame-hitch');
    // Keys: Right / Left step, w goes to the worst, Esc back to the chart.
    const key = (name, frame) =>
        navigate(page, frame === null ? framesHash() : `${framesHash()}/${frame}`, () =>
            page.keyboard.press(name),
        );
    await key('ArrowRight', hitch.frame + 1);
    await key('ArrowLeft', hitch.frame);
    if (hitch.frame === worst) {
        await key('ArrowRight', hitch.frame + 1); // so that w has somewhere to go
    }
    await key('w', worst);
    await key('Escape', null);
    await assertClean(seen);
    await context.close();
});

/** The CSS x of frame @p frame on the chart, from the window the page shows. */
async function xOfFrame(page, frame) {
    const text = await page.textContent('#frames-window');
    const m = /^frames ([\d,]+)–([\d,]+):/.exec(text);
    assert.ok(m, `window note: ${text}`);
    const [from, to] = [Number(m[1].replace(/,/g, '')), Number(m[2].replace(/,/g, ''))];
    const r = await page.$eval('#frames-chart .u-over', (n) => {
        const b = n.getBoundingClientRect();
        return { x: b.left, y: b.top, w: b.width, h: b.height };
    });
    return { x: r.x + ((frame - (from - 0.5)) / (to - from + 1)) * r.w, y: r.y + r.h / 2, r, from, to };
}

test('clicking the chart at the worst frame opens it; drag zooms, pan and reset move the window', async () => {
    const { page, seen, context, report, worst } = await openFrames();
    const p = await xOfFrame(page, worst);
    await page.mouse.move(p.x, p.y);
    await navigate(page, `${framesHash()}/${worst}`, () => page.mouse.click(p.x, p.y));
    await navigate(page, framesHash(), () => page.goBack());

    // Drag from a quarter to a half of the plot: the window goes into the URL and to the server.
    const q = await xOfFrame(page, 0);
    const before = seen.urls.length;
    await page.mouse.move(q.r.x + q.r.w * 0.25, q.y);
    await page.mouse.down();
    await page.mouse.move(q.r.x + q.r.w * 0.4, q.y, { steps: 4 });
    await page.mouse.move(q.r.x + q.r.w * 0.5, q.y, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => /[?&]from=\d+&to=\d+/.test(window.location.hash));
    const url = new URLSearchParams(new URL(page.url()).hash.split('?')[1]);
    const [from, to] = [Number(url.get('from')), Number(url.get('to'))];
    assert.ok(from >= 130 && from <= 170 && to >= 280 && to <= 320, `zoomed to ${from}-${to}`);
    await waitFor('the window asked of the server', () =>
        seen.urls.slice(before).some((u) => u.includes(`/frames?from=${from}&to=${to}&points=`)),
    );
    await textWhen(page, '#frames-window', `frames ${from}–${to}:`);
    await screenshot(page, 'frames-zoomed');
    // Pan right a quarter, then the wheel, then reset: each asks the server again.
    await page.click('#frames-pan-right');
    const w = to - from + 1;
    const shift = Math.round(w * 0.25);
    await page.waitForFunction(
        (s) => window.location.hash.includes(s),
        `from=${from + shift}&to=${to + shift}`,
    );
    await waitFor('the panned window asked', () =>
        seen.urls.some((u) => u.includes(`/frames?from=${from + shift}&to=${to + shift}&`)),
    );
    await page.mouse.move(q.r.x + q.r.w / 2, q.y);
    await page.mouse.wheel(0, 100);
    await waitFor('the wheel pans', async () => {
        const h = new URLSearchParams(new URL(page.url()).hash.split('?')[1]);
        return Number(h.get('from')) > from + shift;
    });
    await page.click('#frames-zoom-reset');
    await waitHash(page, framesHash());
    await textWhen(page, '#frames-window', `frames 0–${(ctx.demoFrames - 1).toLocaleString('en-US')}:`);
    // Reset made a history entry: Back shows the zoomed window again.
    await readyAfter(page, () => page.goBack());
    await page.waitForFunction(() => /[?&]from=\d+&to=\d+/.test(window.location.hash));
    await textWhen(page, '#frames-window', /^frames \d+–\d+: \d+ frames/);
    // A shared URL with a window opens at that window.
    await navigate(page, `${framesHash()}?from=100&to=199`, () =>
        page.goto(`${ctx.server.url}/${framesHash()}?from=100&to=199`),
    );
    await textWhen(page, '#frames-window', 'frames 100–199: 100 frames');
    await assertClean(seen);
    await context.close();
});

test('the scope table sorts; memory shows arenas and the heap total apart; no console errors', async () => {
    const { page, seen, context } = await openFrames();
    const col = (n) =>
        page.$$eval(`#scopes-cpu tbody tr td:nth-child(${n})`, (tds) => tds.map((t) => t.textContent));
    const msOf = (s) => Number(s.replace(/ ms$/, ''));
    // Default: by total, largest first.
    assert.equal(await page.getAttribute('#scopes-cpu', 'data-sort'), '2');
    let totals = (await col(3)).map(msOf);
    assert.deepEqual(
        totals,
        [...totals].sort((a, b) => b - a),
    );
    assert.deepEqual((await col(1)).sort(), [...ctx.record.cpu].sort(), 'every CPU scope, by name');
    // p95 <= p99 <= max on every row (one histogram, clamped to the largest sample).
    const [p95s, p99s, maxes] = [await col(6), await col(7), await col(8)];
    p99s.forEach((p99, i) => {
        assert.ok(
            msOf(p95s[i]) <= msOf(p99) && msOf(p99) <= msOf(maxes[i]),
            `row ${i}: ${p95s[i]} ${p99} ${maxes[i]}`,
        );
    });
    await page.click('#scopes-cpu th:nth-child(1)');
    const names = await col(1);
    assert.deepEqual(
        names,
        [...names].sort((a, b) => a.localeCompare(b)),
    );
    assert.equal(await page.getAttribute('#scopes-cpu th:nth-child(1)', 'aria-sort'), 'ascending');
    await page.click('#scopes-cpu th:nth-child(8)');
    const max = (await col(8)).map(msOf);
    assert.deepEqual(
        max,
        [...max].sort((a, b) => b - a),
    );
    await page.click('#scopes-cpu th:nth-child(8)');
    const maxAsc = (await col(8)).map(msOf);
    assert.deepEqual(
        maxAsc,
        [...maxAsc].sort((a, b) => a - b),
    );
    assert.equal(await page.getAttribute('#scopes-cpu', 'data-dir'), 'asc');
    assert.deepEqual(
        (
            await page.$$eval('#scopes-gpu tbody tr td:nth-child(1)', (t) => t.map((x) => x.textContent))
        ).sort(),
        [...ctx.record.gpu].sort(),
    );

    // Memory: the arenas in one chart, the heap total in its own, the growing arenas named.
    await page.waitForSelector('#memory-arenas-chart .uplot');
    await page.waitForSelector('#memory-heap-chart .uplot');
    const legend = (sel) =>
        page.$$eval(`${sel} .u-legend .u-series .u-label`, (n) => n.map((x) => x.textContent));
    const arenaNames = ctx.record.memory.filter((m) => m.kind === 'arena').map((m) => m.name);
    const heapNames = ctx.record.memory.filter((m) => m.kind === 'heapBacking').map((m) => m.name);
    assert.ok(arenaNames.length >= 2 && heapNames.length >= 1, JSON.stringify(ctx.record.memory));
    const arenaLegend = await legend('#memory-arenas-chart');
    const heapLegend = await legend('#memory-heap-chart');
    for (const a of arenaNames) {
        assert.ok(arenaLegend.includes(a), `${a} in the arena chart: ${arenaLegend}`);
        assert.ok(!heapLegend.includes(a), `${a} not in the heap chart`);
    }
    for (const h of heapNames) {
        assert.ok(heapLegend.includes(h), `${h} in the heap chart: ${heapLegend}`);
        assert.ok(!arenaLegend.includes(h), `${h} not in the arena chart`);
    }
    const grows = await page.textContent('#memory-only-grows');
    for (const a of arenaNames) {
        assert.ok(grows.includes(a), `the demo's arena ${a} only grows: ${grows}`);
    }
    const badges = await page.$$eval('#memory-owners tbody tr', (rows) =>
        rows.filter((r) => r.querySelector('.badge.grows')).map((r) => r.cells[0].textContent),
    );
    const listed = await page.$$eval('#memory-only-grows .mono', (n) => n.map((x) => x.textContent));
    assert.deepEqual(badges.sort(), listed.sort(), 'the badges and the list name the same owners');
    await page.$eval('#frames-memory', (n) => n.scrollIntoView());
    await screenshot(page, 'frames-memory');
    // The frame graph and diagnostics (the demo's hitch diagnostic) are there.
    assert.match(await page.textContent('#frame-graph-totals'), /passes/);
    assert.match(await page.textContent('#frames-diagnostics'), /diag\.frame\.hitch|#[0-9a-f]{16}/);
    assert.match(await page.textContent('#frames-diagnostics'), /scope=streaming/);
    await assertClean(seen);
    await context.close();
});
