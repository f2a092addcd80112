// views/frames.js - #/runs/<id>/frames[/<n>]: a run's telemetry. A shell until the read API is
// in the server (GET /v1/runs/<id>/frames, /frames/<n>, /telemetry); it already draws an
// empty frame-time chart with uPlot (embedded from server/viewer/node_modules at build time).

import { el, idHeading, linkRow, replace, waiting } from '../dom.js';
import { hashFor } from '../router.js';

export async function renderFrames(container, route, signal) {
    const run = route.params.run;
    const frame = route.params.frame;
    const chart = el('div', { class: 'chart', id: 'frames-chart' });
    replace(
        container,
        idHeading('Frames of run ', run, frame !== undefined ? ` · frame ${frame}` : ''),
        linkRow([hashFor('log', { run }), 'Log of this run'], [hashFor('runs'), 'All runs']),
        chart,
        waiting(
            `Frame times, scopes, memory and the frame graph wait for the read API (GET /v1/runs/${run}/frames${frame !== undefined ? `/${frame}` : ''}).`,
        ),
    );
    const { default: uPlot } = await import('../uPlot.esm.js');
    if (signal.aborted) {
        return;
    }
    const plot = new uPlot(
        {
            width: Math.max(320, Math.min(1200, container.clientWidth - 4)),
            height: 220,
            series: [{ label: 'frame' }, { label: 'frame time (ms)', stroke: '#1d6fa5' }],
            scales: { x: { time: false } },
            axes: [{ label: 'frame' }, { label: 'ms' }],
        },
        [[], []],
        chart,
    );
    signal.addEventListener('abort', () => plot.destroy(), { once: true });
}
