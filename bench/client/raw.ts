/**
 * The raw backend round trip: the broker's own backend (LocalBackend or DockerBackend, with its
 * defaults, or DockerBackend over docker exec streams) and BashSession, in this process, with no HTTP
 * and no pool. The floor of every execute.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BashSession } from '../../src/core/session/bashSession';
import type { ContainerRef, SessionBackend } from '../../src/core/ports/backend';
import { LocalBackend } from '../../src/backends/local/localBackend';
import { DockerBackend } from '../../src/backends/docker/dockerBackend';
import { loadConfig } from '../../src/config/config';
import { mapLimit } from '../lib/stats';
import { FLOOR_DEPLOYMENT, FLOOR_EXEC_DEPLOYMENT, type RawTransport } from '../protocol';

export interface RawSet {
  sessions: BashSession[];
  /** What the broker does to a slot at release, minus HTTP and the pool: close it, start a fresh shell. */
  respawn(i: number): Promise<void>;
  close(): Promise<void>;
}

export async function makeBackend(kind: 'local' | 'docker', transport: RawTransport, image: string, deployment: string): Promise<{ backend: SessionBackend; root: string | null }> {
  if (transport === 'exec' && kind !== 'docker') throw new Error('the docker exec transport needs the docker backend');
  if (kind === 'docker') {
    const env: Record<string, string> = { BROKER_BACKEND: 'docker', BROKER_IMAGE: image, BROKER_DEPLOYMENT: deployment };
    if (transport === 'exec') Object.assign(env, { BROKER_DOCKER_TRANSPORT: 'exec', BROKER_DEPLOYMENT: FLOOR_EXEC_DEPLOYMENT });
    const backend = new DockerBackend(loadConfig(env).docker);
    await backend.init(); // also sweeps floor containers a crashed run left
    return { backend, root: null };
  }
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-raw-'));
  return { backend: new LocalBackend({ root, cgroups: 'auto' }), root };
}

export async function openRaw(
  kind: 'local' | 'docker',
  transport: RawTransport,
  containers: number,
  perContainer: number,
  image: string,
  concurrency: number,
  deployment = FLOOR_DEPLOYMENT,
): Promise<RawSet> {
  const { backend, root } = await makeBackend(kind, transport, image, deployment);
  const refs: ContainerRef[] = [];
  const sessions: BashSession[] = [];
  const open = async (ref: ContainerRef, slotId: string): Promise<BashSession> => new BashSession(await backend.openShell(ref, { slotId }));
  const close = async (): Promise<void> => {
    await Promise.all(sessions.map((s) => s.close().catch(() => undefined)));
    await mapLimit(refs, 8, (ref) => backend.removeContainer(ref).catch(() => undefined));
    await backend.close();
    if (root) await fs.rm(root, { recursive: true, force: true });
  };
  try {
    // 8 containers at once, as the broker starts them.
    await mapLimit(Array.from({ length: containers }, (_, i) => i), 8, async (i) => {
      const ref = await backend.containers.start({ kind: 'pool', index: i });
      refs.push(ref);
      await backend.connectContainer?.(ref);
    });
    const slots = refs.flatMap((ref, c) => Array.from({ length: perContainer }, (_, s) => ({ ref, slotId: `floor-c${c}s${s}` })));
    await mapLimit(slots, concurrency, async ({ ref, slotId }) => {
      const session = await open(ref, slotId);
      sessions.push(session);
      await session.start();
    });
  } catch (err) {
    await close();
    throw err;
  }
  const respawn = async (i: number): Promise<void> => {
    await sessions[i].close();
    sessions[i] = await open(refs[0], 'floor-respawn');
    await sessions[i].start();
  };
  return { sessions, respawn, close };
}
