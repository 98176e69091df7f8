/**
 * The Engine's LBaaS object model as the simulator stores and renders it (docs/engine-api.md#object-fields,
 * docs/engine-api.md#states, docs/engine-api.md#core-resources-and-tags). Objects keep their kind-specific fields in
 * a flat record, links as bare identifiers; rendering turns links into `{identifier, name}` references and the state
 * id into the state object.
 */

export const KINDS = ['loadbalancer', 'frontend', 'backend', 'bind', 'server', 'prefix', 'address'] as const;
export type Kind = (typeof KINDS)[number];

export function isKind(v: unknown): v is Kind {
  return typeof v === 'string' && (KINDS as readonly string[]).includes(v);
}

export type StateId = '0' | '1' | '2' | '3' | '4';
export type StateTitle = 'Updating' | 'Updated' | 'DeploymentError' | 'Deployed' | 'NewlyCreated';

export const STATES: Record<StateId, { title: StateTitle; type: number }> = {
  '0': { title: 'Updating', type: 1 },
  '1': { title: 'Updated', type: 1 },
  '2': { title: 'DeploymentError', type: 0 },
  '3': { title: 'Deployed', type: 1 },
  '4': { title: 'NewlyCreated', type: 2 },
};

export const STATE_BY_TITLE: Record<StateTitle, StateId> = {
  Updating: '0',
  Updated: '1',
  DeploymentError: '2',
  Deployed: '3',
  NewlyCreated: '4',
};

export const STATE_TITLES = ['Updating', 'Updated', 'DeploymentError', 'Deployed', 'NewlyCreated'] as const satisfies readonly StateTitle[];

export function isPending(state: StateId): boolean {
  return state === '0' || state === '4';
}

export type FieldValue = string | number | boolean;
export type Fields = Record<string, FieldValue>;

export interface FieldSpec {
  key: string;
  type: 'string' | 'int' | 'bool' | 'enum' | 'link';
  required?: boolean;
  def: FieldValue;
  values?: readonly string[];
  /** For links: the kind the identifier must name. */
  link?: Kind;
  /** Maintained in an index: usable as a list filter without scanning, and for referential integrity. */
  index?: boolean;
  /** Inclusive bounds for ints. */
  min?: number;
  max?: number;
  /**
   * `omitempty` in go-anxcloud's lbaas/v1 types: a sparse answer may leave the field out when it holds the zero
   * value, and a client must read the missing field as that zero value.
   */
  omitEmpty?: boolean;
}

export interface KindSpec {
  kind: Kind;
  title: string;
  collection: string;
  /** Core v1 resource type identifier. */
  typeId: string;
  /** Which API serves the kind: LBaaS v1 (routes/lbaas.ts) or IPAM v1 (routes/ipam.ts: reads, and address create and delete). */
  api?: 'ipam';
  fields: readonly FieldSpec[];
}

const MODE = ['tcp', 'http'] as const;

/** Our own choice: docs/engine-api.md#core-resources-and-tags knows no resource type id for LoadBalancer. */
export const LOADBALANCER_TYPE_ID = 'a7c0e7d6f2b14b5e9c3d8f1a2b6e4c90';

export const CUSTOMER_IDENTIFIER = 'c1a55e5f0a6b4d2c8e7f9a0b1c2d3e4f';
export const RESELLER_IDENTIFIER = 'e5e11e7f0a6b4d2c8e7f9a0b1c2d3e4f';

