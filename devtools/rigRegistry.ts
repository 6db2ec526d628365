/**
 * The registry of a cluster rig (clusterRig.ts): images move from the machine's engine to the rig's
 * engines through it, as between hosts. The rig runs one of its own (member `registry`,
 * `scripts/registry.sh run`, storage in `<rig>/registry`) or is given one on loopback.
 *
 * Its engines run in network namespaces with no way out (rigEngine.ts), so they reach it through a
 * link: in each namespace a forwarder listens on the registry's own address (127.0.0.1:<port>) and
 * forwards to `<rig>/registry.sock`; on the machine's side member `registry-link` forwards that
 * socket to the registry (scripts/socket-forward.js, both). An image has one name everywhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FORWARDER, type RigEngine } from './rigEngine';
import { logTail, memberPids, spawnMember, stopMember, waitFor } from './rigProcess';
import { docker } from './taskImage';

const REGISTRY_SCRIPT = path.join(__dirname, '..', 'scripts', 'registry.sh');
const START_TIMEOUT_MS = 120_000;

/** The rig's record of it: where it answers, and whether the rig runs it. */
export interface RigRegistryState {
  address: string;
  own: boolean;
}

/** The unix socket of rig `dir` that the engines' forwarders reach the registry through. */
export function registrySocket(dir: string): string {
  return path.join(dir, 'registry.sock');
}

/**
 * (Re)starts the rig's own registry (on its port and storage) unless it was given one, then the
 * link; `waitAnswer` is the rig's wait for a member's HTTP answer.
 */
export async function startRigRegistry(dir: string, registry: RigRegistryState, waitAnswer: (name: string, pid: number, url: string) => Promise<void>): Promise<void> {
  const log = (name: string) => path.join(dir, `${name}.log`);
  if (registry.own) {
    const env = { REGISTRY_DIR: path.join(dir, 'registry'), REGISTRY_PORT: registry.address.split(':')[1] };
    const pid = spawnMember({ dir, name: 'registry', command: 'bash', args: [REGISTRY_SCRIPT, 'run'], env, log: log('registry') });
    await waitAnswer('registry', pid, `http://${registry.address}/v2/`);
  }
  const ready = path.join(dir, 'registry-link.ready');
  fs.rmSync(ready, { force: true });
  const args = [FORWARDER, `${registrySocket(dir)}=${registry.address}`, '--ready-file', ready];
  const pid = spawnMember({ dir, name: 'registry-link', command: process.execPath, args, env: {}, log: log('registry-link') });
  await waitFor(
    () => {
      if (!memberPids(dir, 'registry-link').includes(pid)) throw new Error(`registry-link exited at start:\n${logTail(log('registry-link'))}`);
      return fs.existsSync(ready);
    },
    START_TIMEOUT_MS,
    `the registry link on ${registrySocket(dir)}`,
  );
}

/** Stops the link and the rig's own registry (its storage stays for the next start). */
export async function stopRigRegistry(dir: string): Promise<void> {
  await stopMember(dir, 'registry-link', 10_000);
  await stopMember(dir, 'registry', 10_000);
}

/** `image` as `registry` names it (one that names a registry already is left as it is). */
export function registryRef(registry: string, image: string): string {
  const first = image.split('/')[0];
  return image.includes('/') && /[.:]|^localhost$/.test(first) ? image : `${registry}/${image}`;
}

/**
 * `images` from the machine's engine into every engine through `registry`: each pushed once (the
 * registry name is a second tag of it on the machine's engine, removed after the push), then pulled
 * by each engine, which names it as the nodes do. Each engine's pull times in ms, by image.
 */
export async function distributeImages(registry: string, images: string[], engines: RigEngine[]): Promise<Record<string, number[]>> {
  const refs = images.map((image) => registryRef(registry, image));
  for (const [i, image] of images.entries()) {
    if (refs[i] === image) continue;
    await docker(['tag', image, refs[i]]);
    try {
      await docker(['push', '-q', refs[i]]);
    } finally {
      await docker(['image', 'rm', refs[i]]).catch(() => undefined);
    }
  }
  const times = await Promise.all(
    engines.map(async (engine) => {
      const engineTimes: number[] = [];
      for (const [i, image] of images.entries()) engineTimes.push(await engine.pull(refs[i], image));
      return engineTimes;
    }),
  );
  return Object.fromEntries(images.map((image, i) => [image, times.map((t) => t[i])]));
}
