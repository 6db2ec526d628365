/**
 * The registry fixture itself (devtools/registry.ts, scripts/registry.sh), on the machine's real
 * engine: a task image built and pushed to a private registry on loopback, removed from the engine
 * and pulled back by reference over plain HTTP (no insecure-registries setting: loopback), its test
 * command run in it; a registry with credentials that refuses a wrong password; a stopped registry
 * that refuses a pull, and serves it again once restarted on its storage.
 * @backend docker
 */
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { describeDocker } from '../helpers/dockerSuite';
import { TestRegistry, writeDockerConfig, type RegistryRef } from '../../devtools/registry';
import { pushTaskImage, removeImage, pullImage, type PushedImage } from '../../devtools/taskImage';
import { docker } from '../../devtools/taskImage';

const TEST_MS = 180_000;
const BASE = 'bash-broker-test:latest';

/** Whether the machine's engine holds `ref`. */
async function engineHas(ref: string): Promise<boolean> {
  return docker(['image', 'inspect', ref]).then(
    () => true,
    () => false,
  );
}

/** The layers of `ref` in `registry`, as skopeo reads them from the registry itself (no engine). */
async function registryLayers(registry: TestRegistry, ref: string): Promise<string[]> {
  const creds = registry.auth ? ['--creds', `${registry.auth.username}:${registry.auth.password}`] : [];
  const { stdout } = await promisify(execFile)('skopeo', ['inspect', '--tls-verify=false', ...creds, `docker://${ref}`], { timeout: 60_000 });
  return (JSON.parse(stdout) as { Layers: string[] }).Layers;
}

/** A pull's error text, or '' when it succeeded. */
async function pullError(ref: string, registry?: RegistryRef): Promise<string> {
  return pullImage(ref, { registry }).then(
    () => '',
    (err: Error) => err.message,
  );
}

describeDocker('a private registry on loopback (the images fixture)', () => {
  const repo = `fixture-${randomBytes(3).toString('hex')}`;
  let registry: TestRegistry;
  let pushed: PushedImage;

  beforeAll(async () => {
    registry = await TestRegistry.start();
    pushed = await pushTaskImage(registry, repo, 'v1', { base: BASE, bytes: 2 * 1024 * 1024 });
  }, TEST_MS);

  afterAll(async () => {
    await removeImage(pushed?.ref ?? registry.ref(repo, 'v1')).catch(() => undefined);
    await registry?.destroy();
  }, TEST_MS);

  it('holds a pushed task image: the base image\'s layers and one of its own', async () => {
    expect(pushed.ref).toBe(`${registry.address}/${repo}:v1`);
    expect(registry.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(await registry.has(repo, 'v1')).toBe(true);
    expect(await registry.has(repo, 'no-such-tag')).toBe(false);
    const baseLayers = JSON.parse(await docker(['image', 'inspect', '--format', '{{json .RootFS.Layers}}', BASE])) as string[];
    expect(await registryLayers(registry, pushed.ref)).toHaveLength(baseLayers.length + 1);
  }, TEST_MS);

  it('is pulled back by reference into an engine that no longer has it, and runs its test command', async () => {
    expect(await removeImage(pushed.ref)).toBe(true);
    expect(await engineHas(pushed.ref)).toBe(false);
    // The base it was built on is another image: removing the task image leaves it.
    expect(await engineHas(BASE)).toBe(true);
    await pullImage(pushed.ref);
    expect(await engineHas(pushed.ref)).toBe(true);
    const digests = JSON.parse(await docker(['image', 'inspect', '--format', '{{json .RepoDigests}}', pushed.ref])) as string[];
    expect(digests).toContain(pushed.digestRef);
    const out = await docker(['run', '--rm', '--network', 'none', pushed.ref, 'bash', '/repo/run-tests.sh']);
    expect(out.trim()).toBe(`ok ${repo}:v1`);
  }, TEST_MS);

  it('answers a tag it does not have with a pull error that names it', async () => {
    expect(await pullError(registry.ref(repo, 'absent'))).toMatch(/manifest unknown|not found/i);
  }, TEST_MS);

  it('refuses pulls once stopped, and serves them again when restarted on its storage', async () => {
    await removeImage(pushed.ref);
    await registry.stop();
    expect(registry.running).toBe(false);
    expect(await pullError(pushed.ref)).toMatch(/connection refused/i);
    expect(await engineHas(pushed.ref)).toBe(false);
    await registry.run();
    expect(await pullError(pushed.ref)).toBe('');
    expect(await engineHas(pushed.ref)).toBe(true);
  }, TEST_MS);
});

describeDocker('a private registry with credentials', () => {
  const repo = `fixture-auth-${randomBytes(3).toString('hex')}`;
  let registry: TestRegistry;
  let pushed: PushedImage;

  beforeAll(async () => {
    registry = await TestRegistry.start({ auth: { username: 'trainer', password: randomBytes(12).toString('hex') } });
    pushed = await pushTaskImage(registry, repo, 'v1', { base: BASE, bytes: 1024 * 1024, keepLocal: false });
  }, TEST_MS);

  afterAll(async () => {
    await removeImage(pushed?.ref ?? registry.ref(repo, 'v1')).catch(() => undefined);
    await registry?.destroy();
  }, TEST_MS);

  it('serves the right credentials and refuses a wrong password or none', async () => {
    expect(await engineHas(pushed.ref)).toBe(false);
    // The right user with a wrong password, in a CLI configuration of its own.
    const wrong: RegistryRef = { address: registry.address, auth: { username: 'trainer', password: 'wrong' }, dockerConfig: path.join(registry.dir, 'wrong-docker') };
    writeDockerConfig(wrong.dockerConfig!, wrong.address, wrong.auth!);
    expect(await pullError(pushed.ref, wrong)).toMatch(/unauthorized|authentication required/i);
    // No credentials at all: the engine sends none, the registry asks for them.
    expect(await pullError(pushed.ref)).toMatch(/no basic auth credentials|unauthorized/i);
    expect(await engineHas(pushed.ref)).toBe(false);
    expect(await pullError(pushed.ref, registry)).toBe('');
    expect(await engineHas(pushed.ref)).toBe(true);
  }, TEST_MS);
});
