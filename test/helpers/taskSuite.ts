/**
 * The fixtures of the task sandbox tests on Docker: a stub LLM, a directory of bare repos, a socket
 * directory of this run's own, and a broker on the Docker backend configured for all three.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Dockerode from 'dockerode';
import { startTestBroker, testDeployment, type TestBroker } from './broker';
import { StubLlm } from '../../devtools/stubLlm';
import { makeBareRepo } from '../../devtools/taskStreams';
import { LABEL_DEPLOYMENT, LABEL_KIND } from '../../src/backends/docker/containers/labels';
import { DockerDemuxer } from '../../src/backends/docker/shells/demux';

export const TASK_IMAGE = process.env.BROKER_TASK_IMAGE ?? 'bash-broker-task:latest';
/** The key Core holds: the tests look for it everywhere it must not be. */
export const SECRET_KEY = `sk-ant-test-${process.pid}-b4d5e6f7a8c9-never-leak`;
export const README = 'This is demo-repo: it prints the answer 42.\n';

export interface TaskFixture {
  stub: StubLlm;
  gitDir: string;
  socketDir: string;
  deployment: string;
  env: Record<string, string>;
  startBroker(extra?: Record<string, string>): Promise<TestBroker>;
  /** Containers of this fixture's task deployment still on the engine. */
  containers(): Promise<Dockerode.ContainerInfo[]>;
  close(): Promise<void>;
}

export async function taskFixture(name: string): Promise<TaskFixture> {
  const docker = new Dockerode();
  try {
    await docker.getImage(TASK_IMAGE).inspect();
  } catch {
    throw new Error(`image ${TASK_IMAGE} is missing: build it with scripts/docker-images.sh task`);
  }
  const stub = new StubLlm();
  await stub.start();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `bash-broker-tasks-${name}-`));
  const gitDir = path.join(root, 'git');
  const socketDir = path.join(root, 'sockets');
  fs.mkdirSync(gitDir);
  makeBareRepo(gitDir, 'acme/demo-repo', { 'README.md': README, 'src/answer.sh': 'echo 42\n' });
  const deployment = testDeployment(`tasks-${name}-${process.pid}`);
  const env = {
    BROKER_DEPLOYMENT: `${deployment}-b0`,
    BROKER_CONTAINERS: '1',
    BROKER_SESSIONS_PER_CONTAINER: '1',
    BROKER_TASK_IMAGE: TASK_IMAGE,
    BROKER_GIT_BASE_URL: gitDir,
    BROKER_ANTHROPIC_BASE_URL: stub.url,
    BROKER_TASK_SOCKET_DIR: socketDir,
    BROKER_TASK_MODEL: 'anthropic/claude-sonnet-4-5',
    ANTHROPIC_API_KEY: SECRET_KEY,
  };
  // Each broker its own deployment (a broker's start sweeps its deployment's pool containers: two
  // brokers sharing one would take each other's); this fixture's task containers are all of them.
  let brokers = 0;
  const containers = async (): Promise<Dockerode.ContainerInfo[]> =>
    (await docker.listContainers({ all: true, filters: { label: [`${LABEL_KIND}=task`] } })).filter((c) => c.Labels[LABEL_DEPLOYMENT].startsWith(`${deployment}-b`));
  return {
    stub,
    gitDir,
    socketDir,
    deployment,
    env,
    startBroker: (extra = {}) => startTestBroker({ ...env, BROKER_DEPLOYMENT: `${deployment}-b${++brokers}`, ...extra }),
    containers,
    async close() {
      for (const c of await containers()) await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
      await stub.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Runs `cmd` in a container (as `docker exec`) and answers its output, stdout and stderr together. */
export async function execIn(container: Dockerode.Container, cmd: string[]): Promise<string> {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  // Without a TTY the stream is multiplexed: demultiplexed, since a frame's header can hold printable
  // bytes (its length), and how the output is cut into frames depends on how busy the machine is.
  const chunks: Buffer[] = [];
  const demux = new DockerDemuxer((_stream, chunk) => chunks.push(Buffer.from(chunk)));
  stream.on('data', (c: Buffer) => demux.push(c));
  await new Promise((r) => stream.on('end', r));
  return Buffer.concat(chunks).toString('utf8');
}
