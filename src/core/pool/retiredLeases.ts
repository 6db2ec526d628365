/**
 * Ids of leases that ended, remembered (up to a bound, oldest forgotten first) so that a late call
 * gets the pool API's 400 "not in use" and a repeated release stays idempotent, instead of a 404.
 */
import type { ReclaimReason } from './leaseTtl';

export type RetiredWhy = 'released' | ReclaimReason;

/** Why a lease ended, and what its old holder is told about it. */
export interface Retired {
  why: RetiredWhy;
  detail: string;
}

export class RetiredLeases {
  private readonly ids = new Map<string, Retired>();
  constructor(private readonly capacity: number) {}

  add(id: string, why: RetiredWhy, detail: string = why): void {
    this.ids.set(id, { why, detail });
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.keys().next().value as string);
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  why(id: string): RetiredWhy | undefined {
    return this.ids.get(id)?.why;
  }

  get(id: string): Retired | undefined {
    return this.ids.get(id);
  }
}
