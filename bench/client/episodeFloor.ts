/**
 * The episode floor: N loops, each holding one bash on the backend's own transport (local:
 * pipes to `bash --norc --noprofile --noediting -i`, spawned as the local backend spawns it; docker:
 * the broker's named pipes into the container, opened by the broker's own DockerBackend), and per
 * episode: `exec -c` a fresh bash in place with the broker's own recycle line (shellRecycle.ts: its
 * fd and signal resets, a here-string rc file that announces the fresh bash), then 5 x `true`, one
 * round trip each. No HTTP, no pool, no kill pass, no working directory: what an episode costs this
 * machine's kernel, the fresh bash being the bulk of it.
 */
import fs from 'node:fs/promises';
import type { ContainerRef, SessionBackend, ShellProcess } from '../../src/core/ports/backend';
import { FRESH_ANSWER, recycleExecLine } from '../../src/backends/shellRecycle';
import { EPISODE_FLOOR_DEPLOYMENT, type EpisodeFloorResult } from '../protocol';
import { forkWindow, idleForkRate } from '../lib/forks';
import { processCpuWindow, sessionCpuMeter, sessionCpuOf, windowDelta } from '../lib/sessionCpu';
import { mapLimit, nowMs, summarize } from '../lib/stats';
import { runClosedLoop, type Op } from './drive';
import { makeBackend } from './raw';

const COMMANDS_PER_EPISODE = 5;
const ROUND_TRIP_TIMEOUT_MS = 30_000;
/** The fresh bash's rc: no prompts (they would go to stderr, which the floor ignores anyway). */
const RESTORE = 'PS1=;PS2=';

/** One shell on its raw transport: a line written, a marker awaited on stdout. */
class RawLoop {
  private buffer = '';
  private waiter: { marker: string | RegExp; resolve: (seen: string) => void; reject: (err: Error) => void } | null = null;
  private dead: string | null = null;
  bash = '';

  constructor(readonly shell: ShellProcess) {
    shell.setListener({
      onData: (stream, chunk) => {
        if (stream !== 'stdout' || !this.waiter) return;
        this.buffer += chunk.toString('latin1');
        const { marker, resolve } = this.waiter;
        if (typeof marker === 'string' ? this.buffer.includes(marker) : marker.test(this.buffer)) {
          this.waiter = null;
          resolve(this.buffer);
        }
      },
      onExit: (e) => {
        this.dead = e.reason;
        this.waiter?.reject(new Error(`floor shell ended: ${e.reason}`));
        this.waiter = null;
      },
    });
  }

  /** Resolves with what stdout carried up to the marker. */
  roundTrip(line: string, marker: string | RegExp): Promise<string> {
    if (this.dead) return Promise.reject(new Error(`floor shell ended: ${this.dead}`));
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = null;
        reject(new Error(`floor shell: no ${String(marker)} within ${ROUND_TRIP_TIMEOUT_MS} ms`));
      }, ROUND_TRIP_TIMEOUT_MS);
      this.buffer = '';
      this.waiter = {
        marker,
        resolve: (seen) => (clearTimeout(timer), resolve(seen)),
        reject: (err) => (clearTimeout(timer), reject(err)),
      };
      this.shell.write(line);
    });
  }

  /** bash's absolute path (the exec line must not depend on PATH), asked once. */
  async learnBash(): Promise<void> {
    const marker = /\n__bkbash=(\S+)\n/;
    const seen = marker.exec(await this.roundTrip("PS1=;PS2=;builtin printf '\\n__bkbash=%s\\n' \"$BASH\"\n", marker))?.[1] ?? '';
    if (!seen.startsWith('/')) throw new Error(`floor shell: bash path '${seen}'`);
    this.bash = seen;
  }
}

interface FloorDetail {
  execMs: number;
  commandMs: number[];
}

/** The floor's shells, opened once and run in several windows (held by the client process between jobs). */
export interface OpenFloor {
  kind: 'local' | 'docker';
  concurrency: number;
  backend: SessionBackend;
  root: string | null;
  refs: ContainerRef[];
  loops: RawLoop[];
  openMs: number;
}

