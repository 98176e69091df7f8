/**
 * Every write lbaas kube makes to the cluster, besides its Lease: Service metadata (the cleanup finalizer, the record
 * of allocated VIPs), Service status (the ingress, with the condition recording the spec converged), and Events on the
 * Service. Metadata patches carry the resourceVersion they were computed from, so a concurrent change makes them fail
 * (409) instead of undoing it; the sync then runs again on the newer object.
 */
import { mergePatch, metadataOnly, strategicMergePatch, type KubeTarget } from './client';
import { CLEANUP_FINALIZER, type IngressEntry } from './mapping';
import { VIP_ADDRESSES_ANNOTATION } from './service-options';
import type { KubeService } from './objects';

/**
 * The Service condition that records the hash of the spec (and ingress inputs) lbaas kube last converged and reported
 * for it: a restart skips what matches. Written with the ingress in one status write, so the two never disagree.
 */
export const APPLIED_CONDITION = 'lbaas.anx.io/SpecConverged';
/**
 * Where earlier releases recorded that hash, in a metadata write of its own: still read (a Service they reported is
 * not applied again after an upgrade) and removed when the Service is released.
 */
export const APPLIED_ANNOTATION = 'lbaas.anx.io/applied-spec';
const APPLIED_MESSAGE = /^spec (sha256:[0-9a-f]+) converged$/;

/** The hash of the spec last converged and reported for the Service: its condition's, else an earlier release's annotation. */
export function appliedHash(svc: KubeService): string | undefined {
  const c = svc.status?.conditions?.find((x) => x.type === APPLIED_CONDITION);
  if (c) return c.status === 'True' ? APPLIED_MESSAGE.exec(c.message ?? '')?.[1] : undefined;
  return svc.metadata.annotations?.[APPLIED_ANNOTATION];
}

/** The component named on Events, as `kubectl describe service` shows it. */
export const EVENT_SOURCE = 'lbaas-kube';

export class ServiceWrites {
  /** The call options of each kind of write, made once: every answer trimmed to what is read of it (metadataOnly). */
  readonly #opts: { merge: ReturnType<typeof metadataOnly>; strategic: ReturnType<typeof metadataOnly>; create: ReturnType<typeof metadataOnly> };

  constructor(
    readonly t: KubeTarget,
    readonly identity: string,
  ) {
    this.#opts = { merge: metadataOnly(t.mod, mergePatch(t.mod)), strategic: metadataOnly(t.mod, strategicMergePatch(t.mod)), create: metadataOnly(t.mod) };
  }

  /** Returns the resourceVersion the write left, for a write right after it that must not undo it. */
  async #patchMeta(svc: KubeService, metadata: Record<string, unknown>): Promise<string | undefined> {
    const updated = await this.t.core.patchNamespacedService(
      { name: svc.metadata.name, namespace: svc.metadata.namespace, body: { metadata: { ...metadata, resourceVersion: svc.metadata.resourceVersion } } },
      this.#opts.merge,
    );
    return updated.metadata?.resourceVersion;
  }

  /** The Service as it is after the write (the finalizer added, its new resourceVersion). */
  async addFinalizer(svc: KubeService): Promise<KubeService> {
    const finalizers = [...(svc.metadata.finalizers ?? []), CLEANUP_FINALIZER];
    const resourceVersion = await this.#patchMeta(svc, { finalizers });
    return { ...svc, metadata: { ...svc.metadata, finalizers, ...(resourceVersion ? { resourceVersion } : {}) } };
  }

  /**
   * Removes the finalizer, the applied-spec annotation and the record of released VIPs in one write (the Service may
   * be deleted right after).
   */
  async release(svc: KubeService): Promise<void> {
    const finalizers = (svc.metadata.finalizers ?? []).filter((f) => f !== CLEANUP_FINALIZER);
    await this.#patchMeta(svc, { finalizers, annotations: { [APPLIED_ANNOTATION]: null, [VIP_ADDRESSES_ANNOTATION]: null } });
  }

  /**
   * Records the VIPs allocated for the Service, for its teardown to release. No resourceVersion: the record must land
   * whatever else changed (that change has its own sync). Returns the resourceVersion the write left.
   */
  async recordVips(svc: KubeService, addresses: string[]): Promise<string | undefined> {
    const updated = await this.t.core.patchNamespacedService(
      { name: svc.metadata.name, namespace: svc.metadata.namespace, body: { metadata: { annotations: { [VIP_ADDRESSES_ANNOTATION]: addresses.join(',') } } } },
      this.#opts.merge,
    );
    return updated.metadata?.resourceVersion;
  }

  /**
   * The outcome of a converged pass, in one status write: the ingress and the condition naming the spec's hash. A
   * strategic merge patch, so other conditions on the Service are left as they are.
   */
  async report(svc: KubeService, ingress: IngressEntry[], hash: string): Promise<void> {
    const condition = { type: APPLIED_CONDITION, status: 'True', reason: 'Converged', message: `spec ${hash} converged`, lastTransitionTime: new Date().toISOString(), observedGeneration: svc.metadata.generation ?? 0 };
    await this.#patchStatus(svc, { loadBalancer: { ingress }, conditions: [condition] });
  }

  /** The ingress and the condition removed (a Service no longer ours); returns the Service's resourceVersion after the write. */
  async clearReport(svc: KubeService): Promise<string | undefined> {
    return this.#patchStatus(svc, { loadBalancer: { ingress: [] }, conditions: [{ type: APPLIED_CONDITION, $patch: 'delete' }] });
  }

  async #patchStatus(svc: KubeService, status: Record<string, unknown>): Promise<string | undefined> {
    const updated = await this.t.core.patchNamespacedServiceStatus({ name: svc.metadata.name, namespace: svc.metadata.namespace, body: { status } }, this.#opts.strategic);
    return updated.metadata?.resourceVersion;
  }

  /** Records an Event on the Service; a failure to record is only logged by the caller. */
  async event(svc: KubeService, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    await this.t.core.createNamespacedEvent({
      namespace: svc.metadata.namespace,
      body: {
        metadata: { generateName: `${svc.metadata.name}.`, namespace: svc.metadata.namespace },
        involvedObject: {
          apiVersion: 'v1',
          kind: 'Service',
          name: svc.metadata.name,
          namespace: svc.metadata.namespace,
          uid: svc.metadata.uid,
          ...(svc.metadata.resourceVersion ? { resourceVersion: svc.metadata.resourceVersion } : {}),
        },
        type,
        reason,
        message: message.length > 1000 ? `${message.slice(0, 1000)}…` : message,
        source: { component: EVENT_SOURCE },
        reportingComponent: EVENT_SOURCE,
        reportingInstance: this.identity,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      },
    }, this.#opts.create);
  }
}
