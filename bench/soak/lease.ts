/**
 * A client's view of one lease: the state it put in the shell (so every check is exact), and the
 * calls on it. Every answer's latency is recorded under its step kind.
 */
import type { Answer, SoakHttp } from './http';
import type { Random } from './random';
import type { Tally } from './tally';
import { expectError, expectResult, stripForkRetries } from './expect';
import type { ReclaimWatch } from './reclaimWatch';

export interface ClientCtx {
  http: SoakHttp;
  tally: Tally;
  rnd: Random;
  reclaims: ReclaimWatch;
}

export class Lease {
  /** SOAK_E (exported), SOAK_P (plain) and the function soak_f's output prefix; null = unset. */
  exported: string | null = null;
  plain: string | null = null;
  fn: string | null = null;
  /** The cwd below the lease's working directory /tmp/s/<id> ('' or '/d1/d2...'). */
  dir = '';

  constructor(
    readonly c: ClientCtx,
    readonly id: string,
  ) {}

  /** POST execute; a neighbour's fork-retry lines are stripped from stderr (and counted). */
  async exec(kind: string, command: string, timeoutS: number, signal?: AbortSignal): Promise<Answer> {
    const a = await this.c.http.post(`/session/${this.id}/execute`, { command, timeout: timeoutS }, signal);
    this.c.tally.latency(`execute: ${kind}`, a.ms);
    if (a.status === 200 && typeof a.body?.stderr === 'string') {
      const { stderr, retries } = stripForkRetries(a.body.stderr);
      if (retries > 0) {
        a.body.stderr = stderr;
        this.c.tally.count("stderr: a neighbour's fork burst made bash retry a fork (lines stripped)", retries);
      }
    }
    return a;
  }

  /** Checks every piece of state this lease set (or that none is there, on a fresh lease). */
  async verify(kind: string, prefix = { command: '', stdout: '' }): Promise<void> {
    const command = `${prefix.command}echo "\${SOAK_E-unset}|\${SOAK_P-unset}|\${PWD#/tmp/s/}"; declare -F soak_f >/dev/null && soak_f x || echo nofn`;
    const stdout = `${prefix.stdout}${this.exported ?? 'unset'}|${this.plain ?? 'unset'}|${this.id}${this.dir}\n${this.fn ? `${this.fn}:x` : 'nofn'}\n`;
    expectResult(await this.exec(kind, command, 10), `execute ${kind}`, { stdout, rc: 0 });
  }

  /** cd into a new directory, export a variable, set a plain one, define a function. */
  async setState(): Promise<void> {
    const [d, e, p, f] = [this.c.rnd.token(), this.c.rnd.token(), this.c.rnd.token(), this.c.rnd.token()];
    const command = `mkdir -p d${d} && cd d${d} && export SOAK_E=e${e}; SOAK_P=p${p}; soak_f(){ echo "f${f}:$1"; }`;
    expectResult(await this.exec('set state', command, 10), 'execute set state', { stdout: '', rc: 0 });
    this.dir += `/d${d}`;
    [this.exported, this.plain, this.fn] = [`e${e}`, `p${p}`, `f${f}`];
  }

  async release(): Promise<void> {
    const a = await this.c.http.post(`/session/${this.id}/release`, {});
    this.c.tally.latency('release', a.ms);
    if (a.status !== 200 || a.body?.status !== 'released') expectError(a, 'release', 200, 'released');
  }

  /** The shell died on purpose (410 with its detail); a second call says so too, then release. */
  async expectBrokenThenRelease(kind: string, a: Answer): Promise<void> {
    expectError(a, `execute ${kind}`, 410, 'session_broken', /broken .*state is lost/);
    expectError(await this.exec('after broken', 'echo after', 5), `execute ${kind} (second call)`, 410, 'session_broken');
    this.c.tally.count(`abuse: ${kind}: 410 session_broken as expected`);
    await this.release();
  }
}
