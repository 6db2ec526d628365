/**
 * One PoolObserver that reports to several: the metrics and the dashboard's activity both hear every
 * event. Built from the interface's own method names (NOOP_OBSERVER's keys), so a method added to
 * the interface reaches every observer that has it without a change here.
 */
import { NOOP_OBSERVER, type PoolObserver } from '../ports/observer';

type Method = (...args: unknown[]) => void;

/** `primary` has every method; `extras` only those they care about. */
export function teeObservers(primary: PoolObserver, ...extras: Partial<PoolObserver>[]): PoolObserver {
  const tee: Record<string, Method> = {};
  for (const name of Object.keys(NOOP_OBSERVER)) {
    const targets = [primary, ...extras].map((o) => (o as Record<string, Method | undefined>)[name]?.bind(o)).filter((m): m is Method => m !== undefined);
    tee[name] = (...args) => {
      for (const method of targets) method(...args);
    };
  }
  return tee as unknown as PoolObserver;
}
