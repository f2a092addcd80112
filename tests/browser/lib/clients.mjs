// tests/browser/lib/clients.mjs - the real clients the runs, log and follow tests drive against
// the harness's server: nwb-log (one line, or stdin's lines, through the logger client), nwb-demo
// (a live game run), plain POST /v1/log (text/plain, or a binary batch when a flag the text form
// cannot carry is needed: the DROPNOTE of a gap line), and the run id the server made for a
// program and run (GET /v1/runs). Paths come from ctest's environment (tests/browser/CMakeLists.txt).

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

import { SKIP, waitFor } from './harness.mjs';

export const logExe = process.env.NWB_TEST_LOG_EXE || '';
export const demoExe = process.env.NWB_TEST_DEMO_EXE || '';

/** Exit 77 when @p exe was not built (e.g. nwb-demo needs the crash and telemetry modules). */
export function requireExe(exe, what) {
    if (!exe || !existsSync(exe)) {
        console.log(`SKIP: ${what} is not built in this configuration (${exe || 'not configured'})`);
        process.exit(SKIP);
    }
}

/** Run @p exe with @p args (stdin @p input); resolves {code, stdout, stderr}. */
function run(exe, args, { input = null, env = {} } = {}) {
    return new Promise((resolve, reject) => {
        const child = spawn(exe, args, {
            stdio: [input === null ? 'ignore' : 'pipe', 'pipe', 'pipe'],
            env: { ...process.env, ...env },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        child.on('error', reject);
        child.on('exit', (code, sig) => resolve({ code: code ?? sig, stdout, stderr }));
        if (input !== null) {
            child.stdin.end(input);
        }
    });
}

/**
 * nwb-log: @p message as one record (or @p lines, one record each, through stdin) for program
 * @p program, run @p runId; resolves once it exited 0, which it does after the server's 200.
 */
export async function nwbLog(server, { program, runId, level = 'info', message = null, lines = null }) {
    const args = [
        `--logserver=127.0.0.1:${server.port}`,
        '--program',
        program,
        '--run',
        runId,
        '--level',
        level,
    ];
    const input = lines === null ? null : `${lines.join('\n')}\n`;
    const r = await run(logExe, message === null ? args : [...args, '--', message], { input });
    if (r.code !== 0) {
        throw new Error(`nwb-log exited ${r.code}: ${r.stderr}`);
    }
}

/** Start nwb-demo against @p server with @p args; returns {done: Promise<{code,...}>, kill()}. */
export function startDemo(server, args = []) {
    const child = spawn(demoExe, [`--logserver=127.0.0.1:${server.port}`, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const done = new Promise((resolve) =>
        child.on('exit', (code, sig) => resolve({ code: code ?? sig, stdout, stderr })),
    );
    return {
        done,
        kill: () => child.exitCode === null && child.kill('SIGKILL'),
    };
}

/** POST text/plain @p text as program @p program, run @p runId (one INFO record per line). */
export async function postText(server, program, runId, text) {
    const res = await fetch(`${server.url}/v1/log`, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain', 'X-NWB-Program': program, 'X-NWB-Run': runId },
        body: text,
    });
    if (res.status !== 200) {
        throw new Error(`POST /v1/log: ${res.status} ${await res.text()}`);
    }
}

/**
 * POST a binary log batch (docs/protocol.md, "Log-batch format v1") of @p records
 * [{level: 0..3, flags, msg, threadName}] as program @p program, run @p runId; a threadName
 * (1..15 bytes) goes in a tagged field (TAGGED flag 0x08, tag 1).
 */
export async function postBatch(server, program, runId, records) {
    const parts = records.map((r) => {
        const msg = Buffer.from(r.msg);
        const name = r.threadName ? Buffer.from(r.threadName) : null;
        const tags = name ? Buffer.concat([Buffer.from([1, name.length]), name]) : Buffer.alloc(0);
        const head = Buffer.alloc(32);
        head.writeUInt32LE(32 + msg.length + tags.length, 0);
        head.writeUInt8(r.level ?? 0, 4);
        head.writeUInt8((r.flags ?? 0) | (name ? 0x08 : 0), 5);
        head.writeUInt16LE(0, 6);
        head.writeBigUInt64LE(BigInt(Date.now()) * 1000000n, 8);
        head.writeBigUInt64LE(4242n, 16);
        head.writeUInt32LE(0, 24);
        head.writeUInt32LE(msg.length, 28);
        return Buffer.concat([head, msg, tags]);
    });
    const payload = Buffer.concat(parts);
    const header = Buffer.alloc(16);
    header.writeUInt32LE(0x4c42574e, 0);
    header.writeUInt16LE(1, 4);
    header.writeUInt16LE(16, 6);
    header.writeUInt32LE(records.length, 8);
    header.writeUInt32LE(payload.length, 12);
    const res = await fetch(`${server.url}/v1/log`, {
        method: 'POST',
        headers: {
            'Content-Type': 'application/x-nwb-log-batch',
            'X-NWB-Program': program,
            'X-NWB-Run': runId,
        },
        body: Buffer.concat([header, payload]),
    });
    if (res.status !== 200) {
        throw new Error(`POST /v1/log (batch): ${res.status} ${await res.text()}`);
    }
}

/** The DROPNOTE flag of a record: a gap line the client wrote where it lost records. */
export const DROPNOTE = 0x04;

/** The run directory id of @p program (and @p runId when given), once GET /v1/runs lists it. */
export async function runIdOf(server, program, runId = null, ms = 10000) {
    return waitFor(
        `a run of ${program}${runId ? ` ${runId}` : ''} in GET /v1/runs`,
        async () => {
            const { runs } = await (await fetch(`${server.url}/v1/runs?program=${program}`)).json();
            const r = runs.find((x) => runId === null || x.run === runId);
            return r ? r.id : null;
        },
        ms,
    );
}
