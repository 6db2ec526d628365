/**
 * Workspace viewers that fell behind, on /metrics: `broker_workspace_viewers_behind_total{stream,
 * outcome}`, stream `events` (/ws/workspace) or `terminal`, outcome `resync` (it caught up: a
 * `dropped` notice or a redraw) or `cut` (it did not read). The fanouts count into plain numbers on
 * their path; the scrape reads them.
 */
import client, { type Registry } from 'prom-client';

/** What a stream's fanout did to viewers that fell behind, since it began. */
export interface FanoutCounts {
  resyncs: number;
  cuts: number;
}

export type WorkspaceViewerCounts = Record<'events' | 'terminal', FanoutCounts>;

export function registerWorkspaceViewers(registry: Registry): WorkspaceViewerCounts {
  const counts: WorkspaceViewerCounts = { events: { resyncs: 0, cuts: 0 }, terminal: { resyncs: 0, cuts: 0 } };
  new client.Counter({
    name: 'broker_workspace_viewers_behind_total',
    help: 'Workspace WebSocket viewers that fell behind, by stream (events, terminal) and outcome (resync: caught up; cut: did not read)',
    labelNames: ['stream', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const stream of ['events', 'terminal'] as const) {
        this.inc({ stream, outcome: 'resync' }, counts[stream].resyncs);
        this.inc({ stream, outcome: 'cut' }, counts[stream].cuts);
      }
    },
  });
  return counts;
}
