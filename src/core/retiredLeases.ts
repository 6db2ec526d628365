/**
 * Ids of leases that ended, remembered (up to a bound, oldest forgotten first) so that a late call
 * gets the spec's 400 "not in use" and a repeated release stays idempotent, instead of a 404.
 */
export type RetiredWhy = 'released' | 'reclaimed';

export class RetiredLeases {
  private readonly ids = new Map<string, RetiredWhy>();
  constructor(private readonly capacity: number) {}

  add(id: string, why: RetiredWhy): void {
    this.ids.set(id, why);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.keys().next().value as string);
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  why(id: string): RetiredWhy | undefined {
    return this.ids.get(id);
  }
}
