/**
 * The events execd streams (OpenSandbox execd's ServerStreamEvent), built here so every producer (commands,
 * bash sessions, code contexts) says them alike. Each carries its own `timestamp` (Unix ms).
 */

export interface ExecdErrorDetail {
  ename: string;
  evalue: string;
  traceback: string[];
}

export type ExecdEvent =
  | { type: 'init'; text: string; timestamp: number }
  | { type: 'stdout' | 'stderr'; text: string; timestamp: number }
  | { type: 'execution_count'; execution_count: number; timestamp: number }
  | { type: 'result'; results: Record<string, string>; timestamp: number }
  | { type: 'execution_complete'; execution_time: number; timestamp: number }
  | { type: 'error'; error: ExecdErrorDetail; timestamp: number }
  | { type: 'ping'; text: 'pong'; timestamp: number };

/** Where a run's events go, in order (the SSE stream of its request; nowhere for a detached one). */
export type EventSink = (event: ExecdEvent) => void;

export const ExecdEvents = {
  init: (id: string): ExecdEvent => ({ type: 'init', text: id, timestamp: Date.now() }),
  output: (stream: 'stdout' | 'stderr', text: string): ExecdEvent => ({ type: stream, text, timestamp: Date.now() }),
  count: (n: number): ExecdEvent => ({ type: 'execution_count', execution_count: n, timestamp: Date.now() }),
  result: (textPlain: string): ExecdEvent => ({ type: 'result', results: { 'text/plain': textPlain }, timestamp: Date.now() }),
  complete: (elapsedMs: number): ExecdEvent => ({ type: 'execution_complete', execution_time: Math.round(elapsedMs), timestamp: Date.now() }),
  error: (ename: string, evalue: string, traceback: string[]): ExecdEvent => ({ type: 'error', error: { ename, evalue, traceback }, timestamp: Date.now() }),
  ping: (): ExecdEvent => ({ type: 'ping', text: 'pong', timestamp: Date.now() }),
};

/**
 * A shell command's failure as OpenSandbox's execd reports it: `CommandExecError` with the exit
 * status as the value, which the SDK reads back as the exit code (-1 for a command that was killed).
 */
export function commandFailure(exitCode: number, why: string): ExecdEvent {
  return ExecdEvents.error('CommandExecError', String(exitCode), [why]);
}

/**
 * `sink` with a cap on the output it passes on: a client that does not read while a command floods
 * would otherwise make its stream's buffer grow without bound. Beyond `maxBytes` output events are
 * dropped and one stderr line says so; every other event passes.
 */
export function limitOutput(sink: EventSink, maxBytes: number): EventSink {
  let sent = 0;
  let dropped = false;
  return (event) => {
    if (event.type !== 'stdout' && event.type !== 'stderr') return sink(event);
    sent += Buffer.byteLength(event.text);
    if (sent <= maxBytes) return sink(event);
    if (dropped) return;
    dropped = true;
    sink(ExecdEvents.output('stderr', `[execd: output beyond ${maxBytes} bytes was dropped from this stream]`));
  };
}