export const KIND_SPECS: Record<Kind, KindSpec> = {
  loadbalancer: {
    kind: 'loadbalancer',
    title: 'LoadBalancer',
    collection: 'loadbalancer.json',
    typeId: LOADBALANCER_TYPE_ID,
    fields: [{ key: 'ip_address', type: 'string', def: '' }],
  },
  frontend: {
    kind: 'frontend',
    title: 'Frontend',
    collection: 'frontend.json',
    typeId: 'da9d14b9d95840c08213de67f9cee6e2',
    fields: [
      { key: 'load_balancer', type: 'link', link: 'loadbalancer', required: true, index: true, def: '' },
      { key: 'default_backend', type: 'link', link: 'backend', required: true, index: true, def: '' },
      { key: 'mode', type: 'enum', values: MODE, index: true, def: 'tcp' },
      { key: 'client_timeout', type: 'string', def: '', omitEmpty: true },
    ],
  },
  backend: {
    kind: 'backend',
    title: 'Backend',
    collection: 'backend.json',
    typeId: '33164a3066a04a52be43c607f0c5dd8c',
    fields: [
      { key: 'load_balancer', type: 'link', link: 'loadbalancer', required: true, index: true, def: '' },
      { key: 'mode', type: 'enum', values: MODE, index: true, def: 'tcp' },
      { key: 'health_check', type: 'string', def: '', omitEmpty: true },
      { key: 'server_timeout', type: 'int', min: 0, max: 2147483647, def: 0, omitEmpty: true },
    ],
  },
  bind: {
    kind: 'bind',
    title: 'Bind',
    collection: 'bind.json',
    typeId: 'bd24def982aa478fb3352cb5f49aab47',
    fields: [
      { key: 'frontend', type: 'link', link: 'frontend', required: true, index: true, def: '' },
      { key: 'address', type: 'string', def: '' },
      { key: 'port', type: 'int', min: 0, max: 65535, def: 0 },
      { key: 'ssl', type: 'bool', def: false },
      { key: 'ssl_certificate_path', type: 'string', def: '', omitEmpty: true },
    ],
  },
  server: {
    kind: 'server',
    title: 'Server',
    collection: 'server.json',
    typeId: '01f321a4875446409d7d8469503a905f',
    fields: [
      { key: 'backend', type: 'link', link: 'backend', required: true, index: true, def: '' },
      { key: 'ip', type: 'string', def: '' },
      { key: 'port', type: 'int', min: 0, max: 65535, def: 0 },
      { key: 'check', type: 'enum', values: ['enabled', 'disabled'], def: 'disabled', omitEmpty: true },
    ],
  },
  // IPAM v1 (docs/engine-api.md#ipam-prefixes-and-addresses): the name is the CIDR or the address itself.
  prefix: {
    kind: 'prefix',
    title: 'Prefix',
    collection: 'prefix.json',
    typeId: '6a3d8e1f5b7c4a2e9d0f1b3c5e7a9d21',
    api: 'ipam',
    fields: [],
  },
  address: {
    kind: 'address',
    title: 'Address',
    collection: 'address.json',
    typeId: '1f8b2c4d6e0a4b7c9d3e5f7a9b1c3d45',
    api: 'ipam',
    fields: [
      { key: 'prefix', type: 'link', link: 'prefix', required: true, index: true, def: '' },
      // What the customer wrote on create (go-anxcloud's ipam address Create and Summary).
      { key: 'description_customer', type: 'string', def: '' },
    ],
  },
};

/** LBaaS v1 collections only: IPAM kinds live under their own API. */
export const KIND_BY_COLLECTION: ReadonlyMap<string, Kind> = new Map(
  KINDS.filter((k) => KIND_SPECS[k].api === undefined).map((k) => [KIND_SPECS[k].collection, k] as const),
);

/** Every (kind, field) that links to `target`: who may reference an object of that kind. */
export function referrersOf(target: Kind): { kind: Kind; field: string }[] {
  const out: { kind: Kind; field: string }[] = [];
  for (const k of KINDS) {
    for (const f of KIND_SPECS[k].fields) if (f.type === 'link' && f.link === target) out.push({ kind: k, field: f.key });
  }
  return out;
}

export interface SimObject {
  kind: Kind;
  identifier: string;
  name: string;
  fields: Fields;
  state: StateId;
  tags: Set<string>;
  createdAt: number;
  updatedAt: number;
  /** The deploy delay drawn for the latest deploy (create or update), null when never deployed by us. */
  deployMs: number | null;
  deployStartedAt: number | null;
  /** When the latest deploy settled (ready or failed); null while pending or never deployed by us. */
  deployedAt: number | null;
  /**
   * When a GET first answered the settled deploy (null until then, and again when a deploy starts): how long after the
   * deploy ended a client noticed it. Admin view only (the benchmark splits a reconciler's reaction with it); not kept in
   * the state file.
   */
  deploySeenAt: number | null;
  /** The state a pending deploy will end in, drawn when it started. */
  pendingResult: StateId | null;
  /** Deletion accepted; the object is out of every list and index and answers GET until it is dropped. */
  deleting: boolean;
  deleteMs: number | null;
  timer: NodeJS.Timeout | null;
}

export interface Ref {
  identifier: string;
  name: string;
}

export const ID_PATTERN = /^[0-9a-f]{32}$/;
