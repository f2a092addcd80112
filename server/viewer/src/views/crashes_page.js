// views/crashes_page.js - #/crashes/<id>: one crash. What GET /v1/crashes/<id> says (the
// manifest's fields, the files, or why the upload was refused), then the package's own files
// through GET /v1/crashes/<id>/files/<name>: crash.txt with the signal called out and the
// backtrace one frame a line, the log tail the client kept, app.txt, the GPU files, every
// other file (text shown as text, binary offered for download); links to the run and to its
// log at the crash time (crashes_logpos.js), and the raw archive for download. A queued crash
// is redrawn when /v1/events says it settled. Every string here comes from the crashed
// program or its uploader: text only (dom.js).

import { followEvents, getJson } from '../api.js';
import { el, errorBox, linkRow, replace, table, waiting } from '../dom.js';
import { bytes, time } from '../format.js';
import { hashFor } from '../router.js';
import {
    archivePath,
    contentType,
    downloadButton,
    fetchText,
    filePath,
    isText,
    TEXT_SHOWN_MAX,
} from './crashes_files.js';
import { logOffsetAt, runIds, runKey } from './crashes_logpos.js';
import {
    addr2lineCommands,
    isoNs,
    logLevel,
    parseCrashTxt,
    parseKeyValues,
    splitLines,
} from './crashes_text.js';

/** The JSON of an event's data, or null if it is not JSON. */
export function parseEvent(e) {
    try {
        return JSON.parse(e.data);
    } catch {
        return null;
    }
}

export function statusBadge(status) {
    return el('span', { class: `status-${status} crash-status` }, status);
}

const SHOWN_FILES = new Set(['crash.txt', 'log_tail.txt', 'app.txt', 'manifest.txt']);

function isGpuFile(path) {
    return /^(gpu_|vk_device_fault)/.test(path);
}

/** A <pre> of @p text, cut at TEXT_SHOWN_MAX characters (said so). */
function textBlock(text, props = {}) {
    const cut = text.length > TEXT_SHOWN_MAX;
    return el(
        'div',
        null,
        el('pre', { class: 'crash-text', ...props }, cut ? text.slice(0, TEXT_SHOWN_MAX) : text),
        cut ? waiting(`Cut at ${bytes(TEXT_SHOWN_MAX)}: download the file for the rest.`) : null,
    );
}

/** The crash.txt section: the signal called out, the frames one a line, the registers. */
function backtraceSection(text) {
    const c = parseCrashTxt(text);
    const k = c.keys;
    const sig = k.get('signal') || '(no signal named)';
    const callout = el(
        'p',
        { class: 'crash-signal', id: 'crash-signal' },
        el('strong', { class: 'crash-signal-name' }, sig),
        k.has('code') ? ` (${k.get('code')})` : null,
        k.has('address') ? [' at address ', el('code', { id: 'crash-address' }, k.get('address'))] : null,
        k.has('thread_name') || k.has('thread_id')
            ? ` in thread ${k.get('thread_name') || '?'} (${k.get('thread_id') || '?'}${k.get('main_thread') === '1' ? ', main' : ''})`
            : null,
    );
    const frames = el(
        'ol',
        { class: 'crash-frames', id: 'crash-frames' },
        c.frames.map((f) => {
            const slash = f.module ? f.module.lastIndexOf('/') : -1;
            return el(
                'li',
                { class: 'crash-frame', dataset: { frame: String(f.index) } },
                el('span', { class: 'frame-index' }, `#${f.index}`),
                ' ',
                el('span', { class: 'frame-pc' }, f.pc),
                ' ',
                f.module
                    ? el(
                          'span',
                          { class: 'frame-module', title: f.module },
                          el('span', { class: 'frame-dir' }, f.module.slice(0, slash + 1)),
                          el('span', { class: 'frame-base' }, f.module.slice(slash + 1)),
                      )
                    : el('span', { class: 'frame-module' }, '?'),
                f.offset ? el('span', { class: 'frame-offset' }, `+${f.offset}`) : null,
            );
        }),
    );
    const cmds = addr2lineCommands(c.frames);
    const regs = [...c.registers];
    return [
        callout,
        c.notes.map((n) => el('p', { class: 'note' }, n)),
        c.frames.length > 0 ? frames : waiting('crash.txt has no backtrace frames.'),
        c.unparsed.length > 0 ? textBlock(c.unparsed.join('\n')) : null,
        cmds.length > 0
            ? el(
                  'details',
                  { class: 'crash-more' },
                  el('summary', null, 'Symbolise on the machine that has the binaries'),
                  el('pre', { class: 'crash-text', id: 'crash-addr2line' }, cmds.join('\n')),
              )
            : null,
        regs.length > 0
            ? el(
                  'details',
                  { class: 'crash-more' },
                  el('summary', null, `Registers (${k.get('arch') || c.registers.get('arch') || ''})`),
                  el(
                      'dl',
                      { class: 'fields crash-registers', id: 'crash-registers' },
                      regs.map(([name, v]) => [el('dt', null, name), el('dd', null, v)]),
                  ),
              )
            : null,
        c.other.map((s) => [el('h3', null, s.name), textBlock(s.lines.join('\n'))]),
        el(
            'details',
            { class: 'crash-more' },
            el('summary', null, 'crash.txt as sent'),
            textBlock(text, { id: 'crash-txt' }),
        ),
    ];
}

