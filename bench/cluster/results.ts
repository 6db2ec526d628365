/** What the cluster bench and the simulation share: a gateway's own count of routed calls, and writing a report. */
import fs from 'node:fs';
import path from 'node:path';

/** Calls a gateway routed so far (its own `broker_gateway_requests_total`, every node and status). */
export async function routedCalls(gateway: { metrics(): Promise<string> }): Promise<number> {
  let sum = 0;
  for (const m of (await gateway.metrics()).matchAll(/^broker_gateway_requests_total\{[^}]*\} ([0-9.eE+-]+)$/gm)) sum += Number(m[1]);
  return sum;
}

/** `<outDir>/<name>.json` (every figure) and `<name>.md` (the report), which is also printed. */
export function writeResults(outDir: string, name: string, run: unknown, md: string): void {
  fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify(run, null, 2) + '\n');
  fs.writeFileSync(path.join(outDir, `${name}.md`), md);
  console.log('\n' + md);
}

/**
 * Runs a bench bounded: past `limitMs`, on Ctrl-C, on an error and at its end, the stop `body`
 * registered runs (once), then the process exits (1 on an error or the limit).
 */
export function runBounded(name: string, limitMs: number, body: (onStop: (stop: () => Promise<void>) => void) => Promise<void>): void {
  let stop: () => Promise<void> = async () => undefined;
  let stopping: Promise<void> | null = null;
  const exit = (code: number): void => void (stopping ??= stop().catch(() => undefined)).finally(() => process.exit(code));
  setTimeout(() => {
    console.error(`${name}: over ${limitMs / 60_000} min, stopping`);
    exit(1);
  }, limitMs).unref();
  process.once('SIGINT', () => exit(130));
  body((s) => (stop = s)).then(
    () => exit(0),
    (err: Error) => {
      console.error(`${name}: ${err.stack ?? err.message}`);
      exit(1);
    },
  );
}
