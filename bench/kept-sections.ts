/**
 * Sections of docs/benchmarks.md that `npm run bench` does not measure but keeps when it rewrites the file: between
 * markers, each written by hand or by its own tool.
 */

/** The test suite's own time (README, Development): measured by running `npm test` on a quiet machine. */
export const SUITE_TIME_MARK = {
  begin: '<!-- suite-time:begin (measured by hand with `npm test`; kept by `npm run bench`) -->',
  end: '<!-- suite-time:end -->',
} as const;

/** What each latency mechanism buys: written by `npm run bench -- --core` (bench/report-ab.ts), kept by the full run. */
export const AB_MARK = {
  begin: '<!-- mechanisms-ab:begin (written by `npm run bench -- --core`; kept by `npm run bench`) -->',
  end: '<!-- mechanisms-ab:end -->',
} as const;

/** `lbaas kube` at cluster scale beside the controller fleet: written by `npm run bench -- --kube` (bench/kube.ts). */
export const KUBE_MARK = {
  begin: '<!-- kube:begin (written by `npm run bench -- --kube`; kept by `npm run bench`) -->',
  end: '<!-- kube:end -->',
} as const;

/** Mechanisms measured and removed, with the A/B that removed each: written by hand, after the A/B section. */
export const REMOVED_MARK = {
  begin: '<!-- removed-mechanisms:begin (written by hand; kept by `npm run bench`) -->',
  end: '<!-- removed-mechanisms:end -->',
} as const;

/** The marked section of `text`, markers included, or '' when it has none. */
export function markedSection(text: string, mark: { begin: string; end: string }): string {
  const a = text.indexOf(mark.begin);
  const b = text.indexOf(mark.end);
  return a >= 0 && b > a ? text.slice(a, b + mark.end.length) : '';
}

/** `written` (a freshly rendered file) with the kept sections of `previous` appended, each once. */
export function withKeptSections(written: string, previous: string): string {
  let out = written;
  for (const mark of [KUBE_MARK, AB_MARK, REMOVED_MARK, SUITE_TIME_MARK]) {
    const kept = markedSection(previous, mark);
    if (kept && !out.includes(mark.begin)) out = `${out.trimEnd()}\n\n${kept}\n`;
  }
  return out;
}

/**
 * `text` with its marked section replaced by `section` (markers included), or, when it has none, with `section`
 * inserted before the test suite's section (or appended).
 */
export function withSection(text: string, mark: { begin: string; end: string }, section: string): string {
  const old = markedSection(text, mark);
  if (old) return text.replace(old, () => section);
  const suite = text.indexOf(SUITE_TIME_MARK.begin);
  if (suite >= 0) return `${text.slice(0, suite)}${section}\n\n${text.slice(suite)}`;
  return `${text.trimEnd()}\n\n${section}\n`;
}
