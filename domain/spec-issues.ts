/** The building blocks of spec validation: issues with field paths, and shape checks that never throw. */

/** One violation. `path` names the field (`ports.http.external`, `servers[0].address`); '' is the spec itself. */
export interface SpecIssue {
  path: string;
  message: string;
}

/** One line per issue, `path: message` (just the message for the spec itself), in the order found. */
export function formatIssues(issues: readonly SpecIssue[]): string {
  return issues.map((issue) => (issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`)).join('\n');
}

/** Keys longer than this are cut in paths and messages, so a hostile key cannot make an error huge. */
const MAX_KEY_IN_PATH = 64;

/** Unknown keys reported per object; the rest are counted in one further issue. */
const MAX_UNKNOWN_KEYS_REPORTED = 10;

export function shorten(text: string, max = MAX_KEY_IN_PATH): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** `base.key`, or `base["odd key"]` when the key is empty or has characters that would make the path ambiguous. */
export function keyPath(base: string, key: string): string {
  const shown = shorten(key);
  if (/^[A-Za-z0-9_-]+$/.test(shown)) return base === '' ? shown : `${base}.${shown}`;
  return `${base}[${JSON.stringify(shown)}]`;
}

export function indexPath(base: string, index: number): string {
  return `${base}[${index}]`;
}

/** A JSON/YAML mapping: a plain object, not an array, not null. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class IssueList {
  readonly issues: SpecIssue[] = [];

  add(path: string, message: string): void {
    this.issues.push({ path, message });
  }

  /** Reports every key of `value` not in `allowed`, each at its own path so a typo is named exactly. */
  unknownKeys(value: Record<string, unknown>, allowed: readonly string[], path: string): void {
    const unknown = Object.keys(value).filter((key) => !allowed.includes(key));
    for (const key of unknown.slice(0, MAX_UNKNOWN_KEYS_REPORTED)) {
      this.add(keyPath(path, key), `unknown key (allowed: ${allowed.join(', ')})`);
    }
    if (unknown.length > MAX_UNKNOWN_KEYS_REPORTED) {
      this.add(path, `${unknown.length - MAX_UNKNOWN_KEYS_REPORTED} more unknown keys`);
    }
  }

  /**
   * The list at `value`, or null after reporting why not. Lists longer than `max` are refused whole, before any
   * element is looked at, so a hostile spec cannot make validation do unbounded work.
   */
  list(value: unknown, path: string, max: number, what: string): unknown[] | null {
    if (value === undefined) {
      this.add(path, 'required');
      return null;
    }
    if (!Array.isArray(value)) {
      this.add(path, `must be a list of ${what}`);
      return null;
    }
    if (value.length > max) {
      this.add(path, `must list at most ${max} ${what} (has ${value.length})`);
      return null;
    }
    return value;
  }

  /** The string at `value`, or null after reporting that it is missing or not a string. */
  string(value: unknown, path: string): string | null {
    if (value === undefined) {
      this.add(path, 'required');
      return null;
    }
    if (typeof value !== 'string') {
      this.add(path, 'must be a string');
      return null;
    }
    return value;
  }
}
