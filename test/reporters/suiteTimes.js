/**
 * A jest reporter: at the end of a run, one row per suite (project, file, wall time, tests), the
 * slowest last and the ten slowest repeated beside the totals, so the end of a CI log shows where the
 * time goes. Every row is also written as JSON to test-output/suite-times-<phase>.json; test/run.js
 * joins the phases of `npm test` into one table from those files.
 */
const fs = require('node:fs');
const path = require('node:path');

const SLOWEST = 10;

/**
 * One suite's row from jest's TestResult (perfStats are epoch milliseconds around the file's run);
 * `startMs` is when it started, from the run's start (for the JSON: which suites ran side by side).
 */
function rowOf(test, result, runStartedAt) {
  const project = test.context.config.displayName?.name ?? '';
  return {
    project,
    file: path.relative(test.context.config.rootDir, result.testFilePath),
    ms: Math.max(0, result.perfStats.end - result.perfStats.start),
    startMs: Math.max(0, result.perfStats.start - runStartedAt),
    passed: result.numPassingTests,
    failed: result.numFailingTests + (result.testExecError ? 1 : 0),
    skipped: result.numPendingTests + result.numTodoTests,
    // A suite that failed to load has no tests but failed all the same.
    error: Boolean(result.testExecError || result.failureMessage),
  };
}

function seconds(ms) {
  return (ms / 1000).toFixed(1).padStart(7) + ' s';
}

function clock(ms) {
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

function line(r) {
  const mark = r.error ? ' FAILED' : '';
  return `${seconds(r.ms)}  ${r.project.padEnd(7)} ${r.file}  (${r.passed + r.failed + r.skipped} tests)${mark}`;
}

/**
 * The table as text: every row, slowest last; then the ten slowest and the totals. `phases` is a list
 * of { name, wallMs } (one per jest run) and `rows` the rows of all of them.
 */
function formatTable(rows, phases) {
  const sorted = [...rows].sort((a, b) => a.ms - b.ms);
  const sum = (k) => rows.reduce((n, r) => n + r[k], 0);
  const wall = phases.reduce((n, p) => n + p.wallMs, 0);
  const out = ['', `Suite times (${rows.length} suites, fastest first):`, ...sorted.map(line), ''];
  out.push(`Slowest ${Math.min(SLOWEST, rows.length)}:`, ...sorted.slice(-SLOWEST).reverse().map(line), '');
  const failedSuites = rows.filter((r) => r.error).length;
  out.push(
    `Totals: ${rows.length} suites (${failedSuites} failed), ${sum('passed') + sum('failed') + sum('skipped')} tests: ` +
      `${sum('passed')} passed, ${sum('failed')} failed, ${sum('skipped')} skipped`,
    `Suite time ${clock(sum('ms'))} summed; wall time ${clock(wall)}` +
      (phases.length > 1 ? ` (${phases.map((p) => `${p.name} ${clock(p.wallMs)}`).join(', ')})` : ''),
    '',
  );
  return out.join('\n');
}

class SuiteTimesReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    this.rows = [];
    this.startedAt = Date.now();
  }

  onRunStart() {
    this.startedAt = Date.now();
  }

  onTestResult(test, result) {
    this.rows.push(rowOf(test, result, this.startedAt));
  }

  onRunComplete() {
    const phase = process.env.BROKER_TEST_PHASE || 'all';
    const wallMs = Date.now() - this.startedAt;
    const dir = path.join(this.rootDir, 'test-output');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `suite-times-${phase}.json`), JSON.stringify({ phase, wallMs, rows: this.rows }, null, 1));
    // Under test/run.js the joined table follows the last phase; a lone jest run prints its own.
    if (!process.env.BROKER_TEST_JOINED_TABLE) process.stdout.write(formatTable(this.rows, [{ name: phase, wallMs }]));
  }
}

module.exports = SuiteTimesReporter;
module.exports.formatTable = formatTable;
