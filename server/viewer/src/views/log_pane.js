// views/log_pane.js - the log view's virtual scroller. The rows show only the lines that fit
// (at most a screenful of DOM rows), taken from a LogStore; the scrollbar beside them stands
// for the whole log.txt by byte offset (its top is byte 0, its bottom the end, however large
// the file), so dragging it jumps to that place with one range read. The wheel and the keys
// move by lines through what is held, and the store reads the next window before the edge
// (MARGIN_LINES ahead). Two modes: "at" (the top row is the line holding byte `anchor`) and
// "tail" (the last lines at the bottom; new lines appear there: auto-scroll).

import { el, replace } from '../dom.js';
import { lineRow } from './log_lines.js';
import { CACHE_LINES } from './log_store.js';

export const LINE_PX = 20; // must equal .log-row's height in viewer.css
const MARGIN_LINES = 300; // lines kept read ahead of the rows shown, both ways
const SPACER_MAX_PX = 8000000; // below every browser's element-height limit
const DRAG_SETTLE_MS = 60; // a scrollbar drag reads once it pauses this long

export class LogPane {
    /**
     * @p store: the LogStore; @p hooks: {moved(), select(line), failed(err)}; @p signal stops
     * its reads when the view goes.
     */
    constructor(store, hooks, signal) {
        this.store = store;
        this.hooks = hooks;
        this.signal = signal;
        this.mode = 'tail';
        this.anchor = 0;
        this.minRank = 0;
        this.needle = '';
        this.selected = -1;
        this.shown = []; // lines drawn, top first
        this.topIndex = 0; // index in store.lines of the top row
        this.loading = false;
        this.wheelRest = 0;
        this.setTop = -1; // the scrollTop we set ourselves (its scroll event is ours)
        this.dragTimer = null;
        this.rows = el('div', {
            class: 'log-rows',
            id: 'log-rows',
            role: 'log',
            tabindex: '0',
            'aria-label': 'log lines',
            on: {
                wheel: (e) => this.onWheel(e),
                click: (e) => this.onClick(e),
            },
        });
        this.spacer = el('div', { class: 'log-spacer' });
        this.bar = el(
            'div',
            {
                class: 'log-scrollbar',
                id: 'log-scrollbar',
                title: 'the whole log, by byte offset',
                on: { scroll: () => this.onBarScroll() },
            },
            this.spacer,
        );
        this.node = el('div', { class: 'log-pane', id: 'log-pane' }, this.rows, this.bar);
        this.resize = new ResizeObserver(() => this.render());
        this.resize.observe(this.rows);
        signal.addEventListener('abort', () => this.resize.disconnect(), { once: true });
    }

    fit() {
        return Math.max(1, Math.floor(this.rows.clientHeight / LINE_PX));
    }

    matches(line) {
        return line.parsed.rank >= this.minRank;
    }

    /** The lines to draw now (and topIndex), by mode; switches to tail at the log's end. */
    layout() {
        const lines = this.store.lines;
        const fit = this.fit();
        const out = [];
        if (this.mode === 'at') {
            let i = this.store.indexAt(this.anchor);
            this.topIndex = i;
            for (; i < lines.length && out.length < fit; i++) {
                if (this.matches(lines[i])) {
                    out.push(lines[i]);
                }
            }
            if (out.length === fit || !this.store.atEnd() || this.loading) {
                return out;
            }
            this.mode = 'tail'; // the rest of the log fits: we are at the bottom
        }
        let i = lines.length - 1;
        for (; i >= 0 && out.length < fit; i--) {
            if (this.matches(lines[i])) {
                out.unshift(lines[i]);
            }
        }
        this.topIndex = out.length > 0 ? this.store.indexAt(out[0].offset) : lines.length;
        return out;
    }

    render() {
        this.shown = this.layout();
        replace(
            this.rows,
            this.shown.map((l) => lineRow(l, this.needle, l.offset === this.selected)),
        );
        this.rows.dataset.mode = this.mode;
        this.drawBar();
        this.hooks.moved();
        this.readAhead();
    }

    /** The byte offset the top row stands for (the log's size at the tail). */
    topOffset() {
        if (this.mode === 'tail') {
            return this.store.size;
        }
        return this.shown.length > 0 ? this.shown[0].offset : this.anchor;
    }

    drawBar() {
        const { store } = this;
        const avg = store.lines.length > 0 ? store.heldBytes() / store.lines.length : 100;
        const viewH = this.bar.clientHeight;
        const estimate = (store.size / Math.max(1, avg)) * LINE_PX;
        const height = Math.round(Math.min(SPACER_MAX_PX, Math.max(viewH, estimate)));
        this.spacer.style.setProperty('height', `${height}px`);
        const range = height - viewH;
        const top = store.size === 0 || range <= 0 ? 0 : Math.round((this.topOffset() / store.size) * range);
        if (Math.abs(this.bar.scrollTop - top) >= 1) {
            this.setTop = top;
            this.bar.scrollTop = top;
        }
    }

