/**
 * Durations as operators write them in a spec: `250ms`, `1s`, `5m`, `1h`, and combinations such as `1m30s` or
 * `1.5s`, like Go's time.ParseDuration restricted to the units a readiness policy needs.
 */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Inputs longer than this are rejected without parsing: no real duration needs more. */
const MAX_TEXT_LENGTH = 32;

const COMPONENT = String.raw`(\d+)(?:\.(\d{1,9}))?(ms|s|m|h)`;

/**
 * Milliseconds, or null when the text is not a duration or is not a whole number of milliseconds. No sign, no
 * spaces, no bare numbers: `30` could mean seconds or milliseconds, so it is refused rather than guessed.
 */
export function parseDuration(text: string): number | null {
  if (text.length === 0 || text.length > MAX_TEXT_LENGTH) return null;
  const component = new RegExp(COMPONENT, 'y');
  let total = 0;
  while (component.lastIndex < text.length) {
    const match = component.exec(text);
    if (match === null) return null;
    const [, whole = '', fraction = '', unit = ''] = match;
    const unitMs = UNIT_MS[unit];
    if (unitMs === undefined) return null;
    // Integer arithmetic only: 1.1 * 1000 is 1100.0000000000002 in floating point.
    const scale = 10 ** fraction.length;
    const fractionMs = fraction === '' ? 0 : (Number(fraction) * unitMs) / scale;
    if (!Number.isInteger(fractionMs)) return null;
    total += Number(whole) * unitMs + fractionMs;
  }
  return Number.isSafeInteger(total) ? total : null;
}

/** The inverse for messages: `90000` -> `1m30s`, `250` -> `250ms`, `0` -> `0s`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1_000], ['ms', 1]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return out;
}
