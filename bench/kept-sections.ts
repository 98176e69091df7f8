/**
 * Sections of docs/benchmarks.md that `npm run bench` does not measure but keeps when it rewrites the file: between
 * markers, each written by hand or by its own tool.
 */

/** The test suite's own time (README, Development): measured by running `npm test` on a quiet machine. */
export const SUITE_TIME_MARK = {
  begin: '<!-- suite-time:begin (measured by hand with `npm test`; kept by `npm run bench`) -->',
  end: '<!-- suite-time:end -->',
} as const;

/** The marked section of `text`, markers included, or '' when it has none. */
export function markedSection(text: string, mark: { begin: string; end: string }): string {
  const a = text.indexOf(mark.begin);
  const b = text.indexOf(mark.end);
  return a >= 0 && b > a ? text.slice(a, b + mark.end.length) : '';
}

/** `written` (a freshly rendered file) with the hand-kept sections of `previous` appended, each once. */
export function withKeptSections(written: string, previous: string): string {
  const suite = markedSection(previous, SUITE_TIME_MARK);
  if (!suite || written.includes(SUITE_TIME_MARK.begin)) return written;
  return `${written.trimEnd()}\n\n${suite}\n`;
}
