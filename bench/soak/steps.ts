/**
 * The steps of an episode besides plain state changes: commands that time out, output floods at the
 * cap, clients that disconnect mid-execute, and abuse. Each checks the broker's exact answer; a step
 * that ends the lease (a shell killed on purpose, a release while a command runs) returns 'ended'.
 */
import { pythonFloat } from '../../src/api/pool/poolRoutes';
import { expectResult, expectTimedOut, execBody } from './expect';
import { NoAnswer } from './http';
import type { Lease } from './lease';
import { Unexpected } from './tally';
import { sleep } from '../lib/stats';

export type StepEnd = 'continue' | 'ended';

const TIMEOUTS_S = [0.3, 0.5, 1, 1.5, 2];
const JOB_NOTICE = /^\[\d+\] \d+$/;
const NEVER_RAN_AFTER_MS = 8_000;

/** `echo`, then a sleep or a builtin busy loop past the timeout: the output so far, rc -1, state kept. */
export async function timeoutStep(lease: Lease): Promise<StepEnd> {
  const { rnd, tally } = lease.c;
  const timeoutS = rnd.pick(TIMEOUTS_S);
  const t = rnd.token();
  const busy = rnd.chance(0.25);
  const command = `echo b${t}; ${busy ? 'while :; do :; done' : 'sleep 30'}; echo never`;
  const kind = busy ? 'timeout (busy loop)' : 'timeout (sleep)';
  const a = await lease.exec(kind, command, timeoutS);
  expectTimedOut(a, `execute ${kind}`, `b${t}\n`, pythonFloat(timeoutS), []);
  tally.latency('timeout overshoot (latency - timeout)', a.ms - timeoutS * 1000);
  await lease.verify('state after timeout');
  return 'continue';
}

/**
 * `HEAD`, N bytes of 'a', `TAIL`. Under the cap: exactly that. Over it: the first and last cap/2
 * bytes around the broker's `[... D bytes truncated ...]` line, and `truncated: true`.
 */
export async function floodStep(lease: Lease, capBytes: number): Promise<StepEnd> {
  const { rnd, tally } = lease.c;
  const over = rnd.chance(0.5);
  const n = over ? rnd.int(capBytes + 256 * 1024, 3 * capBytes) : rnd.int(64 * 1024, capBytes - 64 * 1024);
  const a = await lease.exec(over ? 'flood over the cap' : 'flood under the cap', `echo HEAD; head -c ${n} /dev/zero | tr '\\0' a; echo; echo TAIL`, 60);
  const total = 5 + n + 6;
  if (!over) {
    const b = execBody(a, 'execute flood');
    const exact = b.stdout.length === total && b.stdout.startsWith('HEAD\n') && b.stdout.endsWith('\nTAIL\n') && /^a*$/.test(b.stdout.slice(5, -6));
    if (!exact || b.stderr !== '' || b.return_code !== 0 || b.status !== 'Success' || b.truncated) {
      const seen = `${b.stdout.length} chars (${JSON.stringify(b.stdout.slice(0, 40))}...), stderr ${JSON.stringify(b.stderr.slice(0, 80))}, rc ${b.return_code}, truncated ${b.truncated}`;
      throw new Unexpected('execute flood under the cap: wrong output', `want ${total} chars exactly; got ${seen}`);
    }
    return 'continue';
  }
  const b = execBody(a, 'execute flood');
  const half = capBytes / 2;
  const marker = `\n[... ${total - capBytes} bytes truncated ...]\n`;
  const want = { head: `HEAD\n${'a'.repeat(half - 5)}`, tail: `${'a'.repeat(half - 6)}\nTAIL\n` };
  const got = { head: b.stdout.slice(0, half), marker: b.stdout.slice(half, half + marker.length), tail: b.stdout.slice(half + marker.length) };
  if (b.truncated !== true || got.head !== want.head || got.marker !== marker || got.tail !== want.tail || b.stderr !== '' || b.return_code !== 0) {
    const seen = `truncated ${b.truncated}, ${b.stdout.length} chars, marker ${JSON.stringify(got.marker.slice(0, 60))}, rc ${b.return_code}`;
    throw new Unexpected('execute flood over the cap: wrong output', `want head+${JSON.stringify(marker)}+tail; got ${seen}`);
  }
  tally.count('flood over the cap: truncated exactly');
  return 'continue';
}

/**
 * The client goes away mid-command (the connection is closed). The lease stays the client's: either it
 * releases at once (the command is killed with the lease), or it calls again — 409 while the command
 * still runs — and then sees the command's effect.
 */
