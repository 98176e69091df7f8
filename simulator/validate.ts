/**
 * Turns a create/update/seed body into stored fields. Tolerant where the Engine's clients differ (links as bare
 * ids or as `{identifier}` objects, ints as numeric strings), strict where a wrong value would break the echo.
 * Unknown keys are ignored (docs/engine-api.md#requests).
 */
import { isIP } from 'node:net';
import { type Fields, type FieldSpec, type FieldValue, KIND_SPECS, type Kind } from './model';

/** `<address>/<length>` with the length within the family's bits. */
export function isCidr(text: string): boolean {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
  if (!m?.[1] || !m[2]) return false;
  const family = isIP(m[1]);
  return family !== 0 && Number(m[2]) <= (family === 4 ? 32 : 128);
}

const IPAM_NAME_RULES: Partial<Record<Kind, { valid: (name: string) => boolean; message: string }>> = {
  prefix: { valid: isCidr, message: 'Must be a prefix in CIDR notation (address/length).' },
  address: { valid: (n) => isIP(n) !== 0, message: 'Must be an IPv4 or IPv6 address.' },
};

export type Validation = Record<string, string>;

export interface ParsedFields {
  name: string;
  fields: Fields;
  /** Links that must be checked against the store: field -> [identifier, kind]. */
  links: { field: string; identifier: string; kind: Kind }[];
  errors: Validation;
}

function parseValue(spec: FieldSpec, raw: unknown): { value?: FieldValue; error?: string } {
  switch (spec.type) {
    case 'string':
      return typeof raw === 'string' ? { value: raw } : { error: 'Must be a string.' };
    case 'enum':
      if (typeof raw === 'string' && spec.values?.includes(raw)) return { value: raw };
      return { error: `Must be one of: ${(spec.values ?? []).join(', ')}.` };
    case 'bool':
      if (typeof raw === 'boolean') return { value: raw };
      if (raw === 'true' || raw === 'false') return { value: raw === 'true' };
      return { error: 'Must be a boolean.' };
    case 'int': {
      let n: number | undefined;
      if (typeof raw === 'number' && Number.isInteger(raw)) n = raw;
      else if (typeof raw === 'string' && /^-?\d{1,15}$/.test(raw)) n = Number(raw);
      if (n === undefined) return { error: 'Must be an integer.' };
      if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)) {
        return { error: `Must be between ${spec.min ?? '-inf'} and ${spec.max ?? 'inf'}.` };
      }
      return { value: n };
    }
    case 'link': {
      let id: unknown = raw;
      if (raw !== null && typeof raw === 'object' && 'identifier' in raw) id = (raw as { identifier: unknown }).identifier;
      if (typeof id !== 'string' || id === '') return { error: 'Must be the identifier of an existing object.' };
      return { value: id };
    }
  }
}

/**
 * `base` is the object's current state for updates (missing keys keep their value) or null for creates
 * (missing keys take the default, or fail when required).
 */
export function parseFields(kind: Kind, body: Record<string, unknown>, base: { name: string; fields: Fields } | null): ParsedFields {
  const errors: Validation = {};
  const fields: Fields = {};
  const links: ParsedFields['links'] = [];

  let name = base?.name ?? '';
  const rawName = body.name;
  if (rawName === undefined || rawName === null) {
    if (!base) errors.name = 'This field is required.';
  } else if (typeof rawName !== 'string') {
    errors.name = 'Must be a string.';
  } else {
    name = rawName;
  }
  // IPAM objects are named by what they are: a prefix by its CIDR, an address by the address.
  const nameRule = IPAM_NAME_RULES[kind];
  if (nameRule && (rawName !== undefined || !base) && !nameRule.valid(name) && errors.name === undefined) errors.name = nameRule.message;

  for (const spec of KIND_SPECS[kind].fields) {
    const raw = body[spec.key];
    let value: FieldValue;
    if (raw === undefined || raw === null) {
      const kept = base?.fields[spec.key];
      if (kept !== undefined) value = kept;
      else if (spec.required && !base) {
        errors[spec.key] = 'This field is required.';
        continue;
      } else value = spec.def;
    } else {
      const r = parseValue(spec, raw);
      if (r.error !== undefined || r.value === undefined) {
        errors[spec.key] = r.error ?? 'Invalid value.';
        continue;
      }
      value = r.value;
    }
    fields[spec.key] = value;
    if (spec.type === 'link' && spec.link && value !== '') links.push({ field: spec.key, identifier: String(value), kind: spec.link });
  }
  return { name, fields, links, errors };
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
