/**
 * A test broker that pulls images on demand from a test registry (registry.ts), and what the image
 * suites read of it: the metric of a pull count, the containers of its image pools on the engine.
 */
import { dockerEngine } from '../../src/backends/docker/containers/engine';
import { LABEL_DEPLOYMENT } from '../../src/backends/docker/containers/labels';
import { startTestBroker, type TestBroker } from './broker';
import { TestRegistry } from '../../devtools/registry';
import { pushTaskImage, removeImage } from '../../devtools/taskImage';

/**
 * A suite's registry and brokers: one registry for the suite, each test's broker closed after it,
 * every task image pushed removed from the engine at the end. `coldImage` pushes a task image and
 * leaves the engine without it (a cold node's view).
 */
export function imageSuite(): {
  registry(): TestRegistry;
  use(broker: TestBroker): TestBroker;
  coldImage(registry: TestRegistry, repository: string, bytes?: number): Promise<string>;
  forget(ref: string): void;
} {
  let registry: TestRegistry | null = null;
  let broker: TestBroker | null = null;
  const pushed: string[] = [];
  beforeAll(async () => {
    registry = await TestRegistry.start();
  }, 120_000);
  afterEach(async () => {
    await broker?.close();
    broker = null;
  });
  afterAll(async () => {
    for (const ref of pushed) await removeImage(ref).catch(() => false);
    await registry?.destroy();
  });
  return {
    registry: () => registry!,
    use: (b) => (broker = b),
    coldImage: async (reg, repository, bytes = 1024 * 1024) => {
      const { ref } = await pushTaskImage(reg, repository, 'v1', { keepLocal: false, bytes });
      pushed.push(ref);
      return ref;
    },
    forget: (ref) => pushed.push(ref),
  };
}

/** A broker allowed to pull `<registry>/tasks/*` (small pools: one container of 2 sessions to start). */
export function startImageBroker(registryAddress: string, env: Record<string, string> = {}): Promise<TestBroker> {
  return startTestBroker({
    BROKER_CONTAINERS: '1',
    BROKER_SESSIONS_PER_CONTAINER: '1',
    BROKER_IMAGE_ALLOW: `${registryAddress}/tasks/*`,
    BROKER_IMAGE_SESSIONS_PER_CONTAINER: '2',
    BROKER_ACQUIRE_TIMEOUT: '60',
    ...env,
  });
}

/** A counter's value in a /metrics text (0 when absent). */
export function metricValue(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

export async function pullsOk(tb: TestBroker): Promise<number> {
  return metricValue(await tb.metrics(), 'broker_image_pulls_total{result="ok"}');
}

export async function pullsFailed(tb: TestBroker): Promise<number> {
  return metricValue(await tb.metrics(), 'broker_image_pulls_total{result="failed"}');
}

/** Containers on the engine of this broker's image pools (their deployment is its own, `.i-<hash>`). */
export async function imagePoolContainers(tb: TestBroker): Promise<string[]> {
  const prefix = `${tb.broker.config.docker.deployment}.i-`;
  const all = await dockerEngine().listContainers({ all: true, filters: { label: [LABEL_DEPLOYMENT] } });
  return all.filter((c) => (c.Labels[LABEL_DEPLOYMENT] ?? '').startsWith(prefix)).map((c) => c.Names[0]);
}

/** Whether the engine holds `ref`. */
export async function engineHas(ref: string): Promise<boolean> {
  return dockerEngine()
    .getImage(ref)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}
