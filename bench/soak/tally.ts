/**
 * What the soak counts: latency samples per operation, expected outcomes by kind (a timeout, a 410
 * after `kill -9 $$`, a 409 while a disconnected command still runs), and unexpected answers, which
 * are the errors, by kind with their first few examples.
 */
import { summarize } from '../lib/stats';
import type { LatencySummary } from '../protocol';

/** An answer the soak did not expect: `kind` groups it in the report, `detail` says what came. */
export class Unexpected extends Error {
  constructor(
    readonly kind: string,
    detail: string,
  ) {
    super(detail);
  }
}

const EXAMPLES_KEPT = 3;

export interface TallySummary {
  latencyMs: Record<string, LatencySummary>;
  outcomes: Record<string, number>;
  errors: Record<string, { count: number; examples: string[] }>;
  errorCount: number;
}

export class Tally {
  private readonly latencies = new Map<string, number[]>();
  private readonly outcomes = new Map<string, number>();
  private readonly errors = new Map<string, { count: number; examples: string[] }>();

  latency(op: string, ms: number): void {
    let list = this.latencies.get(op);
    if (!list) this.latencies.set(op, (list = []));
    list.push(ms);
  }

  count(outcome: string, n = 1): void {
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + n);
  }

  outcome(outcome: string): number {
    return this.outcomes.get(outcome) ?? 0;
  }

  error(kind: string, detail: string): void {
    let e = this.errors.get(kind);
    if (!e) this.errors.set(kind, (e = { count: 0, examples: [] }));
    e.count++;
    if (e.examples.length < EXAMPLES_KEPT) e.examples.push(detail.slice(0, 400));
  }

  get errorCount(): number {
    let n = 0;
    for (const e of this.errors.values()) n += e.count;
    return n;
  }

  summary(): TallySummary {
    const latencyMs: Record<string, LatencySummary> = {};
    for (const [op, samples] of [...this.latencies].sort()) latencyMs[op] = summarize([...samples]);
    return {
      latencyMs,
      outcomes: Object.fromEntries([...this.outcomes].sort()),
      errors: Object.fromEntries([...this.errors].sort()),
      errorCount: this.errorCount,
    };
  }
}
