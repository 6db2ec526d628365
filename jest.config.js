/**
 * Two projects: every suite against the local backend, and the backend-parametrized suites again
 * against a real Docker engine. Without an engine the Docker project is left out LOUDLY; under CI
 * (CI=true) it stays in and fails, because a skipped Docker suite must not pass in CI.
 *
 * Suites are laid out by feature (test/<feature>/, like src/); a suite's own doc comment alone says
 * where it runs (test/suitePragmas.js): no tag runs it in both projects, `@backend any` once in the
 * local project, `@backend local` only in the local project, `@backend docker` only in the docker
 * project; `@serial <why>` only when BROKER_TEST_PHASE is `serial` (test/run.js, which `npm test`
 * runs, runs the other suites in parallel with BROKER_TEST_PHASE=parallel first, then these alone).
 * Without BROKER_TEST_PHASE every suite is in (`npx jest <file>` runs any file).
 */
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { suiteTags, exactPathPatterns } = require('./test/suitePragmas');

// Types are checked by `tsc --noEmit -p .` (tsconfig.json includes test/), so each jest worker only
// transpiles: a type check per worker costs more CPU than most suites on a 2-core machine.
const ts = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] };
// src/ is a root for coverage only: the files no suite loads count as uncovered (npm run coverage).
const common = { testEnvironment: 'node', transform: ts, roots: ['<rootDir>/test', '<rootDir>/src'] };

function dockerEngineAnswers() {
  const r = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 15000, encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() !== '';
}

const testRoot = path.join(__dirname, 'test');
const tags = suiteTags(testRoot);
// The harness folders the suites were once laid out in: a suite still there (a branch from before the
// feature layout) would run in the wrong projects, since its folder no longer says where it runs.
const RETIRED_FOLDERS = ['unit', 'docker', 'local'];
for (const t of tags) {
  const folder = path.relative(testRoot, t.file).split(path.sep)[0];
  if (RETIRED_FOLDERS.includes(folder)) {
    throw new Error(`${t.file}: test/${folder}/ is retired; put the suite in its feature's folder with the @backend tag its old folder meant (docs/testing.md)`);
  }
}

const phase = process.env.BROKER_TEST_PHASE ?? '';
if (!['', 'parallel', 'serial'].includes(phase)) throw new Error(`BROKER_TEST_PHASE=${phase}: expected parallel or serial`);
const outOfPhase = tags.filter((t) => (phase === 'parallel' && t.serial) || (phase === 'serial' && !t.serial)).map((t) => t.file);
const notIn = (project) => tags.filter((t) => !t.projects.includes(project)).map((t) => t.file);

const projects = [
  {
    ...common,
    displayName: 'local',
    testMatch: ['<rootDir>/test/*/*.test.ts'],
    testPathIgnorePatterns: ['/node_modules/', ...exactPathPatterns([...outOfPhase, ...notIn('local')])],
  },
];
const ci = Boolean(process.env.CI) && process.env.CI !== 'false';
if (process.env.BROKER_SKIP_DOCKER_TESTS === '1' && !ci) {
  console.warn('\n*** DOCKER SUITE SKIPPED: BROKER_SKIP_DOCKER_TESTS=1 ***\n');
} else if (ci || dockerEngineAnswers()) {
  projects.push({
    ...common,
    displayName: 'docker',
    testMatch: ['<rootDir>/test/*/*.test.ts'],
    testPathIgnorePatterns: ['/node_modules/', ...exactPathPatterns([...outOfPhase, ...notIn('docker')])],
    setupFiles: ['<rootDir>/test/helpers/dockerProject.ts'],
  });
} else {
  console.warn(
    '\n*** DOCKER SUITE SKIPPED: no Docker engine answers `docker info`. ***\n' +
      '*** Start one with scripts/docker-engine.sh and build images with scripts/docker-images.sh. ***\n' +
      '*** (Under CI=true this is a failure, not a skip.) ***\n',
  );
}

/** @type {import('jest').Config} */
// testTimeout is a global option in jest 29 (ignored inside projects). Generous: CI machines are noisy.
// forceExit: a client library's idle keep-alive socket or a pending retry timer must not hold the
// run open after the last suite (it would wait forever); what a test starts (processes,
// containers, mounts, engines) each suite stops and checks itself.
// The suite times reporter prints, after jest's own summary, each suite's wall time, the slowest ten
// and the totals (test/reporters/suiteTimes.js).
module.exports = {
  projects,
  testTimeout: 120000,
  forceExit: true,
  reporters: ['default', '<rootDir>/test/reporters/suiteTimes.js'],
  // Only with --coverage (npm run coverage): line coverage of the broker's own code.
  collectCoverageFrom: ['src/**/*.ts'],
};
