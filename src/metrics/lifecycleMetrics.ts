/**
 * The lifecycle API's sandboxes on /metrics, read at scrape time from the SandboxService:
 * `broker_lifecycle_sandboxes{state="running|paused"}` and `{place="pool|dedicated"}`.
 */
import client, { type Registry } from 'prom-client';
import type { SandboxService } from '../core/lifecycle/sandboxService';

export function registerSandboxGauge(registry: Registry, sandboxes: SandboxService): void {
  new client.Gauge({
    name: 'broker_lifecycle_sandboxes',
    help: 'Live lifecycle-API sandboxes, by state and by where they live (a warm pool, or a dedicated container)',
    labelNames: ['state', 'place'],
    registers: [registry],
    collect() {
      const c = sandboxes.counts();
      this.set({ state: 'running', place: '' }, c.running);
      this.set({ state: 'paused', place: '' }, c.paused);
      this.set({ state: '', place: 'pool' }, c.pooled);
      this.set({ state: '', place: 'dedicated' }, c.dedicated);
    },
  });
}
