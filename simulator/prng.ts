/**
 * A small seeded PRNG (sfc32, "Small Fast Counter", a well-known public-domain generator) so that identifiers,
 * deploy delays and injected faults are reproducible from a seed. The 128-bit state is exposed so that the
 * state file can carry the identifier stream across restarts.
 */

export type PrngState = [number, number, number, number];

/** Expands a 32-bit seed and a stream number into well-mixed 32-bit words (splitmix32 style). */
function splitmix(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) | 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** Normalizes any finite number to an unsigned 32-bit seed (large values keep their high bits mixed in). */
export function normalizeSeed(seed: number): number {
  const n = Math.trunc(Number.isFinite(seed) ? seed : 0);
  const low = n % 0x100000000;
  const high = Math.floor(n / 0x100000000);
  return (low ^ Math.imul(high | 0, 0x27d4eb2d)) >>> 0;
}

export class Prng {
  private a = 0;
  private b = 0;
  private c = 0;
  private d = 0;

  /** `stream` selects an independent sequence for the same seed (identifiers, faults, deploys). */
  constructor(seed: number, stream = 0) {
    this.reseed(seed, stream);
  }

  reseed(seed: number, stream = 0): void {
    const mix = splitmix(normalizeSeed(seed) ^ Math.imul(stream + 1, 0x632be5ab));
    this.a = mix();
    this.b = mix();
    this.c = mix();
    this.d = mix();
    for (let i = 0; i < 12; i++) this.nextU32();
  }

  /** The next unsigned 32-bit integer. */
  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    return this.nextU32() / 0x100000000;
  }

  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    if (max <= min) return min;
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p` (no draw at all when p <= 0, so disabled faults do not shift the sequence). */
  chance(p: number): boolean {
    if (p <= 0) return false;
    if (p >= 1) {
      this.nextU32();
      return true;
    }
    return this.next() < p;
  }

  /** 32 lowercase hex characters: an Engine identifier. */
  hex32(): string {
    let s = '';
    for (let i = 0; i < 4; i++) s += this.nextU32().toString(16).padStart(8, '0');
    return s;
  }

  get state(): PrngState {
    return [this.a >>> 0, this.b >>> 0, this.c >>> 0, this.d >>> 0];
  }

  set state(s: PrngState) {
    [this.a, this.b, this.c, this.d] = [s[0] | 0, s[1] | 0, s[2] | 0, s[3] | 0];
  }
}