/** `concurrency` raw shells in ceil(concurrency / perContainer) containers (local: directories). */
export async function openEpisodeFloor(kind: 'local' | 'docker', image: string, concurrency: number, perContainer: number): Promise<OpenFloor> {
  const t0 = nowMs();
  const { backend, root } = await makeBackend(kind, 'default', image, EPISODE_FLOOR_DEPLOYMENT);
  const floor: OpenFloor = { kind, concurrency, backend, root, refs: [], loops: [], openMs: 0 };
  try {
    const containers = Math.ceil(concurrency / perContainer);
    await mapLimit(Array.from({ length: containers }, (_, i) => i), 8, async (i) => {
      const ref = await backend.containers.start({ kind: 'pool', index: i });
      floor.refs.push(ref);
      await backend.connectContainer?.(ref);
    });
    const slots = Array.from({ length: concurrency }, (_, i) => ({ ref: floor.refs[Math.floor(i / perContainer)], slotId: `episode-floor-${i}` }));
    await mapLimit(slots, 16, async ({ ref, slotId }) => {
      const loop = new RawLoop(await backend.openShell(ref, { slotId }));
      floor.loops.push(loop);
      await loop.learnBash();
    });
  } catch (err) {
    await closeEpisodeFloor(floor);
    throw err;
  }
  floor.openMs = nowMs() - t0;
  return floor;
}

/** One closed-loop window of floor episodes on shells already open. */
export async function runEpisodeFloor(floor: OpenFloor, rampMs: number, durationMs: number): Promise<EpisodeFloorResult> {
  const { kind, backend, refs, loops } = floor;
  const episode = (loop: RawLoop): Op<FloorDetail> => async () => {
    const e0 = nowMs();
    await loop.roundTrip(recycleExecLine('/', loop.bash, RESTORE), FRESH_ANSWER);
    const execMs = nowMs() - e0;
    const commandMs: number[] = [];
    for (let i = 1; i <= COMMANDS_PER_EPISODE; i++) {
      const c0 = nowMs();
      await loop.roundTrip(`true;builtin echo __t${i}\n`, `__t${i}\n`);
      commandMs.push(nowMs() - c0);
    }
    return { execMs, commandMs };
  };
  const idlePerSec = await idleForkRate(1000);
  const window = forkWindow(rampMs, durationMs);
  const meter = sessionCpuMeter(kind === 'docker' ? { containerIds: refs.map((r) => r.id) } : { localInstance: (backend as { instance?: string }).instance ?? '' });
  const cpuWindow = meter ? windowDelta(rampMs, durationMs, () => meter.read()) : null;
  const processWindow = processCpuWindow(rampMs, durationMs);
  const loop = await runClosedLoop(loops.map(episode), { rampMs, durationMs, drainMs: 30_000 });
  const forks = window.done(loop.completed, idlePerSec);
  const sessionCpu = sessionCpuOf(meter, cpuWindow, loop.completed);
  const processCpu = processWindow.done(loop.completed);
  const { details, ...result } = loop;
  return {
    ...result,
    exec: summarize(details.map((d) => d.execMs)),
    command: summarize(details.flatMap((d) => d.commandMs)),
    sessions: loops.length,
    openMs: floor.openMs,
    forks,
    sessionCpu,
    ...(processCpu ? { processCpu } : {}),
  };
}

/** Opens the floor, runs one window, closes it. */
export async function episodeFloor(
  kind: 'local' | 'docker',
  image: string,
  concurrency: number,
  perContainer: number,
  rampMs: number,
  durationMs: number,
): Promise<EpisodeFloorResult> {
  const floor = await openEpisodeFloor(kind, image, concurrency, perContainer);
  try {
    return await runEpisodeFloor(floor, rampMs, durationMs);
  } finally {
    await closeEpisodeFloor(floor);
  }
}

export async function closeEpisodeFloor(floor: OpenFloor): Promise<void> {
  await closeAll(floor.backend, floor.refs, floor.loops, floor.root);
}

async function closeAll(backend: SessionBackend, refs: ContainerRef[], loops: RawLoop[], root: string | null): Promise<void> {
  await Promise.all(loops.map((l) => l.shell.close().catch(() => undefined)));
  await mapLimit(refs, 8, (ref) => backend.removeContainer(ref).catch(() => undefined));
  await backend.close();
  if (root) await fs.rm(root, { recursive: true, force: true });
}
