// views/frames_chart.js - the frame-time chart of the frames view (uPlot on a canvas): one
// point per server-reduced bucket (GET /v1/runs/<id>/frames, the bucket's max and min frame
// time as two lines with the band between them, so a one-frame hitch is never averaged away),
// the budget and the run's p50/p90/p99 as lines, buckets over budget, the report's worst frames
// and its diagnostics as marks, and the selected frame. Drag selects a window to zoom into,
// the wheel pans (Ctrl+wheel zooms), a click picks the slowest frame within 4 px. It never holds
// more points than it has pixels: points() is the plot's width in CSS pixels (at most 4096).

import uPlot from '../uPlot.esm.js';
import { POINTS_MAX, count, ms } from './frames_util.js';

const HEIGHT = 260;
const COLORS = {
    max: '#1d6fa5',
    min: '#8db8d8',
    band: 'rgba(29, 111, 165, 0.16)',
    budget: '#b3261e',
    p50: '#2e7d32',
    p90: '#b26a00',
    p99: '#7b1fa2',
    hitch: '#b3261e',
    worst: '#b3261e',
    selected: '#0b4f7c',
    diag: { info: '#5c6670', warning: '#b26a00', error: '#b3261e', fatal: '#6d0f0a' },
};
const CLICK_SLOP_PX = 3;
const PICK_PX = 4; // a click picks the slowest bucket this close to it

/** Frames per bucket and the bucket's range as the legend says it. */
function bucketText(b) {
    return b.from === b.to ? `frame ${count(b.from)}` : `frames ${count(b.from)}–${count(b.to)}`;
}

export class FrameChart {
    /**
     * A chart in @p parent. @p handlers: onZoom({from, to}) for a dragged window,
     * onWheel(kind 'pan'|'zoom', amount, centerFrame), onPick(frame) for a click.
     */
    constructor(parent, handlers) {
        this.handlers = handlers;
        this.answer = null;
        this.marks = { worst: [], diagnostics: [], selected: null };
        this.view = { from: 0, to: 1 };
        this.downX = null;
        const width = Math.max(320, parent.clientWidth - 2);
        this.plot = new uPlot(this.options(width), [[], [], []], parent);
        const over = this.plot.over;
        over.addEventListener('mousedown', (e) => {
            this.downX = e.clientX;
        });
        over.addEventListener('mouseup', (e) => this.onMouseUp(e));
        over.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
        over.classList.add('frames-chart-over');
    }

    options(width) {
        const legendValue = (pick) => (u, v, si, idx) => {
            const b = idx === null || !this.answer ? null : this.answer.buckets[idx];
            return b ? pick(b) : '-';
        };
        return {
            width,
            height: HEIGHT,
            scales: {
                x: { time: false, range: () => [this.view.from - 0.5, this.view.to + 0.5] },
                y: { range: (u, lo, hi) => this.yRange(hi) },
            },
            series: [
                { label: 'bucket', value: legendValue(bucketText) },
                {
                    label: 'slowest',
                    stroke: COLORS.max,
                    width: 1.5,
                    points: { show: false },
                    value: legendValue((b) => `${ms(b.maxMs)} (frame ${count(b.maxFrame)})`),
                },
                {
                    label: 'fastest',
                    stroke: COLORS.min,
                    width: 1,
                    points: { show: false },
                    value: legendValue((b) => `${ms(b.minMs)} (frame ${count(b.minFrame)})`),
                },
            ],
            bands: [{ series: [1, 2], fill: COLORS.band }],
            axes: [
                { label: 'frame', values: (u, splits) => splits.map((v) => count(Math.round(v))) },
                { label: 'frame time (ms)', size: 56 },
            ],
            cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
            legend: { live: true },
            hooks: {
                setSelect: [(u) => this.onSelect(u)],
                draw: [(u) => this.drawMarks(u)],
            },
        };
    }

