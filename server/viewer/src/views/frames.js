// views/frames.js - #/runs/<id>/frames[/<n>][?from=&to=]: a run's telemetry, the profiler
// view. The frame-time chart of a window of frames (frames_chart.js, GET /v1/runs/<id>/frames
// with points = the chart's width in pixels, asked again for every zoom and pan), the window in
// the URL; with a frame number, that frame below it (frames_detail.js, GET .../frames/<n>);
// then the report's worst frames, scopes, memory, frame graph and diagnostics (GET
// /v1/runs/<id>/telemetry). A "telemetry" event of /v1/events for the run refreshes the report
// and, when the chart shows the run's end, the window, at most twice a second. Keys: Left/Right
// (previous/next frame, or pan), w (worst frame), + / - / 0 (zoom, reset), Esc (back to the chart).

import { ApiError, followEvents, getJson } from '../api.js';
import { el, errorBox, idHeading, linkRow, replace } from '../dom.js';
import { hashFor } from '../router.js';
import { FrameChart } from './frames_chart.js';
import { frameLinks, frameNav, renderFrameDetail } from './frames_detail.js';
import { frameGraphSection } from './frames_graph.js';
import { diagnosticsSection, worstSection } from './frames_lists.js';
import { renderMemory } from './frames_memory.js';
import { scopeSection } from './frames_scopes.js';
import {
    clampWindow,
    coalescer,
    count,
    framePath,
    framesPath,
    ms,
    panWindow,
    queryOfWindow,
    reportPath,
    runPath,
    windowOfQuery,
    zoomWindow,
} from './frames_util.js';

const REFRESH_GAP_MS = 500; // live refreshes: at most two a second
const WINDOW_GAP_MS = 60; // zoom and pan reloads while the wheel turns
const PAN_STEP = 0.25; // of the window, for the buttons and keys
const ZOOM_STEP = 0.5;

function button(text, id, onClick, title) {
    return el('button', { type: 'button', id, title, on: { click: onClick } }, text);
}

