/**
 * Two projects: every suite against the local backend, and the backend-parametrized HTTP suite again
 * against a real Docker engine. Without an engine the Docker project is left out LOUDLY; under CI
 * (CI=true) it stays in and fails, because a skipped Docker suite must not pass in CI.
 */
const { spawnSync } = require('node:child_process');

const ts = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] };
const common = { testEnvironment: 'node', transform: ts };

function dockerEngineAnswers() {
  const r = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 15000, encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() !== '';
}

const projects = [
  { ...common, displayName: 'local', roots: ['<rootDir>/test'], testMatch: ['<rootDir>/test/{unit,http,local,cluster}/**/*.test.ts'] },
];
const ci = Boolean(process.env.CI) && process.env.CI !== 'false';
if (process.env.BROKER_SKIP_DOCKER_TESTS === '1' && !ci) {
  console.warn('\n*** DOCKER SUITE SKIPPED: BROKER_SKIP_DOCKER_TESTS=1 ***\n');
} else if (ci || dockerEngineAnswers()) {
  projects.push({
    ...common,
    displayName: 'docker',
    roots: ['<rootDir>/test'],
    testMatch: ['<rootDir>/test/{http,docker,cluster}/**/*.test.ts'],
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
module.exports = { projects, testTimeout: 120000, forceExit: true };
