// tests/bench/bench_viewer.mjs - the web viewer's benchmark (never a ctest test; scripts/bench
// --only viewer runs it). Two parts, against the real nwb-logserver in Debian's chromium
// (playwright-core from server/viewer/node_modules):
//
// 1. First render. A run of 1,000,000 telemetry frames (nwb-telemetry synth, 60 frames an
//    upload, its zstd frames POSTed as they are) and a 1 GiB log (binary log batches of 4 MiB,
//    one body reused with its record times moved on) under a temporary --out. Then, in a fresh
//    browser context each time, the time from navigation start to `#view[data-ready]` (the
//    readiness marker main.js clears and each view sets once its first data is drawn; a view
//    without it is measured at its first content, and the table says so) for: the runs view,
//    the run's log at its end and at its middle, the run's frames. Beside each: the target
//    (1 s) and the server's own answer time for the same API requests, replayed from node one
//    after another (the limit the page cannot beat), and the page's JS heap after the render.
// 2. Memory while following. A live nwb-demo run (60 Hz) with its log view and its frames view
//    open; every --sample-s the page's JS heap (after a forced GC, so the retained heap) and DOM
//    node count, for --follow-s. Prints first/last/max and the growth after the warm-up, and
//    whether it is bounded (docs/performance.md, "Viewer").
//
// usage: node tests/bench/bench_viewer.mjs --build DIR [--frames N] [--log-mib N] [--repeat N]
//        [--follow-s S] [--sample-s S] [--tmp DIR] [--keep] [--data DIR] [--skip-first-render]
//        [--skip-follow] [--ready-timeout-ms MS]

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { waitFor } from '../browser/lib/wait.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

const TARGET_MS = 1000; // first render of each view, on localhost
const FRAMES_PER_UPLOAD = 60;
const LOG_BODY_BYTES = 4 << 20; // one binary batch (the server takes up to 16 MiB)
const HEAP_BOUND_MIB = 16; // "bounded": the last sample within this of the warmed-up one
const NODES_BOUND = 2000; // ... and this many DOM nodes
let READY_WAIT_MS = 10000; // --ready-timeout-ms: how long a view may take to set data-ready

function usage(code) {
    const text = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
    console.log(
        text
            .filter((l) => l.startsWith('//'))
            .map((l) => l.replace(/^\/\/ ?/, ''))
            .join('\n'),
    );
    process.exit(code);
}

function parseArgs(argv) {
    const o = {
        build: path.join(root, 'build/bench'),
        frames: 1000000,
        logMib: 1024,
        repeat: 3,
        followS: 120,
        sampleS: 10,
        tmp: null,
        keep: false,
        data: null,
        firstRender: true,
        follow: true,
        chromium: process.env.NWB_TEST_CHROMIUM || '/usr/bin/chromium',
    };
    const num = (v, lo, hi, name) => {
        const n = Number(v);
        if (!/^[0-9]+$/.test(String(v)) || n < lo || n > hi) {
            console.error(`bench_viewer: ${name} takes ${lo}..${hi}`);
            process.exit(2);
        }
        return n;
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const v = argv[i + 1];
        switch (a) {
            case '--build':
                o.build = path.resolve(v);
                i++;
                break;
            case '--frames':
                o.frames = num(v, 60, 10000000, a);
                i++;
                break;
            case '--log-mib':
                o.logMib = num(v, 1, 65536, a);
                i++;
                break;
            case '--repeat':
                o.repeat = num(v, 1, 50, a);
                i++;
                break;
            case '--follow-s':
                o.followS = num(v, 10, 86400, a);
                i++;
                break;
            case '--sample-s':
                o.sampleS = num(v, 1, 3600, a);
                i++;
                break;
            case '--tmp':
                o.tmp = path.resolve(v);
                i++;
                break;
            case '--data':
                o.data = path.resolve(v);
                i++;
                break;
            case '--ready-timeout-ms':
                READY_WAIT_MS = num(v, 100, 600000, a);
                i++;
                break;
            case '--keep':
                o.keep = true;
                break;
            case '--skip-first-render':
                o.firstRender = false;
                break;
            case '--skip-follow':
                o.follow = false;
                break;
            case '-h':
            case '--help':
                usage(0);
                break;
            default:
                console.error(`bench_viewer: unknown argument '${a}' (try --help)`);
                process.exit(2);
        }
    }
    return o;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The temporary root: /dev/shm when it has room for @p needMib, else $TMPDIR or /tmp. */
function tempRoot(needMib) {
    const df = spawnSync('df', ['-Pm', '/dev/shm'], { encoding: 'utf8' });
    const free = Number(df.stdout?.split('\n')[1]?.split(/\s+/)[3] || 0);
    return free >= needMib ? '/dev/shm' : process.env.TMPDIR || tmpdir();
}

/** nwb-logserver on port 0 with @p out; {url, port, pid, stop()}. */
async function startServer(exe, out, args = []) {
    const child = spawn(exe, ['--port', '0', '--out', out, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d) => {
        stderr += d;
        if (stderr.length > 1 << 20) {
            stderr = stderr.slice(-65536);
        }
    });
    const exited = new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, sig })));
    const port = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`nwb-logserver did not listen: ${stderr}`)), 20000);
        child.stdout.on('data', (d) => {
            stdout += d;
            const m = /listening on http:\/\/[^:]+:([0-9]+)/.exec(stdout);
            if (m) {
                clearTimeout(timer);
                resolve(Number(m[1]));
            }
        });
        exited.then((r) => {
            clearTimeout(timer);
            reject(new Error(`nwb-logserver exited (${r.code ?? r.sig}): ${stderr}`));
        });
    });
    return {
        port,
        url: `http://127.0.0.1:${port}`,
        pid: child.pid,
        async stop() {
            if (child.exitCode === null && child.signalCode === null) {
                child.kill('SIGTERM');
                const t = setTimeout(() => child.kill('SIGKILL'), 20000);
                await exited;
                clearTimeout(t);
            }
        },
    };
}

