/**
 * Every write lbaas kube makes to the cluster, besides its Lease: Service metadata (the cleanup finalizer and the
 * annotation recording the applied spec), Service status (the ingress), and Events on the Service. Metadata patches
 * carry the resourceVersion they were computed from, so a concurrent change makes them fail (409) instead of undoing
 * it; the sync then runs again on the newer object.
 */
import { mergePatch, type KubeTarget } from './client';
import { CLEANUP_FINALIZER, type IngressEntry } from './mapping';
import { VIP_ADDRESSES_ANNOTATION } from './service-options';
import type { KubeService } from './objects';

/** The hash of the spec (and ingress inputs) lbaas kube last converged for a Service: a restart skips what matches. */
export const APPLIED_ANNOTATION = 'lbaas.anx.io/applied-spec';

/** The component named on Events, as `kubectl describe service` shows it. */
export const EVENT_SOURCE = 'lbaas-kube';

export class ServiceWrites {
  constructor(
    readonly t: KubeTarget,
    readonly identity: string,
  ) {}

  /** Returns the resourceVersion the write left, for a write right after it that must not undo it. */
  async #patchMeta(svc: KubeService, metadata: Record<string, unknown>): Promise<string | undefined> {
    const updated = await this.t.core.patchNamespacedService(
      { name: svc.metadata.name, namespace: svc.metadata.namespace, body: { metadata: { ...metadata, resourceVersion: svc.metadata.resourceVersion } } },
      mergePatch(this.t.mod),
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
      mergePatch(this.t.mod),
    );
    return updated.metadata?.resourceVersion;
  }

  async markApplied(svc: KubeService, hash: string): Promise<void> {
    // No resourceVersion: the annotation only records what was converged, whatever changed meanwhile (that change
    // has its own sync, whose hash will not match).
    await this.t.core.patchNamespacedService(
      { name: svc.metadata.name, namespace: svc.metadata.namespace, body: { metadata: { annotations: { [APPLIED_ANNOTATION]: hash } } } },
      mergePatch(this.t.mod),
    );
  }

  /** Returns the Service's resourceVersion after the write (a metadata patch right after must carry it, not the cache's). */
  async setIngress(svc: KubeService, ingress: IngressEntry[]): Promise<string | undefined> {
    const updated = await this.t.core.patchNamespacedServiceStatus(
      { name: svc.metadata.name, namespace: svc.metadata.namespace, body: { status: { loadBalancer: { ingress } } } },
      mergePatch(this.t.mod),
    );
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
    });
  }
}
