/**
 * What `lbaas import` reads and returns (domain/import.ts rebuilds specs from it). Plain JSON: an inventory is an
 * activity's result and the import result a workflow's, both in history, so neither carries a secret.
 */
import type { Kind, PortSpec, ServerSpec, StateName } from './types';

/** One Backend, Frontend, Bind or Server found on a load balancer, whoever owns it. */
export interface InventoryObject {
  kind: Kind;
  identifier: string;
  name: string;
  state: StateName;
  /** The uids of the object's `anxccm-svc-uid=<uid>` tags: empty for an untagged object, more than one is an error. */
  serviceUids: string[];
  /** The compared fields of the kind (domain/kinds), links as the linked object's identifier. */
  fields: Record<string, string | number | boolean>;
}

/** Everything of the four kinds on one load balancer, as read by the importServices workflow's activity. */
export interface LoadBalancerInventory {
  loadBalancer: string;
  /** False when the Engine has no load balancer with this identifier. */
  found: boolean;
  objects: InventoryObject[];
}

/** Something that keeps a spec from being rebuilt exactly, named down to the object when there is one. */
export interface ImportProblem {
  loadBalancer?: string;
  kind?: Kind;
  name?: string;
  identifier?: string;
  message: string;
}

/** A spec as a file holds it: the keys of docs/cli.md's spec format, readiness and failedResources left to their defaults. */
export interface SpecDocument {
  serviceUid: string;
  nameSuffix: string;
  loadBalancers: string[];
  externalAddresses: string[];
  ports: Record<string, PortSpec>;
  servers: ServerSpec[];
}

export interface ImportedService {
  serviceUid: string;
  /** The given load balancers holding objects tagged for the service. */
  loadBalancers: string[];
  /** Objects tagged for the service on the given load balancers. */
  objects: number;
  /**
   * The rebuilt spec; null when not even a spec to correct by hand can be written (no Backend, a port whose
   * internal or external port no object shows). Exact only when `problems` is empty.
   */
  spec: SpecDocument | null;
  problems: ImportProblem[];
  /** Facts worth knowing that do not make the spec inexact (objects apply will recover, a naming reading). */
  notes: string[];
}
