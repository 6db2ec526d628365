/**
 * The one check every fuzz case goes through, and the report each fuzz suite prints and writes.
 *
 * A case is a request the API must refuse. Its answer must be a 4xx in the API's own error envelope
 * (`{detail, code}` for the pool API's format, `{code, message}` for OpenSandbox's), arrive within a
 * bound (a hang is a failure, not a slow answer: the bound is far above any answer), and leave the
 * state the suite snapshots (pool counts, files, leases, sandboxes) exactly as it was.
 *
 * The report counts, per route, the cases tried, the answers by status and the 5xx; it is printed
 * when the suite ends and written under the test's temporary directory (FUZZ_REPORT_DIR, default
 * <tmp>/bash-broker-fuzz).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request, Agent } from 'undici';
import fc from 'fast-check';
import type { HttpResult } from './broker';
import { answerOf } from '../../devtools/httpCall';

export type Envelope = 'pool' | 'opensandbox';

/** Far above any answer to a refused request; a request still unanswered then is a hang. */
export const REQUEST_BOUND_MS = 30_000;

export interface FuzzRequest {
  method: string;
  path: string;
  /** Another server's whole URL (a group sandbox's own port) instead of the client's base and `path`. */
  url?: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
}

/** The seed of this run: FC_SEED to replay one, printed with every failure. */
export const FUZZ_SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;

/** fast-check's parameters: `runs` cases, the seed above, the first failure shrunk and reported. */
export function fuzzParams(runs: number): fc.Parameters<unknown> {
  return { numRuns: runs, seed: FUZZ_SEED, endOnFailure: true };
}

interface RouteCount {
  cases: number;
  fiveXx: number;
  statuses: Record<string, number>;
}

/** Cases and answers by route, for the report. */
export class FuzzReport {
  private readonly routes = new Map<string, RouteCount>();
  private readonly failures: string[] = [];

  constructor(readonly api: string) {}

  /** `answer`: an HTTP status, or what else ended the case (`hang`, a WebSocket's `close 1003`). */
  count(route: string, answer: number | string): void {
    const r = this.routes.get(route) ?? { cases: 0, fiveXx: 0, statuses: {} };
    r.cases++;
    if (typeof answer === 'number' && answer >= 500) r.fiveXx++;
    r.statuses[String(answer)] = (r.statuses[String(answer)] ?? 0) + 1;
    this.routes.set(route, r);
  }

  fail(what: string): void {
    this.failures.push(what);
  }

  get cases(): number {
    return [...this.routes.values()].reduce((n, r) => n + r.cases, 0);
  }

  get fiveXx(): number {
    return [...this.routes.values()].reduce((n, r) => n + r.fiveXx, 0);
  }

  text(): string {
    const lines = [`fuzz report: ${this.api} (seed ${FUZZ_SEED}): ${this.cases} cases, ${this.fiveXx} 5xx, ${this.failures.length} failures`];
    for (const [route, r] of [...this.routes.entries()].sort()) {
      const statuses = Object.entries(r.statuses)
        .sort()
        .map(([s, n]) => `${s}x${n}`)
        .join(' ');
      lines.push(`  ${route}: ${r.cases} cases, ${r.fiveXx} 5xx (${statuses})`);
    }
    for (const f of this.failures.slice(0, 20)) lines.push(`  FAILED: ${f}`);
    return lines.join('\n') + '\n';
  }

