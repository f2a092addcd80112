// router.js - the viewer's URLs: everything after '#', so each view has a link that can be
// shared and back/forward work (hashchange). parseRoute() is pure (node's tests run it).
//
//   #/runs                      every run
//   #/runs/<id>                 one run (its summary)
//   #/runs/<id>/log[?...]       its log
//   #/runs/<id>/frames          its frames
//   #/runs/<id>/frames/<n>      one frame
//   #/crashes                   every crash
//   #/crashes/<id>              one crash
// A "?a=b" after the path is view state (URLSearchParams in route.query).

const ROUTES = [
    ['runs', /^\/runs$/, []],
    ['run', /^\/runs\/([^/]+)$/, ['run']],
    ['log', /^\/runs\/([^/]+)\/log$/, ['run']],
    ['frames', /^\/runs\/([^/]+)\/frames$/, ['run']],
    ['frame', /^\/runs\/([^/]+)\/frames\/([0-9]+)$/, ['run', 'frame']],
    ['crashes', /^\/crashes$/, []],
    ['crash', /^\/crashes\/([^/]+)$/, ['crash']],
];

export const DEFAULT_HASH = '#/runs';

/**
 * The route of @p hash ("#/runs/abc/log?x=1"): {view, params, query}; view "notfound" for
 * anything else (with params.path), and "runs" for an empty hash.
 */
export function parseRoute(hash) {
    let h = String(hash || '');
    if (h.startsWith('#')) {
        h = h.slice(1);
    }
    if (h === '' || h === '/') {
        h = DEFAULT_HASH.slice(1);
    }
    const q = h.indexOf('?');
    const path = q < 0 ? h : h.slice(0, q);
    const query = new URLSearchParams(q < 0 ? '' : h.slice(q + 1));
    for (const [view, re, names] of ROUTES) {
        const m = re.exec(path);
        if (m === null) {
            continue;
        }
        const params = {};
        try {
            names.forEach((name, i) => {
                params[name] = decodeURIComponent(m[i + 1]);
            });
        } catch {
            break; // a malformed %-escape: no such place
        }
        return { view, params, query };
    }
    return { view: 'notfound', params: { path }, query };
}

/** The hash of a route: hashFor('frame', {run: 'a b', frame: 7}) is "#/runs/a%20b/frames/7". */
export function hashFor(view, params = {}, query = null) {
    const e = (v) => encodeURIComponent(String(v));
    const paths = {
        runs: () => '/runs',
        run: () => `/runs/${e(params.run)}`,
        log: () => `/runs/${e(params.run)}/log`,
        frames: () => `/runs/${e(params.run)}/frames`,
        frame: () => `/runs/${e(params.run)}/frames/${Number.parseInt(params.frame, 10)}`,
        crashes: () => '/crashes',
        crash: () => `/crashes/${e(params.crash)}`,
    };
    if (!(view in paths)) {
        throw new Error(`router.hashFor: no view "${view}"`);
    }
    const qs = query ? new URLSearchParams(query).toString() : '';
    return `#${paths[view]()}${qs ? `?${qs}` : ''}`;
}

/** Call @p render(route) now and on every hash change (links, back, forward). */
export function startRouter(render) {
    const go = () => render(parseRoute(window.location.hash));
    window.addEventListener('hashchange', go);
    if (window.location.hash === '') {
        // The default view, without a history entry of its own.
        window.history.replaceState(null, '', DEFAULT_HASH);
    }
    go();
}
