// main.js - the viewer's entry (index.html loads it): wires the token prompt into the API
// client, shows the server's status in the header, and renders the view of each URL. A view
// is render(container, route, signal): it draws into container and stops its fetches and
// streams when signal aborts (the next URL). A view sets container.dataset.ready = 'true' once
// its first data is drawn (tests and tests/bench wait on [data-ready]); render() clears it and
// counts itself in data-render, so a waiter can tell this render's readiness from the last one's
// (the hash changes before the hashchange event runs render()).

import { ApiError, getJson, setTokenAsker } from './api.js';
import { el, errorBox, replace } from './dom.js';
import { duration } from './format.js';
import { startRouter } from './router.js';
import { askToken } from './token.js';
import * as crashes from './views/crashes.js';
import * as frames from './views/frames.js';
import * as log from './views/log.js';
import * as runs from './views/runs.js';

const VIEWS = {
    runs: runs.renderRuns,
    run: runs.renderRun,
    log: log.renderLog,
    frames: frames.renderFrames,
    frame: frames.renderFrames,
    crashes: crashes.renderCrashes,
    crash: crashes.renderCrash,
    notfound: renderNotFound,
};

// Which header link is "current" for each view.
const NAV_OF = {
    runs: 'runs',
    run: 'runs',
    log: 'runs',
    frames: 'runs',
    frame: 'runs',
    crashes: 'crashes',
    crash: 'crashes',
};

function renderNotFound(container, route) {
    replace(
        container,
        el('h1', null, 'No such view'),
        el(
            'p',
            null,
            `Nothing lives at #${route.params.path}. `,
            el('a', { href: '#/runs' }, 'See the runs'),
            '.',
        ),
    );
}

async function showServerStatus() {
    const status = document.getElementById('server-status');
    try {
        const h = await getJson('/v1/health');
        replace(status, `nwb-logserver ${h.version} · up ${duration(h.uptime_s)}`);
        status.dataset.state = h.status;
    } catch (err) {
        replace(
            status,
            err instanceof ApiError ? `server: ${err.status || 'unreachable'}` : 'server unreachable',
        );
        status.dataset.state = 'error';
    }
}

let current = null;

let renders = 0;
function render(route) {
    current?.abort();
    current = new AbortController();
    const { signal } = current;
    const container = document.getElementById('view');
    document.querySelectorAll('header.top nav a').forEach((a) => {
        if (a.dataset.nav === NAV_OF[route.view]) {
            a.setAttribute('aria-current', 'page');
        } else {
            a.removeAttribute('aria-current');
        }
    });
    container.dataset.view = route.view;
    delete container.dataset.ready;
    renders += 1;
    container.dataset.render = String(renders);
    Promise.resolve()
        .then(() => VIEWS[route.view](container, route, signal))
        .catch((err) => {
            if (!signal.aborted) {
                replace(container, el('h1', null, 'Cannot show this view'), errorBox(err));
            }
        });
}

setTokenAsker(askToken);
startRouter(render);
showServerStatus();
