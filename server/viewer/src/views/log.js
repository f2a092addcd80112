// views/log.js - #/runs/<id>/log: a run's log. A shell until the read API is in the server
// (GET /v1/runs/<id>/log with offset/limit or tail, and /v1/events for the live tail).

import { idHeading, linkRow, replace, waiting } from '../dom.js';
import { hashFor } from '../router.js';

export async function renderLog(container, route) {
    const run = route.params.run;
    replace(
        container,
        idHeading('Log of run ', run),
        linkRow([hashFor('frames', { run }), 'Frames of this run'], [hashFor('runs'), 'All runs']),
        waiting(
            `The log waits for the read API (GET /v1/runs/${run}/log): range reads, the live tail, level filter and search appear here once the server has it.`,
        ),
    );
}
