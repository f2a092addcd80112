// dom.js - the one way the viewer builds elements. Every string becomes a text node or an
// attribute value, never markup: there is no innerHTML here, and nothing else in the viewer
// may use it (log lines, program names and crash files come from clients: untrusted).

// Attribute values that could run code or leave the page are refused outright.
const LINK_ATTRS = new Set(['href', 'src', 'action', 'formaction']);

function safeLink(value) {
    // Only the viewer's own places: "#/..." routes and same-origin absolute paths.
    return /^#/.test(value) || /^\/(?![/\\])/.test(value);
}

function setProp(node, key, value) {
    if (value === undefined || value === null || value === false) {
        return;
    }
    if (key === 'on') {
        for (const [type, fn] of Object.entries(value)) {
            node.addEventListener(type, fn);
        }
    } else if (key === 'dataset') {
        Object.assign(node.dataset, value);
    } else if (key === 'class') {
        node.className = String(value);
    } else if (/^on/i.test(key) || key === 'innerHTML' || key === 'outerHTML' || key === 'style') {
        throw new Error(`dom.el: "${key}" is not allowed (use on: {...} or a CSS class)`);
    } else if (LINK_ATTRS.has(key)) {
        const s = String(value);
        if (!safeLink(s)) {
            throw new Error(`dom.el: ${key}="${s}" is not a link inside the viewer`);
        }
        node.setAttribute(key, s);
    } else if (key === 'value' || key === 'checked' || key === 'disabled') {
        node[key] = value;
    } else {
        node.setAttribute(key, value === true ? '' : String(value));
    }
}

function append(node, child) {
    if (child === undefined || child === null || child === false) {
        return;
    }
    if (Array.isArray(child)) {
        child.forEach((c) => append(node, c));
    } else if (child instanceof Node) {
        node.appendChild(child);
    } else {
        node.appendChild(document.createTextNode(String(child)));
    }
}

/**
 * el('a', {href: '#/runs', class: 'x', on: {click: fn}}, 'text', otherNode, [more])
 * An element with properties and children; strings are text, whatever they contain.
 */
export function el(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
        for (const [key, value] of Object.entries(props)) {
            setProp(node, key, value);
        }
    }
    append(node, children);
    return node;
}

/** Put @p children (strings as text) in place of what @p node holds. */
export function replace(node, ...children) {
    node.replaceChildren();
    append(node, children);
    return node;
}

/** A table: columns [{title, num?}], rows of cells (strings as text, or nodes). */
export function table(columns, rows, props) {
    const head = el(
        'tr',
        null,
        columns.map((c) => el('th', { class: c.num ? 'num' : null }, c.title)),
    );
    const body = rows.map((cells) =>
        el(
            'tr',
            null,
            cells.map((cell, i) =>
                el('td', { class: columns[i].num ? 'num' : columns[i].mono ? 'mono' : null }, cell),
            ),
        ),
    );
    return el('table', { class: 'data', ...props }, el('thead', null, head), el('tbody', null, body));
}

/** A heading: @p text, then @p id in monospace, then @p rest (e.g. "Log of run <id>"). */
export function idHeading(text, id, rest) {
    return el('h1', null, text, el('span', { class: 'mono' }, id), rest);
}

/** A paragraph of links, [href, text] each, with " · " between them. */
export function linkRow(...links) {
    const parts = [];
    links.forEach(([href, text], i) => {
        parts.push(i > 0 ? ' · ' : null, el('a', { href }, text));
    });
    return el('p', { class: 'links' }, parts);
}

/** A short "nothing here yet, because ..." paragraph. */
export function waiting(text) {
    return el('p', { class: 'waiting' }, text);
}

/** An error paragraph: @p err's message, as text. */
export function errorBox(err) {
    return el('p', { class: 'error', role: 'alert' }, err && err.message ? err.message : String(err));
}
