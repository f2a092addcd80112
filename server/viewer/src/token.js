// token.js - the token prompt: a modal dialog asking for the server's bearer token when a
// request is answered 401. The token is checked for the server's shape (16..255 visible
// ASCII bytes) before it is tried, handed to api.js (which keeps it in sessionStorage), and
// cleared from the field at once. The input has no name and the form is never submitted to
// a URL, so the token cannot end up in one.

import { el, replace } from './dom.js';

const TOKEN_SHAPE = /^[\x21-\x7e]{16,255}$/;

let dialog = null;

function build() {
    const message = el('p', { class: 'refused', role: 'alert', id: 'token-message' });
    const input = el('input', {
        type: 'password',
        id: 'token-input',
        autocomplete: 'off',
        spellcheck: 'false',
        'aria-describedby': 'token-message',
        required: true,
    });
    const form = el(
        'form',
        { method: 'dialog' },
        el(
            'label',
            { for: 'token-input' },
            'This server needs its bearer token (the contents of its --token-file).',
        ),
        input,
        message,
        el('button', { type: 'submit', id: 'token-submit' }, 'Use token'),
    );
    const d = el(
        'dialog',
        { class: 'token', id: 'token-dialog', 'aria-labelledby': 'token-title' },
        el('h1', { id: 'token-title' }, 'Token needed'),
        form,
    );
    // Escape would close the dialog with no token: keep asking instead.
    d.addEventListener('cancel', (ev) => ev.preventDefault());
    document.body.appendChild(d);
    return { d, form, input, message };
}

/**
 * Show the prompt (with @p message, e.g. why the last token was refused) and resolve with the
 * token typed in. api.js calls it; one prompt is open at a time.
 */
export function askToken(message) {
    if (dialog === null) {
        dialog = build();
    }
    const { d, form, input } = dialog;
    replace(dialog.message, message || '');
    return new Promise((resolve) => {
        const onSubmit = (ev) => {
            ev.preventDefault();
            const token = input.value.trim();
            input.value = '';
            if (!TOKEN_SHAPE.test(token)) {
                replace(dialog.message, 'A token is 16 to 255 visible ASCII characters, without spaces.');
                input.focus();
                return;
            }
            form.removeEventListener('submit', onSubmit);
            replace(dialog.message, '');
            d.close();
            resolve(token);
        };
        form.addEventListener('submit', onSubmit);
        if (!d.open) {
            d.showModal();
        }
        input.focus();
    });
}
