// views/frames_flame.js - one frame's CPU scopes as a nested timeline (flame-style, on a
// canvas): a lane per thread, a row per depth, each scope a box from its start to its end with
// its name and duration when they fit. Hovering a box shows its name, duration, start (from the
// frame's start), thread and depth; the wheel zooms around the pointer, dragging pans, a double
// click shows the whole frame again. Data: the "threads" of GET /v1/runs/<id>/frames/<frame>.

import { el } from '../dom.js';
import { colorOf, ms } from './frames_util.js';

const ROW_PX = 18;
const LANE_HEAD_PX = 18;
const LANE_GAP_PX = 6;

/** The boxes of @p detail's threads, with lanes and the time span they cover. */
function layout(detail) {
    let t0 = Number(detail.startNs);
    let t1 = t0 + Number(detail.durationMs) * 1e6;
    const lanes = [];
    let y = 0;
    for (const th of detail.threads || []) {
        let depthMax = 0;
        for (const s of th.scopes) {
            t0 = Math.min(t0, Number(s.startNs));
            t1 = Math.max(t1, Number(s.endNs));
            depthMax = Math.max(depthMax, Number(s.depth));
        }
        const rows = depthMax + 1;
        lanes.push({ thread: th.thread, top: y, rows, scopes: th.scopes });
        y += LANE_HEAD_PX + rows * ROW_PX + LANE_GAP_PX;
    }
    return { t0, t1: Math.max(t1, t0 + 1), lanes, height: Math.max(y, ROW_PX * 2) };
}

/** Draws the flame of @p detail into @p parent; returns {destroy()}. */
export function createFlame(parent, detail) {
    const geo = layout(detail);
    const canvas = el('canvas', {
        class: 'flame-canvas',
        id: 'frame-flame',
        role: 'img',
        'aria-label': `CPU scopes of frame ${detail.frame} on ${geo.lanes.length} threads`,
    });
    const tip = el('div', { class: 'flame-tip', id: 'frame-flame-tip', hidden: true });
    const box = el('div', { class: 'flame' }, canvas, tip);
    parent.appendChild(box);
    const view = { t0: geo.t0, t1: geo.t1 };
    let hits = [];
    let drag = null;

    function draw() {
        const r = window.devicePixelRatio || 1;
        const w = Math.max(320, box.clientWidth);
        canvas.width = Math.round(w * r);
        canvas.height = Math.round(geo.height * r);
        canvas.style.setProperty('width', `${w}px`);
        canvas.style.setProperty('height', `${geo.height}px`);
        const ctx = canvas.getContext('2d');
        ctx.scale(r, r);
        ctx.clearRect(0, 0, w, geo.height);
        ctx.font = '11px system-ui, sans-serif';
        ctx.textBaseline = 'middle';
        const span = view.t1 - view.t0;
        const xOf = (ns) => ((ns - view.t0) / span) * w;
        hits = [];
        for (const lane of geo.lanes) {
            ctx.fillStyle = '#eef1f4';
            ctx.fillRect(0, lane.top, w, LANE_HEAD_PX);
            ctx.fillStyle = '#1b1f24';
            ctx.textAlign = 'left';
            ctx.fillText(`thread ${lane.thread}`, 4, lane.top + LANE_HEAD_PX / 2);
            for (const s of lane.scopes) {
                const x0 = xOf(Number(s.startNs));
                const x1 = xOf(Number(s.endNs));
                if (x1 < 0 || x0 > w) {
                    continue;
                }
                const x = Math.max(0, x0);
                const bw = Math.max(1, Math.min(w, x1) - x);
                const y = lane.top + LANE_HEAD_PX + Number(s.depth) * ROW_PX;
                ctx.fillStyle = colorOf(String(s.name));
                ctx.fillRect(x, y + 1, bw, ROW_PX - 2);
                hits.push({ x, y, w: bw, s, thread: lane.thread });
                if (bw > 24) {
                    const full = `${s.name} ${ms(s.ms)}`;
                    const label =
                        ctx.measureText(full).width <= bw - 6 ? full : fitText(ctx, String(s.name), bw - 6);
                    if (label) {
                        ctx.fillStyle = '#10161c';
                        ctx.fillText(label, x + 3, y + ROW_PX / 2);
                    }
                }
            }
        }
    }

    function hitAt(px, py) {
        for (let i = hits.length - 1; i >= 0; i--) {
            const h = hits[i];
            if (px >= h.x && px <= h.x + h.w && py >= h.y && py < h.y + ROW_PX) {
                return h;
            }
        }
        return null;
    }

    function showTip(e) {
        const rect = canvas.getBoundingClientRect();
        const px = e.clientX - rect.left;
        const py = e.clientY - rect.top;
        const h = hitAt(px, py);
        if (!h) {
            tip.hidden = true;
            return;
        }
        const start = (Number(h.s.startNs) - Number(detail.startNs)) / 1e6;
        tip.replaceChildren(
            el('strong', null, String(h.s.name)),
            el('br'),
            `${ms(h.s.ms)} · starts at ${start >= 0 ? '+' : ''}${ms(start)}`,
            el('br'),
            `thread ${h.thread} · depth ${h.s.depth}`,
        );
        tip.hidden = false;
        const left = Math.min(px + 12, Math.max(0, rect.width - 260));
        tip.style.setProperty('left', `${left}px`);
        tip.style.setProperty('top', `${py + 14}px`);
    }

    canvas.addEventListener('mousemove', (e) => {
        if (drag) {
            const rect = canvas.getBoundingClientRect();
            const dt = ((e.clientX - drag.x) / rect.width) * (drag.t1 - drag.t0);
            view.t0 = drag.t0 - dt;
            view.t1 = drag.t1 - dt;
            draw();
        }
        showTip(e);
    });
    canvas.addEventListener('mouseleave', () => {
        tip.hidden = true;
        drag = null;
    });
    canvas.addEventListener('mousedown', (e) => {
        drag = { x: e.clientX, t0: view.t0, t1: view.t1 };
    });
    window.addEventListener('mouseup', onUp);
    function onUp() {
        drag = null;
    }
    canvas.addEventListener(
        'wheel',
        (e) => {
            e.preventDefault();
            const rect = canvas.getBoundingClientRect();
            const f = (e.clientX - rect.left) / rect.width;
            const at = view.t0 + f * (view.t1 - view.t0);
            const k = e.deltaY > 0 ? 1.25 : 0.8;
            const span = Math.min(geo.t1 - geo.t0, Math.max(1000, (view.t1 - view.t0) * k));
            view.t0 = at - f * span;
            view.t1 = view.t0 + span;
            draw();
        },
        { passive: false },
    );
    canvas.addEventListener('dblclick', () => {
        view.t0 = geo.t0;
        view.t1 = geo.t1;
        draw();
    });
    const onResize = () => draw();
    window.addEventListener('resize', onResize);
    draw();
    return {
        destroy() {
            window.removeEventListener('resize', onResize);
            window.removeEventListener('mouseup', onUp);
        },
    };
}

/** @p text cut (with "…") to fit @p width pixels, or '' when not even one letter does. */
function fitText(ctx, text, width) {
    const s = String(text);
    if (ctx.measureText(s).width <= width) {
        return s;
    }
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (ctx.measureText(`${s.slice(0, mid)}…`).width <= width) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo > 0 ? `${s.slice(0, lo)}…` : '';
}
