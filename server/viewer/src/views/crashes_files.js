// views/crashes_files.js - the files of a crash package as the crash page fetches them: the
// path of GET /v1/crashes/<id>/files/<name> (every byte outside [A-Za-z0-9._~-] escaped), a
// file's content type from its name (the table of docs/protocol.md, so the list can say it
// before anything is fetched), text fetched under a cap, and downloads (a file or the raw
// archive) through the API client, so they carry the token like every request. File names
// and contents come from the crashed program: shown as text only.

import { ApiError, request } from '../api.js';
import { el } from '../dom.js';

// docs/protocol.md, "GET /v1/crashes/<id>/files/<name>": the server's types by extension.
const TYPES = [
    ['.txt', 'text/plain; charset=utf-8'],
    ['.log', 'text/plain; charset=utf-8'],
    ['.json', 'application/json'],
    ['.zst', 'application/zstd'],
    ['.gz', 'application/gzip'],
    ['.tar', 'application/x-tar'],
];

/** Text shown inline at most (larger text files are offered for download, the rest cut). */
export const TEXT_SHOWN_MAX = 1 << 20;

/** The content type the server answers for the package file @p path. */
export function contentType(path) {
    const hit = TYPES.find(([ext]) => path.length > ext.length && path.endsWith(ext));
    return hit ? hit[1] : 'application/octet-stream';
}

/** Whether @p path is a file the page shows as text (text/plain or JSON). */
export function isText(path) {
    const type = contentType(path);
    return type.startsWith('text/') || type === 'application/json';
}

/** Every byte of @p s outside [A-Za-z0-9._~-] as %XX (UTF-8). */
function escapeStrict(s) {
    return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The API path of file @p path (folders kept as '/') of crash @p id. */
export function filePath(id, path) {
    const name = String(path).split('/').map(escapeStrict).join('/');
    return `/v1/crashes/${encodeURIComponent(id)}/files/${name}`;
}

/** The API path of crash @p id's raw archive, as it was uploaded. */
export function archivePath(id) {
    return `/v1/crashes/${encodeURIComponent(id)}/archive`;
}

/** GET @p path as text (UTF-8, bad bytes as U+FFFD); ApiError on another answer. */
export async function fetchText(path, signal) {
    const res = await request(path, { signal });
    const text = await res.text();
    if (!res.ok) {
        throw new ApiError(res.status, text.trim() || res.statusText, path);
    }
    return text;
}

/** The last path component of @p path, for a download's file name. */
function baseName(path) {
    const parts = String(path).split('/');
    return parts[parts.length - 1] || 'download';
}

/**
 * Fetch @p path and hand it to the browser as the download @p name. The bytes go through a
 * blob: URL made here (never a URL from the server or a client), revoked once clicked.
 */
export async function download(path, name) {
    const res = await request(path);
    if (!res.ok) {
        throw new ApiError(res.status, (await res.text()).trim() || res.statusText, path);
    }
    const blob = await res.blob();
    const url = URL.createObjectURL(blob);
    const a = el('a', { download: baseName(name), class: 'crash-download-link' });
    // dom.js takes only in-viewer links; this one is a blob: URL of bytes just fetched.
    a.setAttribute('href', url);
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
}

/**
 * A button that downloads @p path as @p name; a failure is shown beside it (as text). @p props
 * adds attributes (id, data-*).
 */
export function downloadButton(label, path, name, props = {}) {
    const problem = el('span', { class: 'crash-download-error', role: 'alert' });
    const button = el(
        'button',
        {
            type: 'button',
            class: 'crash-download',
            ...props,
            on: {
                click: async () => {
                    button.disabled = true;
                    problem.replaceChildren();
                    try {
                        await download(path, name);
                    } catch (err) {
                        problem.textContent = ` ${err.message}`;
                    } finally {
                        button.disabled = false;
                    }
                },
            },
        },
        label,
    );
    return el('span', { class: 'crash-download-wrap' }, button, problem);
}
