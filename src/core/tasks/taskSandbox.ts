/**
 * One task sandbox as Core holds it: its container, its two streams, and the one upstream from its
 * daemon that feeds them. Lifecycle events go to the control stream, the agent's to the coding
 * stream; Core adds its own (sandbox_ready, daemon_error when the upstream breaks,
 * sandbox_terminated). A broken upstream is reopened after the last daemon seq seen, so nothing is
 * lost or doubled; a daemon that restarted (a new instance) gets its relay capability again (it never
 * holds a key: the relay attaches those), and a turn it was in the middle of is said to be cut.
 */
import { errorMessage } from '../../common/errors';
import { EventLog, type Gap, type Numbered } from '../../common/eventLog';
import type { DaemonHealth, TaskEvent } from '../ports/taskPorts';
import type { TaskContainer } from '../ports/containers';
// The daemon's own list: what it forwards is what Core routes to the coding stream.
import { CODING_EVENT_TYPES } from './taskWire';

export const CONTROL_EVENT_TYPES: ReadonlySet<string> = new Set(['sandbox_ready', 'repo_cloned', 'repo_clone_error', 'init_complete', 'prompt_queued', 'daemon_error', 'sandbox_terminated']);

export type StreamName = 'control' | 'coding';
export type TaskStatus = 'starting' | 'running' | 'terminated';

export interface TaskTimings {
  containerStartMs: number;
  daemonReadyMs: number;
}

export interface TaskRecord {
  id: string;
  name: string;
  repo: string;
  status: TaskStatus;
  created_at: string;
  /** The last cursor of each stream: a client that starts listening now passes these to miss nothing. */
  cursors: Record<StreamName, number>;
  timings: { container_start_ms: number; daemon_ready_ms: number };
}

const RECONNECT_MS = [100, 250, 500, 1000, 2000];

/** One event of a stream, with its cursor (1, 2, 3, ...). */
export type StreamEnvelope = Numbered<'cursor', { event: TaskEvent }>;
/**
 * One of a sandbox's two streams (control, coding): the newest events are kept, so a client that
 * reconnects with the last cursor it saw gets everything after it, once. A client further behind
 * than the stream holds is told so (a `cursor_expired` event) and continues from the oldest kept.
 */
export type TaskStream = EventLog<'cursor', { event: TaskEvent }, StreamEnvelope>;

function expiredNotice({ from, oldest }: Gap): StreamEnvelope {
  const event: TaskEvent = { type: 'cursor_expired', timestamp: Date.now(), requested: from - 1, oldest, detail: `events ${from} to ${oldest - 1} are no longer kept; continuing from ${oldest}` };
  return { cursor: oldest - 1, event };
}

export function taskStream(capacity: number): TaskStream {
  return new EventLog({ capacity, key: 'cursor', first: 1, notice: expiredNotice });
}

export class TaskSandbox {
  readonly streams: Record<StreamName, TaskStream>;
  private statusNow: TaskStatus = 'starting';
  private readonly upstream = new AbortController();
  private lastSeq = 0;
  private instance: string | null = null;
  /** A turn_start came without its turn_end yet: the agent is mid-turn (a daemon lost now cuts it). */
  private inTurn = false;
  readonly createdAt = new Date();
  timings: TaskTimings = { containerStartMs: 0, daemonReadyMs: 0 };

  constructor(
    readonly id: string,
    readonly name: string,
    readonly repo: string,
    readonly container: TaskContainer,
    journalEvents: number,
    /** Sends the credentials to a (re)started daemon. */
    private readonly sendCredentials: () => Promise<void>,
  ) {
    this.streams = { control: taskStream(journalEvents), coding: taskStream(journalEvents) };
  }

  get status(): TaskStatus {
    return this.statusNow;
  }

  record(): TaskRecord {
    return {
      id: this.id,
      name: this.name,
      repo: this.repo,
      status: this.statusNow,
      created_at: this.createdAt.toISOString(),
      cursors: { control: this.streams.control.last, coding: this.streams.coding.last },
      timings: { container_start_ms: this.timings.containerStartMs, daemon_ready_ms: this.timings.daemonReadyMs },
    };
  }

  /** Core's own lifecycle events, on the control stream. */
  emit(type: string, fields: Record<string, unknown> = {}): void {
    if (this.statusNow === 'terminated') return;
    this.streams.control.emit({ event: { ...fields, type, timestamp: Date.now() } });
  }

  /** The daemon answered /health and has its credentials: the upstream opens. */
  markReady(health: DaemonHealth): void {
    this.instance = health.instance;
    this.statusNow = 'running';
    this.emit('sandbox_ready');
    void this.pump();
  }

  /** Ends the sandbox: `sandbox_terminated` closes both streams, the container goes. Idempotent. */
  async terminate(reason: string): Promise<void> {
    if (this.statusNow === 'terminated') return;
    this.emit('sandbox_terminated', { reason });
    this.statusNow = 'terminated';
    this.upstream.abort();
    this.streams.control.close();
    this.streams.coding.close();
    await this.container.remove();
  }

  private route(event: TaskEvent): void {
    if (this.statusNow === 'terminated') return;
    if (event.type === 'turn_start' || event.type === 'turn_end') this.inTurn = event.type === 'turn_start';
    if (CODING_EVENT_TYPES.has(event.type)) this.streams.coding.emit({ event });
    else if (CONTROL_EVENT_TYPES.has(event.type) && event.type !== 'sandbox_ready' && event.type !== 'sandbox_terminated') this.streams.control.emit({ event });
    // Anything else the daemon says (a future event type) is neither stream's: dropped.
  }

  private async pump(): Promise<void> {
    const signal = this.upstream.signal;
    let failures = 0;
    while (!signal.aborted) {
      try {
        for await (const envelope of this.container.link.events(this.lastSeq, signal)) {
          failures = 0;
          this.lastSeq = envelope.seq;
          this.route(envelope.event);
        }
        if (signal.aborted) return;
        throw new Error('the daemon ended its event stream');
      } catch (err) {
        if (signal.aborted) return;
        if (failures++ === 0) this.emit('daemon_error', { message: `lost the daemon's event stream (${errorMessage(err)}); reconnecting` });
      }
      await sleep(RECONNECT_MS[Math.min(failures, RECONNECT_MS.length - 1)], signal);
      await this.checkRestart(signal);
    }
  }

  /** A restarted daemon has a new journal (its seqs start over) and no credentials. */
  private async checkRestart(signal: AbortSignal): Promise<void> {
    try {
      const health = await this.container.link.health(signal);
      if (health.instance === this.instance) return;
      this.instance = health.instance;
      this.lastSeq = 0;
      await this.sendCredentials();
      // The turn running when it died never ends on the coding stream: said here, once.
      const cut = this.inTurn ? '; the turn running when it stopped was cut (it gets no turn_end): send its prompt again' : '';
      this.inTurn = false;
      this.emit('daemon_error', { message: `the daemon restarted; credentials sent again, its saved session resumes${cut}` });
    } catch {
      // Still down: the next round tries again.
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