/** A log line as the page shows it: a nanosecond time made readable, the level marked. */
function logLine(line) {
    const m = /^([0-9]{19,20})(\s.*)$/.exec(line);
    const shown = m && isoNs(m[1]) ? `${isoNs(m[1])}${m[2]}` : line;
    const level = logLevel(line);
    return el(
        'span',
        { class: `crash-log-line${level ? ` level-${level.toLowerCase()}` : ''}` },
        shown,
        '\n',
    );
}

function logTailSection(text) {
    const lines = splitLines(text);
    return [
        el(
            'p',
            { class: 'note' },
            `The last ${lines.length} lines the client kept before the crash, oldest first.`,
        ),
        el('pre', { class: 'crash-text crash-log', id: 'crash-log-tail' }, lines.map(logLine)),
    ];
}

/**
 * A section that shows file @p path of crash @p id once fetched: @p draw(text) makes the
 * content (a plain <pre> by default). Files over TEXT_SHOWN_MAX bytes are not fetched.
 */
function fileSection(id, file, draw = (text) => textBlock(text), signal) {
    const box = el('div', { class: 'crash-file', dataset: { file: file.path } });
    if (file.bytes > TEXT_SHOWN_MAX) {
        replace(
            box,
            waiting(`${file.path} is ${bytes(file.bytes)}: too large to show here.`),
            downloadButton('Download', filePath(id, file.path), file.path),
        );
        return { box, loaded: Promise.resolve() };
    }
    replace(box, el('p', { class: 'note' }, `Loading ${file.path}…`));
    const loaded = fetchText(filePath(id, file.path), signal).then(
        (text) => replace(box, draw(text)),
        (err) => {
            if (!signal.aborted) {
                replace(box, errorBox(err));
            }
        },
    );
    return { box, loaded };
}

/** A <details> that fetches and shows file @p f the first time it is opened. */
function lazyFile(id, f, signal) {
    let shown = false;
    const body = el('div', { class: 'crash-file-body' });
    const d = el(
        'details',
        {
            class: 'crash-more',
            dataset: { file: f.path },
            on: {
                toggle: () => {
                    if (d.open && !shown) {
                        shown = true;
                        replace(body, fileSection(id, f, undefined, signal).box);
                    }
                },
            },
        },
        el('summary', null, el('span', { class: 'mono' }, f.path), ` (${bytes(f.bytes)})`),
        body,
    );
    return d;
}

function filesTable(id, files) {
    return table(
        [
            { title: 'Path', mono: true },
            { title: 'Size', num: true },
            { title: 'Type', mono: true },
            { title: '' },
        ],
        files.map((f) => [
            f.path,
            bytes(f.bytes),
            contentType(f.path),
            downloadButton('Download', filePath(id, f.path), f.path),
        ]),
        { id: 'crash-files' },
    );
}

