// tests/browser/lib/wait.mjs - waiting on a condition with a deadline, never on a sleep alone:
// shared by the browser tests (through harness.mjs) and tests/bench/bench_viewer.mjs (which
// cannot import harness.mjs: that one needs ctest's environment).

/** Resolve when @p fn() is truthy, polling every @p everyMs; reject after @p ms with @p what. */
export async function waitFor(what, fn, ms = 10000, everyMs = 20) {
    const end = Date.now() + ms;
    for (;;) {
        const v = await fn();
        if (v) {
            return v;
        }
        if (Date.now() > end) {
            throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        }
        await new Promise((r) => setTimeout(r, everyMs));
    }
}

/** The viewer's render count (main.js numbers each view it draws in #view[data-render]). */
export function renderCount(page) {
    return page.$eval('#view', (v) => Number(v.dataset.render || 0));
}

/**
 * Run @p action (a click, a key, a same-page goto) and wait until the view it leads to is drawn:
 * a render after the one before it that has set data-ready. Waiting on [data-ready] alone can
 * see the old view's mark, since the hash changes a task before the view is replaced.
 */
export async function readyAfter(page, action, ms = 10000) {
    const before = await renderCount(page);
    await action();
    await page.waitForFunction(
        (b) => {
            const v = document.getElementById('view');
            return Number(v.dataset.render || 0) > b && v.dataset.ready !== undefined;
        },
        before,
        { timeout: ms },
    );
}