    /** The y range: from 0 to the slowest bucket, with the budget when it is not far above. */
    yRange(hi) {
        const a = this.answer;
        let top = Math.max(hi || 0, a ? a.p99Ms : 0, 0.001);
        if (a && a.budgetMs && a.budgetMs <= top * 4) {
            top = Math.max(top, a.budgetMs);
        }
        return [0, top * 1.12];
    }

    /** Buckets to ask the server for: the plot's width in CSS pixels, 1..4096. */
    points() {
        const px = this.plot.bbox.width / uPlot.pxRatio;
        return Math.max(1, Math.min(POINTS_MAX, Math.floor(px)));
    }

    /** The frame under CSS x @p left of the plot (for zoom centres). */
    frameAt(left) {
        return this.plot.posToVal(left, 'x');
    }

    /** Show @p answer (a /frames answer) over the window @p view {from, to} (frame numbers). */
    draw(answer, view) {
        this.answer = answer;
        this.view = view;
        const xs = answer.buckets.map((b) => (b.from + b.to) / 2);
        this.plot.setData([xs, answer.buckets.map((b) => b.maxMs), answer.buckets.map((b) => b.minMs)]);
    }

    /** Move the visible window before its data comes (the old points shift with it). */
    preview(view) {
        this.view = view;
        this.plot.setData(this.plot.data);
    }

    /** @p marks {worst: [{frame, ms}], diagnostics: [{frame, severity}], selected: frame|null}. */
    setMarks(marks) {
        this.marks = { ...this.marks, ...marks };
        this.plot.redraw(false, false);
    }

    resize(width) {
        this.plot.setSize({ width: Math.max(320, width - 2), height: HEIGHT });
    }

    destroy() {
        this.plot.destroy();
    }

    onSelect(u) {
        const sel = u.select;
        if (sel.width < CLICK_SLOP_PX) {
            return;
        }
        const from = Math.ceil(u.posToVal(sel.left, 'x'));
        const to = Math.floor(u.posToVal(sel.left + sel.width, 'x'));
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
        if (to >= from) {
            this.handlers.onZoom({ from, to });
        }
    }

    onMouseUp(e) {
        if (this.downX === null || Math.abs(e.clientX - this.downX) >= CLICK_SLOP_PX || e.button !== 0) {
            this.downX = null;
            return;
        }
        this.downX = null;
        const b = this.bucketNear(e);
        if (b) {
            this.handlers.onPick(b.maxFrame);
        }
    }

    /** The slowest bucket within PICK_PX of the pointer (a spike need not be hit exactly). */
    bucketNear(e) {
        if (!this.answer) {
            return null;
        }
        const rect = this.plot.over.getBoundingClientRect();
        const lo = this.plot.posToVal(e.clientX - rect.left - PICK_PX, 'x');
        const hi = this.plot.posToVal(e.clientX - rect.left + PICK_PX, 'x');
        let best = null;
        for (const b of this.answer.buckets) {
            const x = (b.from + b.to) / 2;
            if (x >= lo && x <= hi && (best === null || b.maxMs > best.maxMs)) {
                best = b;
            }
        }
        return best;
    }

    onWheel(e) {
        e.preventDefault();
        const rect = this.plot.over.getBoundingClientRect();
        const center = this.frameAt(e.clientX - rect.left);
        if (e.ctrlKey || e.metaKey) {
            this.handlers.onWheel('zoom', e.deltaY > 0 ? 1.25 : 0.8, center);
        } else {
            const d = Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : e.deltaY;
            this.handlers.onWheel('pan', d > 0 ? 0.1 : -0.1, center);
        }
    }

