/**
 * The client process: forked by run.ts, it runs one job at a time and reports JSON back over IPC.
 * It drives the broker, the no-op server and the raw sessions with the same machinery (drive.ts).
 */
import type { Job, JobReply, JobRequest, RawTransport } from '../protocol';
import { runClosedLoop, runInterleaved, runSequential } from './drive';
import { openRunners, type Runners } from './targets';
import { openRaw, type RawSet } from './raw';
import { acquireFree, episodes, episodesOpen, flood, releaseToAvailable } from './poolJobs';
import { closeEpisodeFloor, episodeFloor, openEpisodeFloor, runEpisodeFloor, type OpenFloor } from './episodeFloor';
import { dockerStartFloor } from './dockerStart';
import { nowMs } from '../lib/stats';
import { wsEcho, wsExecCompare, wsFlood } from './workspaceJobs';

/** Open raw sessions by transport (rawOpen opens, rawClose closes them all). */
const rawSets = new Map<RawTransport, RawSet>();

/** The episode floor held open between its windows (episodeFloorOpen .. episodeFloorClose). */
let heldFloor: OpenFloor | null = null;

async function closeRaw(): Promise<void> {
  const sets = [...rawSets.values()];
  rawSets.clear();
  const floor = heldFloor;
  heldFloor = null;
  await Promise.all([...sets.map((s) => s.close()), floor ? closeEpisodeFloor(floor) : undefined]);
}

async function run(job: Job): Promise<unknown> {
  switch (job.kind) {
    case 'seq': {
      const runners = await openRunners(job.target, 1, job.command, job.expectBytes, rawSets);
      try {
        return await runSequential(runners.ops[0], job.n, job.warmup, job.maxMs);
      } finally {
        await runners.close();
      }
    }
    case 'seqCompare': {
      const all: Runners[] = [];
      try {
        for (const target of job.targets) all.push(await openRunners(target, 1, job.command, job.expectBytes, rawSets));
        return await runInterleaved(
          all.map((r) => r.ops[0]),
          job.n,
          job.warmup,
          job.maxMs,
        );
      } finally {
        await Promise.all(all.map((r) => r.close()));
      }
    }
    case 'conc': {
      const runners = await openRunners(job.target, job.concurrency, job.command, job.expectBytes, rawSets);
      try {
        return await runClosedLoop(runners.ops, { rampMs: job.rampMs, durationMs: job.durationMs, drainMs: 30_000 });
      } finally {
        await runners.close();
      }
    }
    case 'rawOpen': {
      await rawSets.get(job.transport)?.close();
      rawSets.delete(job.transport);
      const t0 = nowMs();
      const set = await openRaw(job.backend, job.transport, job.containers, job.perContainer, job.image, job.concurrency);
      rawSets.set(job.transport, set);
      return { sessions: set.sessions.length, openMs: nowMs() - t0 };
    }
    case 'rawClose':
      await closeRaw();
      return {};
    case 'rawRespawn': {
      const set = rawSets.get('default');
      if (!set) throw new Error('rawRespawn needs an open raw set');
      return runSequential(() => set.respawn(0), job.n, 1, job.maxMs);
    }
    case 'acquireFree':
      return acquireFree(job.url, job.poolSize, job.rounds, job.maxMs);
    case 'episodes':
      return episodes(job.url, job.concurrency, job.rampMs, job.durationMs, job.drainMs, job.countForks, job.sessionCgroups, job.brokerPid, job.variant);
    case 'episodesOpen':
      return episodesOpen(job.url, job.ratePerSec, job.arrivals, job.durationMs, job.maxOutstanding, job.drainMs);
    case 'episodeFloor':
      return episodeFloor(job.backend, job.image, job.concurrency, job.perContainer, job.rampMs, job.durationMs);
    case 'episodeFloorOpen': {
      if (heldFloor) await closeEpisodeFloor(heldFloor);
      heldFloor = null;
      heldFloor = await openEpisodeFloor(job.backend, job.image, job.concurrency, job.perContainer);
      return { sessions: heldFloor.loops.length, openMs: heldFloor.openMs };
    }
    case 'episodeFloorRun':
      if (!heldFloor) throw new Error('episodeFloorRun: no episode floor is open');
      return runEpisodeFloor(heldFloor, job.rampMs, job.durationMs);
    case 'episodeFloorClose': {
      const floor = heldFloor;
      heldFloor = null;
      if (floor) await closeEpisodeFloor(floor);
      return null;
    }
    case 'releaseToAvailable':
      return releaseToAvailable(job.url, job.n, job.maxMs);
    case 'flood':
      return flood(job.url, job.sessions, job.bytesPerSession, job.timeoutS);
    case 'wsExecCompare':
      return wsExecCompare(job.url, job.backend, job.n, job.warmup, job.maxMs);
    case 'wsEcho':
      return wsEcho(job.url, job.n, job.warmup, job.maxMs);
    case 'wsFlood':
      return wsFlood(job.url, job.command, job.floodBytes, job.viewerKind, job.counts, job.timeoutS);
    case 'dockerStart':
      return dockerStartFloor(job.image, job.count, job.concurrency);
  }
}

process.on('message', (message: JobRequest) => {
  run(message.job).then(
    (result) => reply({ id: message.id, ok: true, result }),
    (err: Error) => reply({ id: message.id, ok: false, error: err.stack ?? String(err) }),
  );
});

function reply(r: JobReply): void {
  process.send?.(r);
}

// The orchestrator went away (or asked us to stop): close raw shells and containers, then leave.
process.on('disconnect', () => {
  void closeRaw()
    .catch(() => undefined)
    .finally(() => process.exit(0));
});
process.send?.({ id: 0, ok: true, result: 'ready' });
