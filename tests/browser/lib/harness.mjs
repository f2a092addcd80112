// tests/browser/lib/harness.mjs - what the viewer's browser tests share: the real
// nwb-logserver on 127.0.0.1 port 0 (a fresh --out each), Debian's chromium headless through
// playwright-core (from server/viewer/node_modules, no browser download), pages that record
// console errors, page errors, CSP violations and every request URL, screenshots into the
// build folder, and crash uploads. Paths come from ctest's environment (tests/browser/CMakeLists.txt).

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { pathToFileURL } from 'node:url';

import { readyAfter, waitFor } from './wait.mjs';

export { readyAfter, waitFor };

export const SKIP = 77; // ctest SKIP_RETURN_CODE

const env = (name) => {
    const v = process.env[name];
    if (!v) {
        console.error(`harness: ${name} is not set (run the test through ctest)`);
        process.exit(2);
    }
    return v;
};

export const serverExe = env('NWB_TEST_SERVER_EXE');
export const chromiumPath = process.env.NWB_TEST_CHROMIUM || '/usr/bin/chromium';
export const artifactsDir = env('NWB_TEST_ARTIFACTS');

/** Exit 77 (ctest: skipped) when the machine has no chromium, saying which facility. */
export function requireChromium() {
    if (!existsSync(chromiumPath)) {
        console.log(
            `SKIP: ${chromiumPath} is not installed (Debian's chromium: scripts/install-deps browser)`,
        );
        process.exit(SKIP);
    }
}

let playwright = null;
async function chromiumApi() {
    if (playwright === null) {
        const mod = path.join(env('NWB_TEST_NODE_MODULES'), 'playwright-core', 'index.mjs');
        playwright = await import(pathToFileURL(mod).href);
    }
    return playwright.chromium;
}

/**
 * Start nwb-logserver --port 0 --out <fresh dir> ...@p args and wait (10 s at most) for its
 * "listening on http://HOST:PORT" line. Returns {url, port, dir, stderr(), stop()}.
 */
export async function startServer(args = []) {
    const dir = mkdtempSync(path.join(process.env.TMPDIR || tmpdir(), 'nwb-browser-'));
    const child = spawn(serverExe, ['--port', '0', '--out', path.join(dir, 'out'), ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => {
        err += d;
    });
    const exited = new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, sig })));
    const port = await new Promise((resolve, reject) => {
        const timer = setTimeout(
            () => reject(new Error(`nwb-logserver did not listen within 10 s: ${err}`)),
            10000,
        );
        child.stdout.on('data', (d) => {
            out += d;
            const m = /listening on http:\/\/[^:]+:([0-9]+)/.exec(out);
            if (m) {
                clearTimeout(timer);
                resolve(Number(m[1]));
            }
        });
        exited.then(({ code, sig }) => {
            clearTimeout(timer);
            reject(new Error(`nwb-logserver exited (${code ?? sig}) before listening: ${err}`));
        });
    });
    return {
        port,
        dir,
        url: `http://127.0.0.1:${port}`,
        stderr: () => err,
        async stop() {
            if (child.exitCode === null && child.signalCode === null) {
                child.kill('SIGTERM');
                const t = setTimeout(() => child.kill('SIGKILL'), 10000);
                const r = await exited;
                clearTimeout(t);
                if (r.code !== 0) {
                    throw new Error(`nwb-logserver exited with ${r.code ?? r.sig} after SIGTERM: ${err}`);
                }
            }
            rmSync(dir, { recursive: true, force: true });
        },
    };
}

/** Debian's chromium, headless (no sandbox as root: it refuses to start otherwise). */
export async function launchBrowser() {
    const chromium = await chromiumApi();
    const args = process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [];
    return chromium.launch({
        executablePath: chromiumPath,
        headless: true,
        args,
        timeout: 30000,
    });
}

/**
 * The usual test file's fixture: before its tests, a server (with @p args) and a browser, then
 * @p prepare(ctx); after them, both closed (a server that does not stop cleanly on SIGTERM
 * fails the file). Returns ctx, whose server and browser are set by the time tests run.
 */
