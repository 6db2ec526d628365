/**
 * A lease's journal keeps a head and a tail of each output, and nothing more: not the whole output
 * behind them (V8's slices are views into the string they came from). Measured on the heap after a
 * full collection; the bound is 10x away from either outcome.
 * @backend any
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { DEFAULT_JOURNAL_LIMITS, LeaseJournal } from '../../src/core/pool/leaseJournal';
import type { ExecResult } from '../../src/core/session/bashSession';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function heapUsedMb(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1e6;
}

it('keeps ~2 KB per entry of a 1 MB output, not the output', () => {
  const before = heapUsedMb();
  const journal = new LeaseJournal({ ...DEFAULT_JOURNAL_LIMITS, entries: 100 });
  for (let i = 0; i < 100; i++) {
    const stdout = `${String.fromCharCode(97 + (i % 26)).repeat(1 << 20)}${i}\n`;
    const result = { stdout, stderr: '', returnCode: 0, timedOut: false, facts: { signal: null } } as unknown as ExecResult;
    journal.record(`echo ${i}`, null, Date.now(), 1, result);
  }
  const grownMb = heapUsedMb() - before;
  // 100 outputs of 1 MB each retained would be ~100-200 MB; their heads and tails are ~0.5 MB.
  expect(grownMb).toBeLessThan(20);
  const entries = journal.snapshot().entries;
  expect(entries).toHaveLength(100);
  expect(entries[99].stdout_head).toBe('v'.repeat(DEFAULT_JOURNAL_LIMITS.outputChars));
  expect(entries[99].stdout_tail).toBe(`${'v'.repeat(DEFAULT_JOURNAL_LIMITS.outputChars - 3)}99\n`);
});
