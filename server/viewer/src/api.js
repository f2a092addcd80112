// api.js - the viewer's only way to the server: the documented read API and /v1/events,
// nothing private. Every request carries "Authorization: Bearer <token>" when the tab has a
// token (sessionStorage: gone when the tab closes; never in a URL, a log line or the page).
// A 401 asks for the token (one prompt at a time, shared by every waiting request) and
// retries; a refused token is dropped and asked again with the server's reason.

import { SseParser } from './sse.js';

const TOKEN_KEY = 'nwb.viewer.token';

/** A non-2xx answer (or a broken one): status, the server's reason, the path asked. */
export class ApiError extends Error {
    constructor(status, reason, path) {
        super(status ? `${path}: ${status} ${reason}` : `${path}: ${reason}`);
        this.name = 'ApiError';
        this.status = status;
        this.reason = reason;
        this.path = path;
    }
}

let askToken = null; // (message or null) => Promise<string>, set by main.js (token.js)
let pendingAsk = null;

/** The function that asks the person for a token (token.js's prompt). */
export function setTokenAsker(fn) {
    askToken = fn;
}

function storedToken() {
    try {
        return sessionStorage.getItem(TOKEN_KEY);
    } catch {
        return null; // storage disabled: every 401 asks again
    }
}

function storeToken(token) {
    try {
        if (token === null) {
            sessionStorage.removeItem(TOKEN_KEY);
        } else {
            sessionStorage.setItem(TOKEN_KEY, token);
        }
    } catch {
        /* nothing kept: the next 401 asks again */
    }
}

/** Ask once for everyone who is waiting; resolves when a new token is stored. */
function obtainToken(message) {
    if (pendingAsk === null) {
        if (askToken === null) {
            return Promise.reject(new ApiError(401, 'the server wants a token', 'viewer'));
        }
        pendingAsk = askToken(message).then(
            (token) => {
                storeToken(token);
                pendingAsk = null;
            },
            (err) => {
                pendingAsk = null;
                throw err;
            },
        );
    }
    return pendingAsk;
}

/**
 * fetch() of a same-origin @p path with the token; 401s ask and retry. Resolves to the
 * Response of any other status (the caller checks res.ok). @p opts: fetch options.
 */
export async function request(path, opts = {}) {
    if (!path.startsWith('/')) {
        throw new Error(`api.request: ${path} is not a path on this server`);
    }
    for (;;) {
        const token = storedToken();
        const headers = new Headers(opts.headers || {});
        if (token !== null) {
            headers.set('Authorization', `Bearer ${token}`);
        }
        const res = await fetch(path, {
            ...opts,
            headers,
            credentials: 'omit',
            cache: 'no-store',
            referrerPolicy: 'no-referrer',
        });
        if (res.status !== 401) {
            return res;
        }
        const reason = (await res.text()).trim() || 'unauthorized';
        const now = storedToken();
        if (now !== token) {
            continue; // another request got a new token meanwhile: try that one
        }
        if (token !== null) {
            storeToken(null);
        }
        await obtainToken(token === null ? null : `The server refused that token (${reason}).`);
    }
}

/** GET @p path as JSON; ApiError on any other answer. */
export async function getJson(path, opts = {}) {
    const res = await request(path, { ...opts, headers: { Accept: 'application/json' } });
    const text = await res.text();
    if (!res.ok) {
        throw new ApiError(res.status, text.trim() || res.statusText, path);
    }
    try {
        return JSON.parse(text);
    } catch (err) {
        throw new ApiError(res.status, `not JSON (${err.message})`, path);
    }
}

function delay(ms, signal) {
    return new Promise((resolve) => {
        const t = setTimeout(resolve, ms);
        signal?.addEventListener(
            'abort',
            () => {
                clearTimeout(t);
                resolve();
            },
            { once: true },
        );
    });
}

// Answers after which reconnecting cannot help (the stream does not exist, or is refused).
const FINAL_STATUSES = new Set([400, 403, 404, 405, 410]);

/**
 * Follow the text/event-stream at @p path through fetch(): @p onEvent({type, data,
 * lastEventId}) for each event; on a dropped connection it reconnects after the server's
 * "retry:" (1 s by default) with Last-Event-ID, so nothing between is missed. @p onState
 * ('open' | 'reconnecting' | 'closed', detail) tells the page; 'closed' comes once, with an
 * ApiError when the server refused the stream. Stops when @p signal aborts.
 */
export function followEvents(path, { onEvent, onState = () => {}, signal }) {
    let retryMs = 1000;
    const parser = new SseParser(onEvent, (ms) => {
        retryMs = ms;
    });
    (async () => {
        while (!signal?.aborted) {
            let err = null;
            try {
                const headers = { Accept: 'text/event-stream' };
                if (parser.lastEventId !== '') {
                    headers['Last-Event-ID'] = parser.lastEventId;
                }
                const res = await request(path, { headers, signal });
                const type = res.headers.get('Content-Type') || '';
                if (!res.ok || !type.startsWith('text/event-stream')) {
                    const reason = res.ok ? `Content-Type is "${type}"` : (await res.text()).trim();
                    const e = new ApiError(res.status, reason || res.statusText, path);
                    if (!res.ok && !FINAL_STATUSES.has(res.status)) {
                        throw e;
                    }
                    onState('closed', e);
                    return;
                }
                onState('open');
                const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
                for (;;) {
                    const { value, done } = await reader.read();
                    if (done) {
                        break;
                    }
                    parser.push(value);
                }
            } catch (e) {
                err = e;
            }
            parser.end();
            if (signal?.aborted) {
                break;
            }
            onState('reconnecting', err);
            await delay(retryMs, signal);
        }
        onState('closed', null);
    })();
}