export async function disconnectStep(lease: Lease): Promise<StepEnd> {
  const { rnd, tally } = lease.c;
  const t = rnd.token();
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), rnd.int(150, 400));
  try {
    const command = `echo started > mark-${t}; sleep ${rnd.pick([0.6, 0.8, 1, 1.2])}; echo done-${t} > mark-${t}`;
    const a = await lease.exec('disconnected', command, 10, abort.signal);
    expectResult(a, 'execute disconnected', { stdout: '', rc: 0 }); // answered before the abort: slow client
    tally.count('disconnect: answered before the client left');
  } catch (err) {
    if (!(err instanceof NoAnswer && err.aborted && abort.signal.aborted)) throw err;
  } finally {
    clearTimeout(timer);
  }
  if (rnd.chance(0.5)) {
    await lease.release();
    tally.count('disconnect: released while the command ran');
    return 'ended';
  }
  const deadline = Date.now() + 20_000;
  // Nothing at all (not even `started`) for this long: the request never reached the shell.
  const neverRanAfter = Date.now() + NEVER_RAN_AFTER_MS;
  while (Date.now() < deadline) {
    const a = await lease.exec('after disconnect', `cat mark-${t}`, 5);
    const nothingYet = a.status === 200 && a.body?.return_code === 1 && /No such file/.test(a.body?.stderr);
    if ((a.status === 409 && a.body?.code === 'session_busy') || a.body?.stdout === 'started\n' || (nothingYet && Date.now() < neverRanAfter)) {
      // Still running — or not started yet: a busy broker may read a request after its client left.
      tally.count('disconnect: polled while the command had not finished');
      await sleep(200);
      continue;
    }
    if (nothingYet) {
      tally.count('disconnect: the client left before the broker read the command (it never ran)');
      return 'continue';
    }
    expectResult(a, 'execute after disconnect', { stdout: `done-${t}\n`, rc: 0 });
    tally.count('disconnect: the command finished and its effect was seen');
    return 'continue';
  }
  throw new Unexpected('execute after disconnect: still busy after 20 s', `lease ${lease.id}`);
}

const ABUSES = { killSelf: 2, execSleep: 2, setE: 2, sleepers: 4, forkBurst: 1 };
const ABUSES_WITHOUT_FORK_BURST = { ...ABUSES, forkBurst: 0 };

/** What a model may do to its shell (test/isolation/abuse.test.ts): each gets the broker's documented answer. */
export async function abuseStep(lease: Lease, forkBurst: boolean): Promise<StepEnd> {
  const { rnd, tally } = lease.c;
  const kind = rnd.weighted(forkBurst ? ABUSES : ABUSES_WITHOUT_FORK_BURST);
  tally.count(`abuse: ${kind}`);
  switch (kind) {
    case 'killSelf':
      await lease.expectBrokenThenRelease('kill -9 $$', await lease.exec('abuse', 'kill -9 $$', 5));
      return 'ended';
    case 'execSleep':
      await lease.expectBrokenThenRelease('exec sleep 1', await lease.exec('abuse', 'exec sleep 1', 5));
      return 'ended';
    case 'setE':
      expectResult(await lease.exec('abuse', 'set -e', 5), 'execute set -e', { stdout: '', rc: 0 });
      await lease.expectBrokenThenRelease('set -e; false', await lease.exec('abuse', 'false', 5));
      return 'ended';
    case 'sleepers': {
      // Two sleepers, one holding the shell's stdout; they outlive the run unless the release kills them.
      const b = execBody(await lease.exec('abuse', 'sleep 3600 > /dev/null & (sleep 3600 &)', 5), 'execute background sleepers');
      // bash's job notice; [2], [3]... when an earlier step of this lease left jobs running.
      if (b.return_code !== 0 || b.stdout !== '' || !/^\[\d+\] \d+\n$/.test(b.stderr)) {
        throw new Unexpected('execute background sleepers: wrong output', JSON.stringify(b));
      }
      await lease.verify('state after sleepers');
      return 'continue';
    }
    case 'forkBurst': {
      // 300 sleepers against a pids limit of 256: held there until the timeout kills them.
      const a = await lease.exec('abuse', 'for i in {1..300}; do sleep 3600 & done', 2);
      expectTimedOut(a, 'execute fork burst', '', '2.0', [JOB_NOTICE, /^bash: fork: Resource temporarily unavailable$/]);
      await lease.verify('state after fork burst');
      return 'continue';
    }
  }
}
