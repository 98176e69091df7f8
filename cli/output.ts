/**
 * Output for people and for programs. `-o json` writes exactly one JSON document to stdout (nothing else goes
 * there); text output is aligned tables and `key  value` blocks. Progress and errors always go to stderr.
 */

export type OutputFormat = 'text' | 'json';

/** One JSON document, indented for people who read it too, ending with a newline. */
export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * Columns aligned on the widest cell, two spaces apart, headers in capitals; no trailing spaces. An empty table is
 * just its header, so a reader sees the columns that would be there.
 */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [headers.map((h) => h.toUpperCase()), ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => width(r[i] ?? ''))));
  return all
    .map((r) =>
      headers
        .map((_, i) => {
          const cell = r[i] ?? '';
          return i === headers.length - 1 ? cell : cell + ' '.repeat((widths[i] ?? 0) - width(cell));
        })
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** `key  value` lines with the values aligned; a multi-line value continues under the first. */
export function keyValues(pairs: readonly (readonly [string, string])[]): string {
  const w = Math.max(0, ...pairs.map(([k]) => width(k)));
  const pad = ' '.repeat(w + 2);
  return pairs
    .map(([k, v]) => {
      const [first = '', ...rest] = v.split('\n');
      return [`${k}${' '.repeat(w - width(k))}  ${first}`.trimEnd(), ...rest.map((l) => `${pad}${l}`.trimEnd())].join('\n');
    })
    .map((line) => `${line}\n`)
    .join('');
}

/** Address -> ports as `203.0.113.10: 80, 443` lines; `-` when there is nothing. */
export function formatStatus(status: Record<string, readonly number[]>): string {
  const entries = Object.entries(status);
  if (entries.length === 0) return '-';
  return entries.map(([addr, ports]) => `${addr}: ${ports.join(', ')}`).join('\n');
}

/** Width in terminal columns, counting code points (good enough for the ASCII and the odd ellipsis we print). */
function width(text: string): number {
  return [...text].length;
}

/** A time for people: ISO 8601 in UTC to the second, or `-`. */
export function formatTime(t: Date | number | null | undefined): string {
  if (t === null || t === undefined) return '-';
  const d = typeof t === 'number' ? new Date(t) : t;
  return Number.isNaN(d.getTime()) ? '-' : `${d.toISOString().slice(0, 19)}Z`;
}

/** Cut long cells (identifiers, error messages) so one object cannot make a table unreadable. */
export function ellipsize(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}