export function useServerAndBrowser(args = [], prepare = async () => {}) {
    const ctx = { server: null, browser: null };
    before(async () => {
        ctx.server = await startServer(args);
        ctx.browser = await launchBrowser();
        await prepare(ctx);
    });
    after(async () => {
        await ctx.browser?.close();
        await ctx.server?.stop();
    });
    return ctx;
}

/**
 * A new page (own context: own sessionStorage) that records what went wrong: errors
 * (console errors and uncaught exceptions), csp (securitypolicyviolation events) and urls
 * (every request).
 */
export async function newPage(browser) {
    const context = await browser.newContext({
        viewport: { width: 1200, height: 760 },
    });
    const page = await context.newPage();
    const seen = { errors: [], csp: [], urls: [] };
    await page.addInitScript(() => {
        window.__nwbCsp = [];
        document.addEventListener('securitypolicyviolation', (e) => {
            window.__nwbCsp.push(`${e.violatedDirective} ${e.blockedURI}`);
        });
    });
    page.on('console', (m) => {
        if (m.type() === 'error') {
            seen.errors.push(`console: ${m.text()}`);
        }
    });
    page.on('pageerror', (e) => seen.errors.push(`pageerror: ${e.message}`));
    page.on('request', (r) => seen.urls.push(r.url()));
    seen.cspNow = async () => page.evaluate(() => window.__nwbCsp.slice());
    return { context, page, seen };
}

/** Save a screenshot of @p page as <build>/tests/browser/screenshots/@p name.png. */
export async function screenshot(page, name) {
    const dir = path.join(artifactsDir, 'screenshots');
    mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: path.join(dir, `${name}.png`) });
}

/**
 * POST a crash package (a tar holding manifest.txt with @p manifest's key=value lines, plus
 * @p files {name: text}) to @p server; returns the id once GET /v1/crashes/<id> says
 * @p status ('extracted' by default).
 */
export async function uploadCrash(
    server,
    { manifest, files = {}, headers = {}, status = 'extracted', raw = null },
) {
    let body = raw;
    if (body === null) {
        const dir = mkdtempSync(path.join(process.env.TMPDIR || tmpdir(), 'nwb-crashpkg-'));
        const lines = ['nwb-crash-manifest 1', ...Object.entries(manifest).map(([k, v]) => `${k}=${v}`)];
        writeFileSync(path.join(dir, 'manifest.txt'), `${lines.join('\n')}\n`);
        for (const [name, text] of Object.entries(files)) {
            writeFileSync(path.join(dir, name), text);
        }
        const tar = spawnSync('tar', ['-cf', '-', '-C', dir, 'manifest.txt', ...Object.keys(files)], {
            maxBuffer: 64 << 20,
        });
        rmSync(dir, { recursive: true, force: true });
        if (tar.status !== 0) {
            throw new Error(`tar failed: ${tar.stderr}`);
        }
        body = tar.stdout;
    }
    const res = await fetch(`${server.url}/v1/crash`, {
        method: 'POST',
        headers,
        body,
    });
    if (res.status !== 200) {
        throw new Error(`POST /v1/crash: ${res.status} ${await res.text()}`);
    }
    const { id } = await res.json();
    await waitFor(`crash ${id} to be ${status}`, async () => {
        const r = await fetch(`${server.url}/v1/crashes/${id}`, { headers });
        return r.status === 200 && (await r.json()).status === status;
    });
    return id;
}

/** The text of @p selector once it appears (10 s at most). */
export async function textOf(page, selector) {
    await page.waitForSelector(selector, { timeout: 10000 });
    return page.textContent(selector);
}

/**
 * The text of @p selector once it contains @p want (a string) or matches it (a RegExp), 10 s
 * at most: for elements that are there before their data is.
 */
export async function textWhen(page, selector, want) {
    const arg = typeof want === 'string' ? { text: want } : { source: want.source, flags: want.flags };
    await page.waitForFunction(
        ([sel, w]) => {
            const t = document.querySelector(sel)?.textContent;
            return (
                t != null &&
                (w.text !== undefined ? t.includes(w.text) : new RegExp(w.source, w.flags).test(t))
            );
        },
        [selector, arg],
        { timeout: 10000 },
    );
    return page.textContent(selector);
}
