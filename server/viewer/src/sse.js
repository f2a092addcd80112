// sse.js - a text/event-stream parser (the WHATWG HTML "event stream interpretation"), fed
// decoded text in chunks of any size. api.js reads /v1/events through fetch() with it,
// because EventSource cannot send the Authorization header. No DOM: node's tests run it too.

/** Largest event (data lines together) or line the parser holds; a larger one is an error. */
export const SSE_MAX_BYTES = 4 * 1024 * 1024;

export class SseParser {
    /**
     * @param onEvent called with {type, data, lastEventId} for each dispatched event
     * @param onRetry called with the milliseconds of a "retry:" field
     */
    constructor(onEvent, onRetry = () => {}) {
        this.onEvent = onEvent;
        this.onRetry = onRetry;
        this.lastEventId = ''; // the spec's "last event ID buffer": survives reconnects
        this.line = '';
        this.sawCR = false; // the previous chunk ended in CR: a leading LF belongs to it
        this.started = false; // a BOM is skipped only at the very start
        this.resetEvent();
    }

    resetEvent() {
        this.type = '';
        this.data = '';
        this.hasData = false;
        this.id = null;
    }

    /** Feed the next piece of the stream (a string). Throws when a line or event is too big. */
    push(text) {
        let s = text;
        if (!this.started && s.length > 0) {
            this.started = true;
            if (s.charCodeAt(0) === 0xfeff) {
                s = s.slice(1);
            }
        }
        let i = 0;
        if (this.sawCR && s.length > 0) {
            this.sawCR = false;
            if (s[0] === '\n') {
                i = 1;
            }
        }
        while (i < s.length) {
            const cr = s.indexOf('\r', i);
            const lf = s.indexOf('\n', i);
            let end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
            if (end < 0) {
                this.line += s.slice(i);
                if (this.line.length > SSE_MAX_BYTES) {
                    throw new Error(`event stream line longer than ${SSE_MAX_BYTES} characters`);
                }
                return;
            }
            this.processLine(this.line + s.slice(i, end));
            this.line = '';
            if (s[end] === '\r') {
                if (end + 1 < s.length) {
                    if (s[end + 1] === '\n') {
                        end++;
                    }
                } else {
                    this.sawCR = true;
                }
            }
            i = end + 1;
        }
    }

    /** The stream ended: a partly received event is dropped, as the spec says. */
    end() {
        this.line = '';
        this.sawCR = false;
        this.resetEvent();
    }

    processLine(line) {
        if (line === '') {
            this.dispatch();
            return;
        }
        if (line[0] === ':') {
            return; // a comment (keep-alive)
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value[0] === ' ') {
            value = value.slice(1);
        }
        switch (field) {
            case 'event':
                this.type = value;
                break;
            case 'data':
                this.data += this.hasData ? '\n' + value : value;
                this.hasData = true;
                if (this.data.length > SSE_MAX_BYTES) {
                    throw new Error(`event stream event larger than ${SSE_MAX_BYTES} characters`);
                }
                break;
            case 'id':
                if (!value.includes('\0')) {
                    this.id = value;
                }
                break;
            case 'retry':
                if (/^[0-9]+$/.test(value)) {
                    this.onRetry(Number(value));
                }
                break;
            default:
                break; // unknown fields are ignored
        }
    }

    dispatch() {
        if (this.id !== null) {
            this.lastEventId = this.id;
        }
        if (this.hasData) {
            this.onEvent({ type: this.type || 'message', data: this.data, lastEventId: this.lastEventId });
        }
        this.resetEvent();
    }
}
