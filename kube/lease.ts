/**
 * Leader election on a coordination.k8s.io/v1 Lease, the way Kubernetes' own controllers do it, so that only one
 * `lbaas kube` acts at a time: the holder renews the Lease every `retryMs`; a candidate takes it over only after it has
 * seen the same record unchanged for a whole lease duration (measured on its own clock, so clock skew between pods
 * does not matter); every write carries the resourceVersion it read (or, renewing, the one its last write left), so
 * two candidates cannot both win. A holder that cannot renew within `renewDeadlineMs` stops acting before its Lease
 * can expire, and a holder that stops releases the Lease so that a standby takes over at once.
 */
import type { V1Lease } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { httpStatus, statusMessage, type KubeTarget } from './client';

export interface LeaseOptions {
  namespace: string;
  name: string;
  identity: string;
  durationMs: number;
  renewDeadlineMs: number;
  retryMs: number;
  log: (line: string) => void;
}

/** How long a stopping leader tries to release its Lease. */
const RELEASE_TIMEOUT_MS = 3_000;

export const DEFAULT_LEASE = { durationMs: 15_000, renewDeadlineMs: 10_000, retryMs: 2_000 } as const;

export class LeaderElector {
  #observed: { key: string; at: number } | null = null;
  #leading = false;
  #lastRenew = 0;
  #stopped = false;
  #wake: (() => void) | null = null;
  /** The Lease as this process last wrote it while holding it: the next renewal writes over it without a read. */
  #written: V1Lease | null = null;

  constructor(
    readonly t: KubeTarget,
    readonly o: LeaseOptions,
  ) {}

  get leading(): boolean {
    return this.#leading;
  }

  /**
   * Runs until stop(): calls `onStart` when this process becomes the leader and `onStop` when it stops being one (lost
   * the Lease or stop()). onStop is awaited before the Lease is given up, so nothing acts after another leader could.
   */
  async run(onStart: () => void, onStop: () => Promise<void>): Promise<void> {
    while (!this.#stopped) {
      const ok = await this.#tryAcquireOrRenew().catch((err: unknown) => {
        this.o.log(`lease ${this.o.namespace}/${this.o.name}: ${statusMessage(err)}`);
        return false;
      });
      const now = Date.now();
      if (ok) {
        this.#lastRenew = now;
        if (!this.#leading) {
          this.#leading = true;
          this.o.log(`became the leader (lease ${this.o.namespace}/${this.o.name}, identity ${this.o.identity})`);
          onStart();
        }
      } else if (this.#leading && now - this.#lastRenew > this.o.renewDeadlineMs) {
        this.#leading = false;
        this.o.log(`lost the lease ${this.o.namespace}/${this.o.name}: not renewed for ${Math.round((now - this.#lastRenew) / 1000)} s; stopping`);
        await onStop();
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.o.retryMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    if (this.#leading) {
      this.#leading = false;
      await onStop();
      // Bounded: on Ctrl-C the API server (or its etcd) may be going away too, and then a standby waits out the lease.
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${RELEASE_TIMEOUT_MS / 1000} s`)), RELEASE_TIMEOUT_MS)));
      await Promise.race([this.#release(), timeout])
        .catch((err: unknown) => this.o.log(`releasing the lease: ${statusMessage(err)}`))
        .finally(() => clearTimeout(timer));
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#wake?.();
  }

  async #read(): Promise<V1Lease | null> {
    try {
      return await this.t.coordination.readNamespacedLease({ name: this.o.name, namespace: this.o.namespace });
    } catch (err) {
      if (httpStatus(err) === 404) return null;
      throw err;
    }
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const { mod } = this.t;
    const now = () => new mod.V1MicroTime();
    const durationSeconds = Math.max(1, Math.round(this.o.durationMs / 1000));
    // A leader renews over the Lease it wrote last, as Kubernetes' own leader election does: one request per renewal,
    // not a read and a write. Its resourceVersion makes a Lease changed since fail (409): then read it as a candidate.
    const written = this.#written;
    this.#written = null;
    if (this.#leading && written?.spec?.holderIdentity === this.o.identity) {
      try {
        this.#written = await this.t.coordination.replaceNamespacedLease({
          name: this.o.name,
          namespace: this.o.namespace,
          body: { ...written, spec: { ...written.spec, leaseDurationSeconds: durationSeconds, renewTime: now() } },
        });
        return true;
      } catch (err) {
        if (httpStatus(err) !== 409) throw err;
      }
    }
    const lease = await this.#read();
    if (lease === null) {
      try {
        this.#written = await this.t.coordination.createNamespacedLease({
          namespace: this.o.namespace,
          body: {
            metadata: { name: this.o.name, namespace: this.o.namespace },
            spec: { holderIdentity: this.o.identity, leaseDurationSeconds: durationSeconds, acquireTime: now(), renewTime: now(), leaseTransitions: 0 },
          },
        });
        return true;
      } catch (err) {
        if (httpStatus(err) === 409) return false; // Another candidate created it first.
        throw err;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const mine = holder === this.o.identity;
    if (!mine && holder !== '') {
      // Expired only when this process has watched the same record for a whole duration.
      const key = `${holder}|${String(spec.renewTime?.toISOString?.() ?? spec.renewTime)}|${lease.metadata?.resourceVersion}`;
      const at = Date.now();
      if (this.#observed?.key !== key) this.#observed = { key, at };
      const held = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
      if (at - this.#observed.at < held) return false;
      this.o.log(`the lease ${this.o.namespace}/${this.o.name} of ${holder} expired; taking it over`);
    }
    const body: V1Lease = {
      ...lease,
      spec: {
        ...spec,
        holderIdentity: this.o.identity,
        leaseDurationSeconds: durationSeconds,
        renewTime: now(),
        ...(mine ? {} : { acquireTime: now(), leaseTransitions: (spec.leaseTransitions ?? 0) + 1 }),
      },
    };
    try {
      this.#written = await this.t.coordination.replaceNamespacedLease({ name: this.o.name, namespace: this.o.namespace, body });
      return true;
    } catch (err) {
      if (httpStatus(err) === 409) return false; // Someone else wrote it since we read it.
      throw err;
    }
  }

  /** Gives the Lease up (empty holder), so a standby does not wait out the duration. */
  async #release(): Promise<void> {
    const lease = await this.#read();
    if (lease?.spec?.holderIdentity !== this.o.identity) return;
    await this.t.coordination.replaceNamespacedLease({
      name: this.o.name,
      namespace: this.o.namespace,
      body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new this.t.mod.V1MicroTime() } },
    });
    this.o.log(`released the lease ${this.o.namespace}/${this.o.name}`);
  }
}
