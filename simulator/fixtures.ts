/**
 * Fixtures and drift, the admin API's object operations: seeding an object (optionally forced past validation
 * and links) and patching one out of band. Both bypass the request faults and the Engine's manners.
 */
import { ID_PATTERN, isPending, type Kind, type SimObject, STATE_BY_TITLE, type StateTitle } from './model';
import { SimError } from './errors';
import type { Simulator } from './sim';
import { parseFields } from './validate';

export interface SeedInput {
  kind: Kind;
  fields?: Record<string, unknown>;
  name?: string;
  state?: StateTitle;
  tags?: string[];
  identifier?: string;
  force?: boolean;
}

export interface PatchInput {
  name?: string;
  state?: StateTitle;
  fields?: Record<string, unknown>;
  tags?: string[];
  force?: boolean;
}

export function seedObject(sim: Simulator, input: SeedInput): SimObject {
  const force = input.force === true;
  const id = input.identifier ?? sim.newIdentifier();
  if (!force && !ID_PATTERN.test(id)) {
    throw new SimError(422, 'Validation failed.', { identifier: 'Must be 32 lowercase hex characters.' });
  }
  if (id === '' || id.includes('/')) throw new SimError(422, 'Validation failed.', { identifier: 'Invalid identifier.' });
  if (sim.store.byId.has(id)) throw new SimError(409, `Object ${id} already exists.`);
  const body = { ...(input.fields ?? {}) };
  if (body.name === undefined && input.name !== undefined) body.name = input.name;
  const parsed = parseFields(input.kind, body, force ? { name: '', fields: {} } : null);
  if (!force) sim.checkLinks(parsed);
  sim.fail(parsed);
  const o = sim.newObject(input.kind, id, parsed.name, parsed.fields, STATE_BY_TITLE[input.state ?? 'Deployed']);
  for (const t of input.tags ?? []) o.tags.add(t);
  sim.store.insert(o);
  if (!force && isPending(o.state)) sim.startDeploy(o, o.state === '4' ? 'create' : 'update');
  sim.onChange();
  return o;
}

/** Tags given here reach the tag index at once: drift is injected as a finished fact, not as a request. */
export function patchObject(sim: Simulator, id: string, input: PatchInput): SimObject {
  const o = sim.store.getLive(id);
  if (!o) throw new SimError(404, `Object ${id} not found.`);
  const force = input.force === true;
  const body = { ...(input.fields ?? {}) };
  if (body.name === undefined && input.name !== undefined) body.name = input.name;
  const parsed = parseFields(o.kind, body, o);
  if (!force) sim.checkLinks(parsed);
  sim.fail(parsed);
  sim.store.setFields(o, parsed.name, parsed.fields);
  if (input.tags) {
    for (const t of [...o.tags]) sim.store.removeTag(o, t);
    for (const t of input.tags) sim.store.addTag(o, t);
  }
  if (input.state) {
    sim.cancelTimer(o);
    o.pendingResult = null;
    o.state = STATE_BY_TITLE[input.state];
    if (!force && isPending(o.state)) sim.startDeploy(o, o.state === '4' ? 'create' : 'update');
  }
  o.updatedAt = Date.now();
  sim.onChange();
  return o;
}
