// views/runs_keys.js - the views' single-key shortcuts ("f" follow, "/" search, End...): a
// keydown listener on the document for as long as the view lives, quiet while the person types
// in a field or holds Ctrl/Alt/Meta (so the browser's own shortcuts keep working).

/** Whether @p target is a place where keys are text (an input, a select, editable content). */
export function isTyping(target) {
    return (
        target instanceof HTMLElement &&
        (target.isContentEditable || /^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName))
    );
}

/**
 * Call @p onKey(event) for each key pressed outside a field without Ctrl/Alt/Meta, until
 * @p signal aborts. @p always (optional) gets every key, typing or not (e.g. Escape in search).
 */
export function onViewKeys(signal, onKey, always = null) {
    const listener = (e) => {
        always?.(e);
        if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) {
            return;
        }
        onKey(e);
    };
    document.addEventListener('keydown', listener);
    signal.addEventListener('abort', () => document.removeEventListener('keydown', listener), {
        once: true,
    });
}