    /** Read the next window when the rows come within MARGIN_LINES of the block's edge. */
    readAhead() {
        if (this.loading || this.signal.aborted) {
            return;
        }
        const { store } = this;
        const fit = this.fit();
        const before = this.topIndex;
        const after = store.lines.length - this.topIndex;
        let step = null;
        if (this.mode === 'at' && !store.atEnd() && after < fit + MARGIN_LINES) {
            step = 'forward';
        } else if (this.mode === 'at' && !store.atEnd() && this.shown.length < fit && after < CACHE_LINES) {
            step = 'forward'; // a level filter with few matches: look further, one block at most
        } else if (store.begin > 0 && before < MARGIN_LINES) {
            step = 'backward';
        } else if (store.begin > 0 && this.shown.length < fit && store.lines.length < CACHE_LINES) {
            step = 'backward';
        }
        if (step !== null) {
            this.load(() => store[step](this.signal));
        }
    }

    /** Run one store read (one at a time), then trim, draw and look again. */
    load(read) {
        if (this.loading) {
            return;
        }
        this.loading = true;
        read().then(
            (grew) => {
                this.loading = false;
                this.store.trim(this.mode === 'tail' ? this.store.end : this.topOffset());
                if (grew !== false) {
                    this.render();
                }
            },
            (err) => {
                this.loading = false;
                if (!this.signal.aborted) {
                    this.hooks.failed(err);
                }
            },
        );
    }

    /** New bytes were written (a "log" event): at the tail, read them and show them. */
    grew() {
        if (this.mode === 'tail' && !this.store.atEnd()) {
            this.load(() => this.store.forward(this.signal));
        } else {
            this.drawBar();
            this.hooks.moved();
        }
    }

    /** Show the line at or after byte @p offset at the top (one range read). */
    async jumpTo(offset) {
        this.mode = 'at';
        this.anchor = Math.max(0, Math.min(offset, this.store.size));
        this.loading = true;
        try {
            if (await this.store.jump(this.anchor, this.signal)) {
                this.anchor = this.store.lines.length > 0 ? this.store.lines[0].offset : this.store.size;
            }
        } finally {
            this.loading = false;
        }
        this.render();
    }

    /** Show the last lines and keep showing new ones as they come. */
    async toTail() {
        this.mode = 'tail';
        this.loading = true;
        try {
            await this.store.tail(this.signal);
        } finally {
            this.loading = false;
        }
        this.render();
    }

    /** Move by @p n matching lines (negative: up) through what is held. */
    scrollBy(n) {
        const lines = this.store.lines;
        if (lines.length === 0 || n === 0) {
            return;
        }
        let i = Math.min(this.topIndex, lines.length - 1);
        if (n < 0) {
            for (let k = 0; k < -n && i > 0;) {
                i--;
                if (this.matches(lines[i])) {
                    k++;
                }
            }
        } else {
            if (this.mode === 'tail') {
                return;
            }
            for (let k = 0; k < n && i < lines.length - 1;) {
                i++;
                if (this.matches(lines[i])) {
                    k++;
                }
            }
        }
        this.mode = 'at';
        this.anchor = lines[i].offset;
        this.render();
    }

    page(dir) {
        this.scrollBy(dir * Math.max(1, this.fit() - 1));
    }

    onWheel(e) {
        e.preventDefault();
        const lines =
            e.deltaMode === 1 ? e.deltaY : e.deltaMode === 2 ? e.deltaY * this.fit() : e.deltaY / LINE_PX;
        this.wheelRest += lines;
        const whole = Math.trunc(this.wheelRest);
        this.wheelRest -= whole;
        this.scrollBy(whole);
    }

    onClick(e) {
        const row = e.target instanceof Element ? e.target.closest('.log-row') : null;
        if (row === null) {
            return;
        }
        const offset = Number(row.dataset.offset);
        const line = this.shown.find((l) => l.offset === offset);
        if (line) {
            this.selected = offset;
            this.render();
            this.hooks.select(line);
        }
    }

    onBarScroll() {
        const top = this.bar.scrollTop;
        if (this.setTop >= 0 && Math.abs(top - this.setTop) < 1) {
            this.setTop = -1;
            return;
        }
        this.setTop = -1;
        clearTimeout(this.dragTimer);
        this.dragTimer = setTimeout(() => {
            const range = this.bar.scrollHeight - this.bar.clientHeight;
            if (range <= 0) {
                return;
            }
            const frac = top / range;
            if (frac >= 0.999) {
                this.toTail().catch((err) => this.hooks.failed(err));
            } else {
                this.jumpTo(Math.floor(frac * this.store.size)).catch((err) => this.hooks.failed(err));
            }
        }, DRAG_SETTLE_MS);
    }
}