  /** Prints the report and writes it to <dir>/<api>.txt; returns the file. */
  write(): string {
    const dir = process.env.FUZZ_REPORT_DIR ?? path.join(os.tmpdir(), 'bash-broker-fuzz');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${this.api.replace(/[^A-Za-z0-9_.-]+/g, '-')}.txt`);
    const text = this.text();
    fs.writeFileSync(file, text);
    console.log(`${text}  (written to ${file})`);
    return file;
  }
}

/** Sends requests with a bound: an answer that does not come within REQUEST_BOUND_MS is reported as a hang. */
export class FuzzClient {
  private readonly dispatcher: Agent;

  /** `socketPath`: a server on a unix socket (a group's database), `baseUrl` then only names the host. */
  constructor(
    private readonly baseUrl: string,
    socketPath?: string,
  ) {
    this.dispatcher = new Agent({ keepAliveTimeout: 5_000, connections: 32, ...(socketPath ? { connect: { socketPath } } : {}) });
  }

  async send(r: FuzzRequest): Promise<HttpResult | 'hang'> {
    const signal = AbortSignal.timeout(REQUEST_BOUND_MS);
    try {
      return await answerOf(await request(r.url ?? this.baseUrl + r.path, { method: r.method as 'GET', body: r.body, headers: r.headers, dispatcher: this.dispatcher, signal }));
    } catch (err) {
      if (signal.aborted) return 'hang';
      throw err;
    }
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }
}

/** Why an answer is not a refusal in `envelope`'s format (null: it is one). */
export function notARefusal(res: HttpResult, envelope: Envelope, method: string): string | null {
  if (res.status < 400 || res.status >= 500) return `status ${res.status}`;
  if (method === 'HEAD') return null;
  if (!/^application\/json/.test(String(res.headers['content-type']))) return `content-type ${String(res.headers['content-type'])}`;
  const body = res.json as Record<string, unknown> | undefined;
  if (!body || typeof body !== 'object') return 'no JSON object';
  if (envelope === 'pool') {
    if (typeof body.detail !== 'string' || typeof body.code !== 'string') return 'no string detail and code';
  } else if (typeof body.code !== 'string' || typeof body.message !== 'string' || 'detail' in body) {
    return 'no string code and message';
  }
  return null;
}

export interface FuzzTarget<S> {
  client: FuzzClient;
  report: FuzzReport;
  envelope: Envelope;
  /** The state a refused request must leave alone, in a form `toEqual` compares. */
  snapshot(): Promise<S>;
}

function brief(r: FuzzRequest): string {
  const body = r.body === undefined ? '' : ` body ${JSON.stringify(r.body.toString().slice(0, 160))}${r.body.length > 160 ? `...(${r.body.length} bytes)` : ''}`;
  return `${r.method} ${(r.url ?? r.path).slice(0, 200)}${body}`;
}

/**
 * One case: the state before, the request, the answer checked, the state after compared.
 * `route` names the route in the report. `alsoFine` names answers other than a refusal that are
 * right for this case (a read past the end answered empty); never a 5xx. Throws (failing the
 * property) on any breach.
 */
export async function refused<S>(t: FuzzTarget<S>, route: string, r: FuzzRequest, alsoFine?: (res: HttpResult) => boolean): Promise<HttpResult> {
  const before = await t.snapshot();
  const res = await t.client.send(r);
  if (res === 'hang') {
    t.report.count(route, 'hang');
    t.report.fail(`no answer within ${REQUEST_BOUND_MS} ms: ${brief(r)}`);
    throw new Error(`no answer within ${REQUEST_BOUND_MS} ms (seed ${FUZZ_SEED}): ${brief(r)}`);
  }
  t.report.count(route, res.status);
  const wrong = res.status < 500 && alsoFine?.(res) ? null : notARefusal(res, t.envelope, r.method);
  if (wrong) {
    const what = `${wrong}: ${brief(r)} -> ${res.status} ${res.text.slice(0, 300)}`;
    t.report.fail(what);
    throw new Error(`not a refusal in the ${t.envelope} envelope (seed ${FUZZ_SEED}): ${what}`);
  }
  const after = await t.snapshot();
  if (JSON.stringify(after) !== JSON.stringify(before)) {
    const what = `state changed by ${brief(r)} -> ${res.status}: ${JSON.stringify(before).slice(0, 600)} -> ${JSON.stringify(after).slice(0, 600)}`;
    t.report.fail(what);
    throw new Error(`(seed ${FUZZ_SEED}) ${what}`);
  }
  return res;
}

/** `/a/:id/b` with `params` filled in (each value as given: the fuzz encodes its own). */
export function fillPath(pattern: string, params: Record<string, string>): string {
  return pattern.replace(/:([A-Za-z]+)/g, (_m, name: string) => {
    const v = params[name];
    if (v === undefined) throw new Error(`no value for :${name} in ${pattern}`);
    return v;
  });
}

/** A JSON body's headers (content-type), with the caller's on top. */
export function jsonHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return { 'content-type': 'application/json', ...extra };
}

/**
 * What a refused request must not change in a directory tree: each entry's path, type, size, mode
 * and link target, and each file's modification time (a directory's own time moves when a refused
 * upload's partial file is removed again, which changes nothing in it). Symlinks are not followed.
 */
export function treeState(root: string, also: readonly string[] = []): string[] {
  const out: string[] = [];
  const visit = (p: string, shown: string): void => {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(p);
    } catch {
      out.push(`${shown} absent`);
      return;
    }
    const type = st.isSymbolicLink() ? `l ${fs.readlinkSync(p)}` : st.isDirectory() ? 'd' : st.isFile() ? `f ${st.size} ${st.mtimeMs}` : 'o';
    out.push(`${shown} ${type} ${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid}`);
    if (st.isDirectory()) for (const name of fs.readdirSync(p).sort()) visit(path.join(p, name), `${shown}/${name}`);
  };
  visit(root, '.');
  for (const extra of also) visit(path.resolve(root, extra), extra);
  return out;
}

/**
 * A Docker session's root as this host sees it: `/proc/<pid>/root` of a bash of the session, found by
 * the file `marker` that the session wrote in its own view. Its tree is then read with treeState, as a
 * local sandbox's is, at no request's cost (the API reads a file through an engine archive call, the
 * most of a case's time). Null where this process may not look into other processes' roots (not
 * root) or no bash has the marker: the caller reads through the API instead.
 */
export function sessionRootOnHost(marker: string): string | null {
  const pids = fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number).sort((a, b) => a - b);
  for (const pid of pids) {
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'bash' && fs.existsSync(`/proc/${pid}/root${marker}`)) return `/proc/${pid}/root`;
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return null;
}

/** The same state read by a shell in the sandbox (a Docker sandbox's tree is not on this host). */
export const TREE_STATE_COMMAND = (also: readonly string[] = []): string =>
  `find . ${also.join(' ')} -printf '%p %y %l %m %U:%G\\n' | sort; find . ${also.join(' ')} -type f -printf '%p %s %T@\\n' | sort`;

/** A suite's target: its own bounded client against `url`, its report, its API's envelope and state. */
export function fuzzTarget<S>(url: string, report: FuzzReport, envelope: Envelope, snapshot: () => Promise<S>, socketPath?: string): FuzzTarget<S> {
  return { client: new FuzzClient(url, socketPath), report, envelope, snapshot };
}

/** A suite's end: its report printed and written, its client and broker closed. */
export async function endFuzz(report: FuzzReport, t: FuzzTarget<unknown> | undefined, broker: { close(): Promise<void> } | undefined): Promise<void> {
  report.write();
  await t?.client.close();
  await broker?.close();
}