/** The run link and the "log at the crash time" link, filled in once found. */
function runLinks(c, manifest, signal) {
    const box = el(
        'p',
        { class: 'links', id: 'crash-run-links' },
        el('span', { class: 'note' }, 'Looking for the run…'),
    );
    const crashTime = isoNs(manifest.get('crash_time_ns') || '');
    (async () => {
        // A run directory's program is a sanitised name (docs/protocol.md, "Ids"): any other
        // cannot have a run, and GET /v1/runs?program= would refuse it.
        const named = /^(?!\.)[A-Za-z0-9_.-]{1,64}$/.test(c.program);
        const ids = named ? await runIds({ program: c.program, signal }) : new Map();
        const run = ids.get(runKey(c.program, c.run));
        if (signal.aborted) {
            return;
        }
        if (run === undefined) {
            replace(
                box,
                el(
                    'span',
                    { class: 'note' },
                    `No run ${c.program} / ${c.run} on this server (or not among its newest 1000).`,
                ),
            );
            return;
        }
        const runLink = el('a', { href: hashFor('run', { run }), id: 'crash-run-link' }, 'The run');
        if (crashTime === null) {
            replace(
                box,
                runLink,
                ' · ',
                el('a', { href: hashFor('log', { run }), id: 'crash-log-link' }, 'Its log'),
                el('span', { class: 'note' }, ' (the manifest has no crash time)'),
            );
            return;
        }
        replace(box, runLink, ' · ', el('span', { class: 'note' }, 'Finding the crash time in its log…'));
        const at = await logOffsetAt(run, crashTime, signal);
        if (signal.aborted) {
            return;
        }
        const logLink = el(
            'a',
            {
                href: at.ended ? hashFor('log', { run }) : hashFor('log', { run }, { offset: at.offset }),
                id: 'crash-log-link',
                dataset: { offset: String(at.offset), ended: String(at.ended) },
            },
            at.ended ? 'Its log, at the end (the run ended at the crash)' : 'Its log at the crash time',
        );
        replace(
            box,
            runLink,
            ' · ',
            logLink,
            at.ended
                ? [
                      ' · ',
                      el(
                          'a',
                          { href: hashFor('log', { run }, { offset: at.offset }) },
                          'the line at the crash time',
                      ),
                  ]
                : null,
            el(
                'span',
                { class: 'note' },
                ` (byte ${at.offset} of ${bytes(at.size)}, ${at.probes} range reads)`,
            ),
        );
    })().catch((err) => {
        if (!signal.aborted) {
            replace(box, errorBox(err));
        }
    });
    return box;
}

function summaryFields(c, manifest) {
    const field = (name, value) =>
        value === undefined || value === null || value === ''
            ? null
            : [el('dt', null, name), el('dd', null, value)];
    return el(
        'dl',
        { class: 'fields crash-summary', id: 'crash-fields' },
        field('id', c.id),
        field('received', time(c.received)),
        field('crashed', manifest.has('crash_time') ? manifest.get('crash_time') : null),
        field('program', c.program),
        field('run', c.run),
        field('version', manifest.get('version')),
        field('build', [manifest.get('build_config'), manifest.get('build_id')].filter(Boolean).join(' ')),
        field('executable', manifest.get('executable')),
        field('kind', manifest.get('kind')),
        field('signal', c.signal || '-'),
        field('status', statusBadge(c.status)),
        field('archive', bytes(c.sizes?.archive)),
        field('extracted', bytes(c.sizes?.extracted)),
        manifest.get('incomplete') === '1'
            ? field('incomplete', 'yes: the handler died before it finished; the uploader recovered it')
            : null,
    );
}