export async function renderFrames(container, route, signal) {
    const run = route.params.run;
    const selected = route.params.frame !== undefined ? Number(route.params.frame) : null;
    const st = { win: windowOfQuery(route.query), answer: null, report: null, runInfo: null, detail: null };
    const cleanups = [];
    signal.addEventListener('abort', () => cleanups.forEach((fn) => fn()), { once: true });

    const summary = el('p', { class: 'frames-summary', id: 'frames-summary' }, 'Loading the frames…');
    const liveNote = el('span', { class: 'live-state', id: 'frames-live' });
    const windowNote = el('span', { class: 'note', id: 'frames-window' });
    const chartBox = el('div', { class: 'chart frames-chart', id: 'frames-chart' });
    const detailBox = el('section', { class: 'frame-detail', id: 'frame-detail' });
    const worstBox = el('div', { id: 'frames-worst-box' });
    const scopesBox = el('div', { id: 'frames-scopes' });
    const memoryBox = el('div', { id: 'frames-memory' });
    const graphBox = el('div', { id: 'frames-graph' });
    const diagBox = el('div', { id: 'frames-diag' });
    const message = el('div', { id: 'frames-message' });
    const toolbar = el(
        'div',
        { class: 'toolbar frames-toolbar', id: 'frames-toolbar' },
        button('◀ Pan', 'frames-pan-left', () => pan(-PAN_STEP), 'Show earlier frames (Left)'),
        button('Pan ▶', 'frames-pan-right', () => pan(PAN_STEP), 'Show later frames (Right)'),
        button('Zoom in', 'frames-zoom-in', () => zoom(ZOOM_STEP), 'Zoom in (+)'),
        button('Zoom out', 'frames-zoom-out', () => zoom(1 / ZOOM_STEP), 'Zoom out (-)'),
        button(
            'Reset zoom',
            'frames-zoom-reset',
            () => setWindow({ from: null, to: null }, true),
            'The whole run (0)',
        ),
        button('Worst frame', 'frames-worst', () => openWorst(), 'The run\u2019s slowest frame (w)'),
        button(
            'Worst in view',
            'frames-worst-view',
            () => openWorstInView(),
            'The slowest frame of the window',
        ),
        windowNote,
        liveNote,
    );
    const keysNote = el(
        'p',
        { class: 'note keys' },
        'Drag across the chart to zoom into those frames, the wheel pans (Ctrl+wheel zooms), click to open the slowest frame under the pointer. Keys: ',
        selected === null
            ? '← → pan, + − zoom, 0 whole run, w worst frame.'
            : '← → previous / next frame, w worst frame, Esc back to the chart, + − zoom, 0 whole run.',
    );
    replace(
        container,
        idHeading('Frames of run ', run, selected !== null ? ` · frame ${selected}` : ''),
        linkRow(
            [hashFor('run', { run }), 'Run'],
            [hashFor('log', { run }), 'Log of this run'],
            [hashFor('runs'), 'All runs'],
        ),
        summary,
        message,
        toolbar,
        chartBox,
        keysNote,
        selected !== null ? detailBox : null,
        el('h2', null, 'Worst frames'),
        worstBox,
        el('h2', null, 'Scopes'),
        scopesBox,
        el('h2', null, 'Memory'),
        memoryBox,
        selected === null ? [el('h2', null, 'Frame graph'), graphBox] : null,
        el('h2', null, 'Diagnostics'),
        diagBox,
    );

    const chart = new FrameChart(chartBox, {
        onZoom: (w) => setWindow(w, true),
        onWheel: (kind, amount, center) =>
            kind === 'zoom' ? zoom(amount, center, false) : pan(amount, false),
        onPick: (frame) => openFrame(frame),
    });
    cleanups.push(() => chart.destroy());
    let memoryView = null;
    let flame = null;
    cleanups.push(() => memoryView?.destroy());
    cleanups.push(() => flame?.destroy());

    const bounds = () =>
        st.answer && st.answer.firstFrame !== null
            ? { first: st.answer.firstFrame, last: st.answer.lastFrame }
            : null;
    const query = () => queryOfWindow(st.win);
    const showsEnd = () => st.win.to === null || (st.answer !== null && st.win.to >= st.answer.lastFrame);

    function openFrame(frame) {
        window.location.hash = hashFor('frame', { run, frame }, query());
    }
    function openWorst() {
        const w = st.report?.frames?.worst?.[0];
        if (w) {
            openFrame(w.frame);
        }
    }
    function openWorstInView() {
        const buckets = st.answer?.buckets || [];
        let best = null;
        for (const b of buckets) {
            if (best === null || b.maxMs > best.maxMs) {
                best = b;
            }
        }
        if (best) {
            openFrame(best.maxFrame);
        }
    }

    function writeUrl(push) {
        const hash = hashFor(selected === null ? 'frames' : 'frame', { run, frame: selected }, query());
        if (hash !== window.location.hash) {
            window.history[push ? 'pushState' : 'replaceState'](null, '', hash);
        }
    }

    /** A new window: into the URL (a history entry when @p push), the chart, the server. */
    function setWindow(win, push = false) {
        const b = bounds();
        st.win = b ? clampWindow(win, b) : win;
        writeUrl(push);
        if (b) {
            chart.preview({ from: st.win.from ?? b.first, to: st.win.to ?? b.last });
        }
        if (st.detail) {
            drawDetailNav();
        }
        windowLoader.request();
    }
    function pan(fraction, push = false) {
        const b = bounds();
        if (b) {
            setWindow(panWindow(st.win, b, fraction), push);
        }
    }
    function zoom(factor, center, push = true) {
        const b = bounds();
        if (b) {
            setWindow(zoomWindow(st.win, b, factor, center), push);
        }
    }

    function drawSummary() {
        const a = st.answer;
        if (!a) {
            return;
        }
        const f = st.report?.frames;
        const over = a.budgetMs > 0 ? a.buckets.filter((b) => b.maxMs > a.budgetMs).length : 0;
        const live = st.runInfo ? (st.runInfo.live ? 'live' : 'ended') : null;
        replace(
            summary,
            el(
                'strong',
                { id: 'frames-count', dataset: { frames: String(a.runFrames) } },
                `${count(a.runFrames)} frames`,
            ),
            a.firstFrame !== null ? ` (${count(a.firstFrame)}–${count(a.lastFrame)})` : '',
            a.untrackedFrames ? `, ${count(a.untrackedFrames)} past the frame table (not charted)` : '',
            ` · budget ${ms(a.budgetMs)} · p50 ${ms(a.p50Ms)} · p90 ${ms(a.p90Ms)} · p99 ${ms(a.p99Ms)}`,
            f ? ` · mean ${ms(f.meanMs)} · max ${ms(f.maxMs)}` : '',
            a.percentileRelativeError > 0
                ? ` (percentiles within ${(a.percentileRelativeError * 100).toFixed(1)} %)`
                : '',
            ' · ',
            el(
                'span',
                { class: over > 0 ? 'over-budget' : null, id: 'frames-hitches' },
                a.bucketFrames === 1
                    ? `${count(over)} frames over budget in view`
                    : `${count(over)} of ${count(a.buckets.length)} buckets with a frame over budget in view`,
            ),
            live ? [' · ', el('span', { class: `run-${live}`, id: 'frames-run-state' }, live)] : '',
        );
        replace(
            windowNote,
            a.frames === 0
                ? 'no frames in this window'
                : `frames ${count(a.from)}–${count(a.to)}: ${count(a.frames)} frames in ${count(a.buckets.length)} points of ${count(a.bucketFrames)}`,
        );
    }

    function drawMarks() {
        chart.setMarks({
            worst: st.report?.frames?.worst || [],
            diagnostics: st.report?.diagnostics?.listed || [],
            selected,
        });
    }

    function drawReport() {
        const r = st.report;
        replace(worstBox, worstSection(r, run, query()));
        replace(scopesBox, scopeSection(r));
        memoryView?.destroy();
        memoryView = renderMemory(memoryBox, r);
        if (selected === null) {
            replace(graphBox, frameGraphSection(r));
        }
        replace(diagBox, diagnosticsSection(r, run, query()));
        drawMarks();
        drawSummary();
    }

    let navBox = null;
    function drawDetailNav() {
        const worst = st.report?.frames?.worst?.[0]?.frame ?? null;
        const next = frameNav(frameLinks(run, selected, bounds(), worst, query()));
        navBox?.replaceWith(next);
        navBox = next;
    }
    function drawDetail() {
        flame?.destroy();
        flame = renderFrameDetail(detailBox, st.detail, {
            budgetMs: st.answer?.budgetMs ?? 0,
            links: frameLinks(run, selected, bounds(), st.report?.frames?.worst?.[0]?.frame ?? null, query()),
            report: st.report,
        });
        navBox = detailBox.querySelector('nav.frame-nav');
    }

    async function loadWindow() {
        const want = { ...st.win };
        const answer = await getJson(framesPath(run, want, chart.points()), { signal });
        if (signal.aborted || want.from !== st.win.from || want.to !== st.win.to) {
            return; // a newer window was asked for meanwhile: its load follows
        }
        st.answer = answer;
        chart.draw(answer, { from: answer.from, to: Math.max(answer.to, answer.from) });
        drawSummary();
    }
    const windowLoader = coalescer(loadWindow, WINDOW_GAP_MS, showError);
    cleanups.push(() => windowLoader.stop());

    // @p known: the run's object when the caller has just read it (start), else it is read.
    async function loadReport(known = null) {
        const [report, runInfo] = await Promise.all([
            getJson(reportPath(run), { signal }),
            known ?? getJson(runPath(run), { signal }).catch(() => null),
        ]);
        if (signal.aborted) {
            return;
        }
        st.report = report;
        st.runInfo = runInfo;
        drawReport();
    }

    function showError(err) {
        if (!signal.aborted && !(err instanceof DOMException && err.name === 'AbortError')) {
            replace(message, errorBox(err));
        }
    }

    let started = false;
    async function start() {
        // The run says whether it has telemetry: without, nothing is asked that would be a 404
        // (each of which the browser's console reports as a failed load).
        const info = await getJson(runPath(run), { signal });
        if (info && info.telemetry === false) {
            throw new ApiError(404, 'the run has no telemetry yet', runPath(run));
        }
        const detailLoad =
            selected === null
                ? Promise.resolve(null)
                : getJson(framePath(run, selected), { signal }).catch((err) => err);
        await Promise.all([loadWindow(), loadReport(info)]);
        const detail = await detailLoad;
        if (signal.aborted) {
            return;
        }
        started = true;
        replace(message);
        if (detail instanceof Error) {
            replace(
                detailBox,
                el('h2', null, `Frame ${count(selected)}`),
                frameNav(
                    frameLinks(
                        run,
                        selected,
                        bounds(),
                        st.report?.frames?.worst?.[0]?.frame ?? null,
                        query(),
                    ),
                ),
                errorBox(detail),
            );
            navBox = detailBox.querySelector('nav.frame-nav');
        } else if (detail !== null) {
            st.detail = detail;
            drawDetail();
        }
        container.dataset.ready = 'true';
    }

    const refresher = coalescer(
        async () => {
            if (!started) {
                try {
                    await start();
                } catch (err) {
                    if (!(err instanceof ApiError && err.status === 404)) {
                        throw err;
                    }
                }
                return;
            }
            const end = showsEnd();
            await loadReport();
            if (end) {
                if (st.win.to !== null) {
                    st.win = { from: st.win.from, to: null }; // keep following the end
                    writeUrl(false);
                }
                await loadWindow();
            }
        },
        REFRESH_GAP_MS,
        showError,
    );
    cleanups.push(() => refresher.stop());

    followEvents('/v1/events', {
        signal,
        onEvent: (e) => {
            let data = null;
            try {
                data = JSON.parse(e.data);
            } catch {
                return;
            }
            if (e.type === 'reset' || ((e.type === 'telemetry' || e.type === 'run') && data?.id === run)) {
                refresher.request();
            }
        },
        onState: (state) => {
            replace(
                liveNote,
                state === 'open' ? 'following live' : state === 'reconnecting' ? 'reconnecting…' : 'not live',
            );
            liveNote.dataset.state = state;
        },
    });

    const onKey = (e) => {
        if (e.ctrlKey || e.altKey || e.metaKey || e.isComposing) {
            return;
        }
        const t = e.target;
        if (
            t instanceof HTMLInputElement ||
            t instanceof HTMLTextAreaElement ||
            t instanceof HTMLSelectElement
        ) {
            return;
        }
        const links =
            selected === null
                ? null
                : frameLinks(run, selected, bounds(), st.report?.frames?.worst?.[0]?.frame ?? null, query());
        const go = (hash) => {
            if (hash) {
                window.location.hash = hash;
            }
        };
        switch (e.key) {
            case 'ArrowLeft':
                if (links) {
                    go(links.prev);
                } else {
                    pan(-PAN_STEP);
                }
                break;
            case 'ArrowRight':
                if (links) {
                    go(links.next);
                } else {
                    pan(PAN_STEP);
                }
                break;
            case 'w':
            case 'W':
                openWorst();
                break;
            case 'Escape':
                if (links) {
                    go(links.back);
                }
                break;
            case '+':
            case '=':
                zoom(ZOOM_STEP);
                break;
            case '-':
                zoom(1 / ZOOM_STEP);
                break;
            case '0':
                setWindow({ from: null, to: null }, true);
                break;
            default:
                return;
        }
        e.preventDefault();
    };
    document.addEventListener('keydown', onKey);
    cleanups.push(() => document.removeEventListener('keydown', onKey));

    // The chart follows its box (a window resize, a scrollbar appearing) and asks the server
    // again when its width in pixels, so its points, changed.
    let resizeTimer = null;
    let lastWidth = chartBox.clientWidth;
    const observer = new ResizeObserver(() => {
        if (chartBox.clientWidth === lastWidth) {
            return;
        }
        lastWidth = chartBox.clientWidth;
        clearTimeout(resizeTimer);
        resizeTimer = setTimeout(() => {
            const before = chart.points();
            chart.resize(chartBox.clientWidth);
            memoryView?.resize?.();
            if (chart.points() !== before && st.answer) {
                windowLoader.request();
            }
        }, 100);
    });
    observer.observe(chartBox);
    cleanups.push(() => {
        observer.disconnect();
        clearTimeout(resizeTimer);
    });

    try {
        await start();
    } catch (err) {
        if (signal.aborted) {
            return;
        }
        if (err instanceof ApiError && err.status === 404) {
            // No telemetry yet (or no such run): the run's first upload sends an event.
            replace(
                message,
                el(
                    'p',
                    { class: 'waiting', id: 'frames-waiting' },
                    `No telemetry to show (${err.reason}). The view fills in when the run's first telemetry upload arrives.`,
                ),
            );
            replace(summary, 'No frames yet.');
            container.dataset.ready = 'true';
            return;
        }
        throw err;
    }
}
