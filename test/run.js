/**
 * `npm test`: the whole suite in two jest runs, then one table of every suite's time.
 *
 *  1. parallel: every suite not tagged `@serial`, on BROKER_TEST_WORKERS jest workers (default: 2 per
 *     core, at least 4). Docker suites mostly wait on the engine, so more workers than cores pay.
 *  2. serial: the `@serial` suites (test/suitePragmas.js), one at a time, with the machine to themselves.
 *
 * Both phases run even when the first fails, so one run shows every failure; the exit code is the
 * first non-zero one. Arguments after `npm test --` go to both jest runs (a phase that they leave
 * empty passes). BROKER_TEST_PHASE=parallel or serial runs one phase only.
 *
 * With --coverage (`npm run coverage`), each phase writes coverage/<phase>/ and the two are joined
 * into coverage/ (test/coverageMerge.js): line coverage of src/.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { formatTable } = require('./reporters/suiteTimes');
const { mergeCoverage } = require('./coverageMerge');

const root = path.join(__dirname, '..');
const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const args = process.argv.slice(2);
const workers = process.env.BROKER_TEST_WORKERS || String(Math.max(4, 2 * os.availableParallelism()));

const phases = [
  { name: 'parallel', args: [`--maxWorkers=${workers}`] },
  { name: 'serial', args: ['--runInBand'] },
].filter((p) => !process.env.BROKER_TEST_PHASE || process.env.BROKER_TEST_PHASE === p.name);

/**
 * The broker as a process (devtools/brokerProcess.ts compiledEntry): built once here for the whole
 * run, rather than checked by each suite that starts one. A build that fails is left to those suites,
 * which fail saying why. Not for a run narrowed by arguments, which may start none.
 */
function prebuildBrokerEntry() {
  const script = "require('./devtools/brokerProcess').compiledEntry().then((entry) => process.stdout.write(entry))";
  const r = spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status === 0 && r.stdout) return { BROKER_TEST_COMPILED_ENTRY: r.stdout.trim() };
  console.error('*** npm test: the broker did not build; the suites that start it as a process will say why ***');
  return {};
}
const prebuilt = args.length ? {} : prebuildBrokerEntry();

const outputDir = path.join(root, 'test-output');
const coverage = args.includes('--coverage');
const coverageDir = (phase) => path.join(root, 'coverage', phase);
let exitCode = 0;
const done = [];
for (const phase of phases) {
  const file = path.join(outputDir, `suite-times-${phase.name}.json`);
  fs.rmSync(file, { force: true });
  console.log(`\n=== npm test: ${phase.name} suites (${phase.args.join(' ')}) ===\n`);
  const phaseArgs = [...phase.args, ...(args.length || phase.name === 'serial' ? ['--passWithNoTests'] : [])];
  if (coverage) {
    fs.rmSync(coverageDir(phase.name), { recursive: true, force: true });
    phaseArgs.push(`--coverageDirectory=${coverageDir(phase.name)}`, '--coverageReporters=json');
  }
  const r = spawnSync(process.execPath, [jest, ...phaseArgs, ...args], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, ...prebuilt, BROKER_TEST_PHASE: phase.name, BROKER_TEST_JOINED_TABLE: '1' },
  });
  const code = r.status ?? 1;
  if (code !== 0 && exitCode === 0) exitCode = code;
  // A phase that died before its reporter ran has no file: its suites are missing from the table, and the exit code says so.
  if (fs.existsSync(file)) done.push(JSON.parse(fs.readFileSync(file, 'utf8')));
  else console.error(`\n*** npm test: the ${phase.name} phase wrote no suite times (jest exited ${code}) ***`);
}

process.stdout.write(formatTable(done.flatMap((d) => d.rows), done.map((d) => ({ name: d.phase, wallMs: d.wallMs }))));
if (coverage) {
  const pct = mergeCoverage(phases.map((p) => coverageDir(p.name)), path.join(root, 'coverage'));
  console.log(`\nLine coverage of src/ over ${phases.map((p) => p.name).join(' and ')}: ${pct}%`);
}
process.exitCode = exitCode;