    /** Lines and marks over the series, in canvas pixels. */
    drawMarks(u) {
        const a = this.answer;
        if (!a) {
            return;
        }
        const { ctx } = u;
        const { left, top, width, height } = u.bbox;
        const r = uPlot.pxRatio;
        const yMax = u.scales.y.max;
        ctx.save();
        ctx.beginPath();
        ctx.rect(left, top, width, height);
        ctx.clip();
        ctx.font = `${11 * r}px system-ui, sans-serif`;
        ctx.textBaseline = 'bottom';
        const labels = []; // [y, x of its left end]: a label that would overlap one goes left of it
        const label = (text, y) => {
            const w = ctx.measureText(text).width;
            let right = left + width - 4 * r;
            for (const [ly, lx] of labels) {
                if (Math.abs(ly - y) < 12 * r && right > lx - 4 * r) {
                    right = lx - 10 * r;
                }
            }
            ctx.textAlign = 'right';
            ctx.fillText(text, right, y);
            labels.push([y, right - w]);
        };
        const hline = (value, color, name, dash) => {
            if (!(value > 0)) {
                return;
            }
            ctx.strokeStyle = color;
            ctx.fillStyle = color;
            ctx.lineWidth = r;
            ctx.setLineDash(dash.map((d) => d * r));
            if (value > yMax) {
                label(`${name} ${ms(value)} (above)`, top + 14 * r);
                return;
            }
            const y = Math.round(u.valToPos(value, 'y', true));
            ctx.beginPath();
            ctx.moveTo(left, y);
            ctx.lineTo(left + width, y);
            ctx.stroke();
            label(`${name} ${ms(value)}`, y - 2 * r);
        };
        hline(a.budgetMs, COLORS.budget, 'budget', [6, 3]);
        hline(a.p99Ms, COLORS.p99, 'p99', [2, 3]);
        hline(a.p90Ms, COLORS.p90, 'p90', [2, 3]);
        hline(a.p50Ms, COLORS.p50, 'p50', [2, 3]);
        ctx.setLineDash([]);

        // Buckets over budget: a dot on their slowest frame.
        ctx.fillStyle = COLORS.hitch;
        for (const b of a.buckets) {
            if (a.budgetMs > 0 && b.maxMs > a.budgetMs && b.maxMs <= yMax) {
                const x = u.valToPos((b.from + b.to) / 2, 'x', true);
                const y = u.valToPos(b.maxMs, 'y', true);
                ctx.beginPath();
                ctx.arc(x, y, 3 * r, 0, 2 * Math.PI);
                ctx.fill();
            }
        }
        // The report's worst frames: a triangle at the top.
        ctx.fillStyle = COLORS.worst;
        for (const w of this.marks.worst) {
            const x = u.valToPos(w.frame, 'x', true);
            if (x >= left && x <= left + width) {
                ctx.beginPath();
                ctx.moveTo(x - 4 * r, top);
                ctx.lineTo(x + 4 * r, top);
                ctx.lineTo(x, top + 7 * r);
                ctx.fill();
            }
        }
        // Diagnostics: a dotted line and a diamond at the bottom, by severity.
        for (const d of this.marks.diagnostics) {
            const x = Math.round(u.valToPos(d.frame, 'x', true));
            if (x < left || x > left + width) {
                continue;
            }
            const color = COLORS.diag[d.severity] || COLORS.diag.info;
            ctx.strokeStyle = color;
            ctx.fillStyle = color;
            ctx.lineWidth = r;
            ctx.setLineDash([1 * r, 3 * r]);
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
            ctx.setLineDash([]);
            const y = top + height - 6 * r;
            ctx.beginPath();
            ctx.moveTo(x, y - 5 * r);
            ctx.lineTo(x + 5 * r, y);
            ctx.lineTo(x, y + 5 * r);
            ctx.lineTo(x - 5 * r, y);
            ctx.fill();
        }
        if (this.marks.selected !== null) {
            const x = Math.round(u.valToPos(this.marks.selected, 'x', true));
            ctx.strokeStyle = COLORS.selected;
            ctx.lineWidth = 2 * r;
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
        }
        ctx.restore();
    }
}