export async function renderCrash(container, route, signal) {
    const id = route.params.crash;
    replace(
        container,
        el('h1', null, 'Crash ', el('span', { class: 'mono' }, id)),
        el('p', { class: 'note' }, 'Loading…'),
    );
    const c = await getJson(`/v1/crashes/${encodeURIComponent(id)}`, { signal });
    if (signal.aborted) {
        return;
    }
    const files = Array.isArray(c.files) ? c.files : [];
    const byPath = new Map(files.map((f) => [f.path, f]));
    const manifestText = byPath.has('manifest.txt')
        ? await fetchText(filePath(id, 'manifest.txt'), signal).catch(() => '')
        : '';
    if (signal.aborted) {
        return;
    }
    const manifest = parseKeyValues(splitLines(manifestText));
    const archive =
        c.sizes?.archive !== null && c.sizes?.archive !== undefined
            ? downloadButton(
                  `Download the raw archive (${bytes(c.sizes.archive)})`,
                  archivePath(id),
                  `${id}.archive`,
                  {
                      id: 'crash-archive',
                  },
              )
            : el('span', { class: 'note' }, 'The raw archive is no longer kept.');
    const parts = [
        el(
            'h1',
            null,
            'Crash of ',
            el('span', { id: 'crash-program' }, c.program || '(unknown program)'),
            ' ',
            statusBadge(c.status),
        ),
        linkRow([hashFor('crashes', {}, c.status === 'invalid' ? { tab: 'invalid' } : null), 'All crashes']),
        summaryFields(c, manifest),
        el('p', { class: 'toolbar' }, archive),
    ];
    const loads = [];
    if (c.reason !== undefined) {
        parts.push(
            el('h2', null, 'Why it was refused'),
            el('p', { class: 'error', id: 'crash-reason' }, c.reason),
        );
    }
    if (c.status === 'queued') {
        parts.push(
            waiting(
                'The server has stored this archive and will extract it next; this page updates when it does.',
            ),
        );
        const settled = new AbortController();
        signal.addEventListener('abort', () => settled.abort(), { once: true });
        followEvents('/v1/events', {
            signal: settled.signal,
            onEvent: (e) => {
                if (e.type === 'crash' && parseEvent(e)?.id === id && !settled.signal.aborted) {
                    settled.abort();
                    renderCrash(container, route, signal).catch((err) => {
                        if (!signal.aborted) {
                            replace(container, el('h1', null, 'Cannot show this crash'), errorBox(err));
                        }
                    });
                }
            },
        });
    }
    if (c.program && c.run) {
        parts.push(runLinks(c, manifest, signal));
    }
    const section = (title, sid, file, draw) => {
        const s = fileSection(id, file, draw, signal);
        loads.push(s.loaded);
        parts.push(el('h2', null, title), el('section', { id: sid }, s.box));
    };
    if (byPath.has('crash.txt')) {
        section('Backtrace', 'crash-backtrace', byPath.get('crash.txt'), backtraceSection);
    } else if (c.status === 'extracted') {
        parts.push(
            el('h2', null, 'Backtrace'),
            waiting('This package has no crash.txt (a GPU package, or the handler did not get that far).'),
        );
    }
    if (byPath.has('log_tail.txt')) {
        section('Log tail', 'crash-log', byPath.get('log_tail.txt'), logTailSection);
    }
    if (byPath.has('app.txt')) {
        section('app.txt (the game\u2019s crash hook)', 'crash-app', byPath.get('app.txt'));
    }
    const gpu = files.filter((f) => isGpuFile(f.path));
    if (gpu.length > 0) {
        parts.push(el('h2', null, 'GPU'));
        const box = el('section', { id: 'crash-gpu' });
        for (const f of gpu) {
            if (isText(f.path)) {
                const s = fileSection(id, f, undefined, signal);
                loads.push(s.loaded);
                box.append(el('h3', { class: 'mono' }, f.path), s.box);
            } else {
                box.append(
                    el(
                        'p',
                        null,
                        el('span', { class: 'mono' }, f.path),
                        ` ${bytes(f.bytes)} (binary) `,
                        downloadButton('Download', filePath(id, f.path), f.path),
                    ),
                );
            }
        }
        parts.push(box);
    }
    if (files.length > 0) {
        const others = files.filter((f) => !SHOWN_FILES.has(f.path) && !isGpuFile(f.path));
        parts.push(el('h2', null, 'Files'), filesTable(id, files));
        const lazy = [manifestText !== '' ? lazyFile(id, byPath.get('manifest.txt'), signal) : null];
        for (const f of others) {
            lazy.push(isText(f.path) ? lazyFile(id, f, signal) : null);
        }
        parts.push(el('div', { id: 'crash-other-files' }, lazy));
    }
    replace(container, ...parts);
    await Promise.all(loads);
    if (!signal.aborted) {
        container.dataset.ready = 'true';
    }
}
