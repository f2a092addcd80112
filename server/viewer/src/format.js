// format.js - numbers, sizes and times as the viewer shows them.

/** 1536 -> "1.5 KiB"; null/undefined -> "-". */
export function bytes(n) {
    if (n === null || n === undefined) {
        return '-';
    }
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = Number(n);
    let u = 0;
    while (v >= 1024 && u < units.length - 1) {
        v /= 1024;
        u++;
    }
    return u === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

/** Seconds as "3 h 02 min", "4 min 05 s", "12 s". */
export function duration(seconds) {
    const s = Math.max(0, Math.floor(Number(seconds) || 0));
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    const r = s % 60;
    if (h > 0) {
        return `${h} h ${String(m).padStart(2, '0')} min`;
    }
    if (m > 0) {
        return `${m} min ${String(r).padStart(2, '0')} s`;
    }
    return `${r} s`;
}

/** An ISO 8601 time from the server as local "YYYY-MM-DD HH:MM:SS"; the input if unparsable. */
export function time(iso) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) {
        return String(iso ?? '-');
    }
    const p = (x) => String(x).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
