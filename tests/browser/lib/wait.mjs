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
