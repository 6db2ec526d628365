/**
 * A suite tagged `@backend docker`. These files run in the jest "docker" project, whose setup
 * (dockerProject.ts) sets BROKER_TEST_BACKEND=docker; run any other way, the suite is one test that
 * says why it did nothing.
 */
import { testBackend } from './broker';
import { loadIsolationConfig } from '../../src/config/isolationConfig';

/** Whether the docker suites' brokers isolate their sessions (BROKER_SESSION_ISOLATION, or its default). */
export const sessionIsolation = testBackend === 'docker' && loadIsolationConfig(process.env).enabled;

export function describeDocker(title: string, body: () => void): void {
  if (testBackend === 'docker') return describe(title, body);
  describe(title, () => {
    it(`runs only in the jest "docker" project (BROKER_TEST_BACKEND is '${testBackend}', not 'docker')`, () => undefined);
  });
}