// ---- preparing the run: 1,000,000 frames and a 1 GiB log ----

const PROGRAM = 'bench-viewer';
const RUN = 'first-render';

/** [start, end) of each zstd frame of @p buf (RFC 8878: header, blocks, optional checksum). */
function zstdFrames(buf) {
    const out = [];
    let p = 0;
    while (p < buf.length) {
        if (buf.readUInt32LE(p) !== 0xfd2fb528) {
            throw new Error(`not a zstd frame at byte ${p}`);
        }
        const fhd = buf[p + 4];
        const fcs = fhd >> 6;
        const single = (fhd >> 5) & 1;
        let q = p + 5 + (single ? 0 : 1) + [0, 1, 2, 4][fhd & 3];
        q += fcs === 0 ? single : [0, 2, 4, 8][fcs];
        for (;;) {
            const bh = buf[q] | (buf[q + 1] << 8) | (buf[q + 2] << 16);
            const type = (bh >> 1) & 3;
            q += 3 + (type === 1 ? 1 : bh >>> 3);
            if (bh & 1) {
                break;
            }
        }
        q += (fhd >> 2) & 1 ? 4 : 0;
        out.push([p, q]);
        p = q;
    }
    return out;
}

async function postTelemetry(server, o, dir) {
    const file = path.join(dir, 'synth.nwbs.zst');
    const t0 = performance.now();
    const synth = spawnSync(
        path.join(o.build, 'telemetry/nwb-telemetry'),
        ['synth', '-o', file, '--frames', String(o.frames), '--frames-per-upload', String(FRAMES_PER_UPLOAD)],
        { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    if (synth.status !== 0) {
        throw new Error('nwb-telemetry synth failed');
    }
    const genMs = performance.now() - t0;
    const buf = readFileSync(file);
    const frames = zstdFrames(buf);
    const t1 = performance.now();
    for (const [a, b] of frames) {
        const res = await fetch(`${server.url}/v1/telemetry`, {
            method: 'POST',
            headers: { 'Content-Encoding': 'zstd', 'X-NWB-Program': PROGRAM, 'X-NWB-Run': RUN },
            body: buf.subarray(a, b),
        });
        const text = await res.text();
        if (res.status !== 200 || !text.includes('"stored":true')) {
            throw new Error(`POST /v1/telemetry: ${res.status} ${text}`);
        }
    }
    rmSync(file);
    return { uploads: frames.length, zBytes: buf.length, genMs, postMs: performance.now() - t1 };
}

/** One binary log batch of about LOG_BODY_BYTES: {body, times: [offset of each time_ns]}. */
function makeLogBatch() {
    const file = Buffer.from('bench_viewer.mjs');
    const levels = [0, 0, 0, 0, 0, 0, 0, 1, 0, 2]; // mostly INFO, some WARNING and ERROR
    const records = [];
    let size = 16;
    for (let i = 0; size < LOG_BODY_BYTES - 512; i++) {
        const msg = Buffer.from(
            `frame ${i} bench line: scope #${(i * 2654435761) % 100000} took ${(i % 977) / 100} ms, arena grew to ${i * 64} bytes`,
        );
        const rec = Buffer.alloc(32 + file.length + msg.length);
        rec.writeUInt32LE(rec.length, 0);
        rec[4] = levels[i % levels.length];
        rec[5] = 0;
        rec.writeUInt16LE(file.length, 6);
        rec.writeBigUInt64LE(0n, 8);
        rec.writeBigUInt64LE(BigInt(4242 + (i % 3)), 16);
        rec.writeUInt32LE(100 + (i % 50), 24);
        rec.writeUInt32LE(msg.length, 28);
        file.copy(rec, 32);
        msg.copy(rec, 32 + file.length);
        records.push(rec);
        size += rec.length;
    }
    const head = Buffer.alloc(16);
    head.writeUInt32LE(0x4c42574e, 0);
    head.writeUInt16LE(1, 4);
    head.writeUInt16LE(16, 6);
    head.writeUInt32LE(records.length, 8);
    head.writeUInt32LE(size - 16, 12);
    const body = Buffer.concat([head, ...records]);
    const times = [];
    let off = 16;
    for (const r of records) {
        times.push(off + 8);
        off += r.length;
    }
    return { body, times };
}

async function postLog(server, o) {
    const want = o.logMib * 1024 * 1024;
    const { body, times } = makeLogBatch();
    const stepNs = 250000n; // 4000 records a second of the run
    let t = BigInt(Date.now() - 5 * 3600 * 1000) * 1000000n;
    let size = 0;
    let batches = 0;
    const t0 = performance.now();
    while (size < want) {
        for (const at of times) {
            body.writeBigUInt64LE(t, at);
            t += stepNs;
        }
        const res = await fetch(`${server.url}/v1/log`, {
            method: 'POST',
            headers: {
                'Content-Type': 'application/x-nwb-log-batch',
                'X-NWB-Program': PROGRAM,
                'X-NWB-Run': RUN,
            },
            body,
        });
        if (res.status !== 200) {
            throw new Error(`POST /v1/log: ${res.status} ${await res.text()}`);
        }
        await res.arrayBuffer();
        batches++;
        const head = await fetch(`${server.url}/v1/runs/${await runId(server)}/log?offset=0&limit=1`);
        size = Number(head.headers.get('X-NWB-Log-Size'));
        await head.arrayBuffer();
    }
    return { batches, records: batches * times.length, bytes: size, postMs: performance.now() - t0 };
}

let cachedRunId = null;
async function runId(server) {
    if (cachedRunId === null) {
        const res = await fetch(`${server.url}/v1/runs?program=${PROGRAM}&limit=1`);
        const { runs } = await res.json();
        cachedRunId = runs[0]?.id ?? null;
    }
    return cachedRunId;
}

// ---- the browser ----

async function chromiumApi() {
    const mod = path.join(root, 'server/viewer/node_modules/playwright-core/index.mjs');
    return (await import(pathToFileURL(mod).href)).chromium;
}

// Recorded in the page from its first script on: when #view first got content from a view and
// when it got data-ready (ms since navigation start, performance.now()).
function markTimes() {
    window.__nwbBench = { content: null, ready: null };
    const watch = () => {
        const view = document.getElementById('view');
        if (view === null) {
            return false;
        }
        const check = () => {
            const b = window.__nwbBench;
            if (
                b.content === null &&
                view.dataset.view &&
                view.firstElementChild &&
                !/Loading the viewer/.test(view.textContent)
            ) {
                b.content = performance.now();
            }
            if (b.ready === null && view.dataset.ready === 'true') {
                b.ready = performance.now();
            }
        };
        new MutationObserver(check).observe(view, { attributes: true, childList: true, subtree: true });
        check();
        return true;
    };
    if (!watch()) {
        document.addEventListener('DOMContentLoaded', watch, { once: true });
    }
}

async function pageMetrics(cdp, gc) {
    if (gc) {
        await cdp.send('HeapProfiler.collectGarbage');
    }
    const { metrics } = await cdp.send('Performance.getMetrics');
    const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
    return {
        heap: m.JSHeapUsedSize,
        total: m.JSHeapTotalSize,
        nodes: m.Nodes,
        listeners: m.JSEventListeners,
    };
}

async function openPage(browser) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.addInitScript(markTimes);
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    return { context, page, cdp, errors };
}

/** Load @p url in a fresh context: {ms, what ('ready' | 'content'), api: [urls], metrics}. */
async function firstRender(browser, url, readyWaitMs) {
    const { context, page, cdp, errors } = await openPage(browser);
    const api = [];
    page.on('request', (r) => {
        const u = new URL(r.url());
        if (u.pathname.startsWith('/v1/') && u.pathname !== '/v1/events') {
            api.push(u.pathname + u.search);
        }
    });
    await page.goto(url);
    let what = 'ready';
    try {
        await page.waitForFunction(() => window.__nwbBench?.ready !== null, null, { timeout: readyWaitMs });
    } catch {
        what = 'content';
        await page.waitForFunction(() => window.__nwbBench?.content !== null, null, {
            timeout: READY_WAIT_MS,
        });
    }
    const b = await page.evaluate(() => window.__nwbBench);
    const metrics = await pageMetrics(cdp, false);
    await context.close();
    return { ms: what === 'ready' ? b.ready : b.content, what, api, metrics, errors };
}

/** Ask the server for @p paths one after another: {sum, max} ms. */
async function serverTimes(server, paths) {
    let sum = 0;
    let max = 0;
    for (const p of [...new Set(paths)]) {
        const t0 = performance.now();
        const res = await fetch(server.url + p);
        await res.arrayBuffer();
        const ms = performance.now() - t0;
        sum += ms;
        max = Math.max(max, ms);
    }
    return { sum, max, n: new Set(paths).size };
}

const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const mib = (b) => (b / 1048576).toFixed(1);

/** The first GET .../frames after a server start (cold) and the next (warm), printed. */
async function coldFrames(server) {
    const p = `/v1/runs/${await runId(server)}/frames?points=1280`;
    const cold = await serverTimes(server, [p]);
    const warm = await serverTimes(server, [p]);
    console.log(
        `Server after a restart: the first \`GET ${p.replace(/\/v1\/runs\/[^/]+/, '/v1/runs/<id>')}\` took ${cold.sum.toFixed(1)} ms (cold), the next ${warm.sum.toFixed(1)} ms (warm); the views below are measured warm.\n`,
    );
}

async function benchFirstRender(o, browser, server) {
    const id = await runId(server);
    const size = Number(
        (await fetch(`${server.url}/v1/runs/${id}/log?offset=0&limit=1`)).headers.get('X-NWB-Log-Size'),
    );
    const e = encodeURIComponent(id);
    const cases = [
        ['runs', `${server.url}/#/runs`],
        ['log, at the end', `${server.url}/#/runs/${e}/log`],
        ['log, at the middle', `${server.url}/#/runs/${e}/log?offset=${Math.floor(size / 2)}`],
        ['frames', `${server.url}/#/runs/${e}/frames`],
    ];
    console.log(
        `| view | first render (median of ${o.repeat}, max) | target | measured at | server answers (same requests, one by one: sum / max) | JS heap after | DOM nodes |`,
    );
    console.log('|---|---:|---:|---|---:|---:|---:|');
    let pass = 0;
    let fail = 0;
    const errors = [];
    for (const [name, url] of cases) {
        const runs = [];
        for (let i = 0; i < o.repeat; i++) {
            // A view that did not set data-ready once will not the next time: wait 1 s then.
            const unmarked = runs.length > 0 && runs[0].what !== 'ready';
            runs.push(await firstRender(browser, url, unmarked ? 1000 : READY_WAIT_MS));
        }
        const ms = runs.map((r) => r.ms);
        const last = runs[runs.length - 1];
        const srv = await serverTimes(server, last.api);
        const ok = median(ms) <= TARGET_MS && last.what === 'ready';
        ok ? pass++ : fail++;
        runs.forEach((r) => errors.push(...r.errors.map((x) => `${name}: ${x}`)));
        console.log(
            `| ${name} | ${median(ms).toFixed(0)} ms, ${Math.max(...ms).toFixed(0)} ms ${ok ? 'PASS' : 'FAIL'} | ${TARGET_MS} ms | ${last.what === 'ready' ? '`data-ready`' : 'first content (no `data-ready`: the view is not done)'} | ${srv.sum.toFixed(1)} / ${srv.max.toFixed(1)} ms (${srv.n} requests) | ${mib(last.metrics.heap)} MiB | ${last.metrics.nodes} |`,
        );
    }
    console.log('');
    if (errors.length > 0) {
        console.log(`page errors: ${errors.slice(0, 10).join(' | ')}`);
    }
    return { pass, fail };
}

// ---- following a live demo run ----

async function benchFollow(o, browser, dir) {
    const server = await startServer(
        path.join(o.build, 'server/nwb-logserver'),
        path.join(dir, 'follow-out'),
    );
    const frames = Math.min(1000000, (o.followS + 120) * 60);
    const demo = spawn(
        path.join(o.build, 'telemetry/nwb-demo'),
        ['--frames', String(frames), '--hz', '60', `--logserver=127.0.0.1:${server.port}`],
        {
            stdio: ['ignore', 'ignore', 'ignore'],
            env: {
                ...process.env,
                NWB_CRASH_DIR: path.join(dir, 'crashes'),
                NWB_LOG_DIR: path.join(dir, 'logs'),
            },
        },
    );
    try {
        const run = await waitFor(
            'the demo run',
            async () => {
                const { runs } = await (await fetch(`${server.url}/v1/runs?program=nwb-demo`)).json();
                return runs.find((r) => r.telemetry)?.id;
            },
            30000,
        );
        const e = encodeURIComponent(run);
        const views = [];
        for (const [name, hash] of [
            ['log', `#/runs/${e}/log`],
            ['frames', `#/runs/${e}/frames`],
        ]) {
            const p = await openPage(browser);
            await p.page.goto(`${server.url}/${hash}`);
            await p.page
                .waitForFunction(
                    () => window.__nwbBench?.ready !== null || window.__nwbBench?.content !== null,
                    null,
                    {
                        timeout: READY_WAIT_MS,
                    },
                )
                .catch(() => {});
            views.push({ name, ...p, samples: [] });
        }
        const t0 = Date.now();
        for (;;) {
            const at = (Date.now() - t0) / 1000;
            for (const v of views) {
                v.samples.push({ at, ...(await pageMetrics(v.cdp, true)) });
            }
            if (at >= o.followS) {
                break;
            }
            await sleep(Math.max(0, t0 + (Math.floor(at / o.sampleS) + 1) * o.sampleS * 1000 - Date.now()));
        }
        console.log(
            `Following the live nwb-demo run ${run} (60 Hz) for ${o.followS} s, a sample every ${o.sampleS} s (JS heap after a forced GC; DOM nodes):\n`,
        );
        console.log(
            '| view | heap first / last / max | growth after warm-up | nodes first / last / max | bounded |',
        );
        console.log('|---|---:|---:|---:|---|');
        let pass = 0;
        let fail = 0;
        for (const v of views) {
            const s = v.samples;
            const warm = s.find((x) => x.at >= Math.min(30, o.followS / 4)) || s[0];
            const after = s.filter((x) => x.at >= warm.at);
            const slope = regressionPerHour(after.map((x) => [x.at, x.heap]));
            const last = s[s.length - 1];
            const bounded =
                last.heap <= warm.heap + HEAP_BOUND_MIB * 1048576 && last.nodes <= warm.nodes + NODES_BOUND;
            bounded ? pass++ : fail++;
            const max = (k) => Math.max(...s.map((x) => x[k]));
            console.log(
                `| ${v.name} | ${mib(s[0].heap)} / ${mib(last.heap)} / ${mib(max('heap'))} MiB | ${mib(last.heap - warm.heap)} MiB since ${warm.at.toFixed(0)} s (${mib(slope)} MiB/h) | ${s[0].nodes} / ${last.nodes} / ${max('nodes')} | ${bounded ? 'yes' : 'NO'} |`,
            );
            if (v.errors.length > 0) {
                console.log(`page errors (${v.name}): ${v.errors.slice(0, 5).join(' | ')}`);
            }
            await v.context.close();
        }
        console.log('');
        return { pass, fail };
    } finally {
        // The demo first, and waited for: it would spool into dir once the server is gone.
        if (demo.exitCode === null && demo.signalCode === null) {
            const gone = new Promise((resolve) => demo.once('exit', resolve));
            demo.kill('SIGTERM');
            const t = setTimeout(() => demo.kill('SIGKILL'), 10000);
            await gone;
            clearTimeout(t);
        }
        await server.stop();
    }
}

/** Least-squares slope of [seconds, bytes] points, in bytes an hour. */
function regressionPerHour(points) {
    if (points.length < 2) {
        return 0;
    }
    const n = points.length;
    const mx = points.reduce((a, [x]) => a + x, 0) / n;
    const my = points.reduce((a, [, y]) => a + y, 0) / n;
    let num = 0;
    let den = 0;
    for (const [x, y] of points) {
        num += (x - mx) * (y - my);
        den += (x - mx) * (x - mx);
    }
    return den === 0 ? 0 : (num / den) * 3600;
}

async function main() {
    const o = parseArgs(process.argv.slice(2));
    for (const exe of ['server/nwb-logserver', 'telemetry/nwb-telemetry', 'telemetry/nwb-demo']) {
        if (!existsSync(path.join(o.build, exe))) {
            console.error(
                `bench_viewer: ${path.join(o.build, exe)} is missing (build it: scripts/bench --only viewer)`,
            );
            process.exit(2);
        }
    }
    if (!existsSync(o.chromium)) {
        console.error(`bench_viewer: ${o.chromium} is missing (scripts/install-deps browser)`);
        process.exit(2);
    }
    const dir = mkdtempSync(path.join(o.tmp || tempRoot(4096), 'nwb-bench-viewer-'));
    const chromium = await chromiumApi();
    const browser = await chromium.launch({
        executablePath: o.chromium,
        headless: true,
        args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--enable-precise-memory-info'],
    });
    let pass = 0;
    let fail = 0;
    try {
        console.log('#### Viewer (`bench_viewer.mjs`)\n');
        if (o.firstRender) {
            const out = o.data || path.join(dir, 'out');
            const exe = path.join(o.build, 'server/nwb-logserver');
            let server = await startServer(exe, out);
            try {
                if (o.data === null || (await runId(server)) === null) {
                    const tel = await postTelemetry(server, o, dir);
                    const log = await postLog(server, o);
                    console.log(
                        `Prepared under ${out}: ${o.frames} frames in ${tel.uploads} uploads (${mib(tel.zBytes)} MiB zstd; synth ${(tel.genMs / 1000).toFixed(1)} s, POSTs ${(tel.postMs / 1000).toFixed(1)} s), a log of ${mib(log.bytes)} MiB (${log.records} records in ${log.batches} batches of ${mib(LOG_BODY_BYTES)} MiB, ${(log.postMs / 1000).toFixed(1)} s).\n`,
                    );
                } else {
                    console.log(`Reusing the run under ${out}.\n`);
                }
                // A server started on the stored run, as when a run is opened later: the
                // first frames request reads the run's telemetry from disk.
                await server.stop();
                server = await startServer(exe, out);
                await coldFrames(server);
                const r = await benchFirstRender(o, browser, server);
                pass += r.pass;
                fail += r.fail;
            } finally {
                await server.stop();
            }
        }
        if (o.follow) {
            const r = await benchFollow(o, browser, dir);
            pass += r.pass;
            fail += r.fail;
        }
    } finally {
        await browser.close();
        if (o.keep) {
            console.log(`kept: ${dir}`);
        } else {
            rmSync(dir, { recursive: true, force: true });
        }
    }
    console.log(`viewer targets: ${fail === 0 ? 'PASS' : 'FAIL'} (${pass} passed, ${fail} failed)`);
    process.exit(fail === 0 ? 0 : 1);
}

main().catch((err) => {
    console.error(`bench_viewer: ${err.stack || err}`);
    process.exit(1);
});
