// views/crashes_text.js - the text files of a crash package read into parts the crash page can
// show (docs/crash.md, "The package"): manifest.txt's key=value lines, crash.txt's signal keys,
// [registers] and [backtrace] frames ("#N 0xPC MODULE+0xOFFSET"), and log lines ("<time>
// LEVEL thread file:line: message"). Pure functions over strings from the crashed program;
// lines they do not recognise are kept as they are, so nothing is hidden.

/** manifest.txt or a key=value section: a Map of key to value (first occurrence wins). */
export function parseKeyValues(lines) {
    const out = new Map();
    for (const line of lines) {
        const eq = line.indexOf('=');
        if (eq > 0 && !out.has(line.slice(0, eq))) {
            out.set(line.slice(0, eq), line.slice(eq + 1));
        }
    }
    return out;
}

/** The lines of @p text, without the empty one after a last '\n'. */
export function splitLines(text) {
    const lines = String(text).split('\n');
    if (lines.length > 0 && lines[lines.length - 1] === '') {
        lines.pop();
    }
    return lines;
}

const FRAME_RE = /^#([0-9]+)\s+(0x[0-9a-fA-F]+)(?:\s+(.*?))?\s*$/;
const MODULE_RE = /^(.*)\+(0x[0-9a-fA-F]+)$/;

/** One backtrace line: {index, pc, module, offset} (module/offset null when absent) or null. */
export function parseFrame(line) {
    const m = FRAME_RE.exec(line);
    if (m === null) {
        return null;
    }
    const where = m[3] || '';
    const mod = MODULE_RE.exec(where);
    return {
        index: Number(m[1]),
        pc: m[2],
        module: mod ? mod[1] : where || null,
        offset: mod ? mod[2] : null,
    };
}

/**
 * crash.txt: {keys: Map (the signal keys at the top), registers: Map, frames: [frame],
 * notes: [string] ("# ..." comments of the backtrace), other: [{name, lines}] (any other
 * section, as its lines), unparsed: [string] (backtrace lines that are not frames)}.
 */
export function parseCrashTxt(text) {
    const sections = [{ name: '', lines: [] }];
    for (const line of splitLines(text)) {
        const head = /^\[([^\]]+)\]\s*$/.exec(line);
        if (head) {
            sections.push({ name: head[1], lines: [] });
        } else {
            sections[sections.length - 1].lines.push(line);
        }
    }
    const out = { keys: new Map(), registers: new Map(), frames: [], notes: [], other: [], unparsed: [] };
    for (const s of sections) {
        const lines = s.lines.filter((l) => l.trim() !== '');
        if (s.name === '') {
            out.keys = parseKeyValues(lines);
        } else if (s.name === 'registers') {
            out.registers = parseKeyValues(lines);
        } else if (s.name === 'backtrace') {
            for (const line of lines) {
                const f = parseFrame(line);
                if (f !== null) {
                    out.frames.push(f);
                } else if (/^#\s/.test(line)) {
                    out.notes.push(line.replace(/^#\s*/, ''));
                } else {
                    out.unparsed.push(line);
                }
            }
        } else if (lines.length > 0) {
            out.other.push({ name: s.name, lines });
        }
    }
    return out;
}

/**
 * "addr2line" commands that symbolise @p frames, one per module (docs/crash.md,
 * "Symbolising": frame 0's offset as it is, later frames' offset - 1, since they are return
 * addresses). Modules whose name has a blank or a quote are left out (no shell quoting games).
 */
export function addr2lineCommands(frames) {
    const byModule = new Map();
    for (const f of frames) {
        if (f.module === null || f.offset === null || !/^[^\s'"\\$`]+$/.test(f.module)) {
            continue;
        }
        let off = BigInt(f.offset);
        if (f.index > 0 && off > 0n) {
            off -= 1n;
        }
        if (!byModule.has(f.module)) {
            byModule.set(f.module, []);
        }
        byModule.get(f.module).push(`0x${off.toString(16)}`);
    }
    return [...byModule].map(([mod, offs]) => `addr2line -f -C -i -e ${mod} ${offs.join(' ')}`);
}

const LOG_LEVELS = ['INFO', 'WARNING', 'ERROR', 'FATAL'];

/** The level word of a log line ("<time> LEVEL ..."), or null. */
export function logLevel(line) {
    const m = /^\S+\s+([A-Z]+)\s/.exec(line);
    return m && LOG_LEVELS.includes(m[1]) ? m[1] : null;
}

/** The time at the start of a log.txt line ("2026-12-01T07:34:00.123456789Z ..."), or null. */
export function logLineTime(line) {
    const m = /^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z)\s/.exec(line);
    return m ? m[1] : null;
}

/**
 * @p ns (nanoseconds since the epoch, a decimal string) as log.txt writes times:
 * "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (so two of them compare as strings); null if not a number.
 */
export function isoNs(ns) {
    if (!/^[0-9]{1,20}$/.test(String(ns))) {
        return null;
    }
    const n = BigInt(ns);
    const d = new Date(Number(n / 1000000000n) * 1000);
    if (Number.isNaN(d.getTime())) {
        return null;
    }
    const frac = String(n % 1000000000n).padStart(9, '0');
    return `${d.toISOString().slice(0, 19)}.${frac}Z`;
}
