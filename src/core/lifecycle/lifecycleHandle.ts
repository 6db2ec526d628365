/**
 * A lifecycle sandbox as the per-sandbox APIs (execd) act on it: a running one's container and
 * working directory (a warm lease's slot, or a container of its own), or the error their caller must
 * see for one that is paused, changing state, failed or terminated.
 */
import type { SessionBackend } from '../ports/backend';
import type { SandboxHandle } from '../sandbox/sandboxHandle';
import { SandboxStateError, type SandboxRecord } from './sandboxRecord';
import { BrokerError } from '../../common/errors';

/** `containersIsolate`: a container of its own isolates its sandbox (Docker); `backend`: where its own container is. */
export function lifecycleHandle(record: SandboxRecord, containersIsolate: boolean, backend: SessionBackend): SandboxHandle {
  const id = record.id;
  if (record.state === 'Paused' || record.busy) throw new SandboxStateError(record, 'run anything in it (resume it first)');
  if (record.state === 'Failed') throw new BrokerError('gone', 'sandbox_failed', `Sandbox ${id} failed (${record.message}); create a new one`);
  // Its container is gone or handed on: its execd is no more there than an unknown id's (404).
  if (record.state === 'Terminated') throw new BrokerError('not_found', 'sandbox_terminated', `Sandbox ${id} is terminated (${record.message})`);
  const confined = !containersIsolate;
  const env = Object.keys(record.spec.env).length > 0 ? record.spec.env : undefined;
  if (record.place.kind === 'pool') {
    const site = record.place.entry.pool.site(record.place.taken.sessionId);
    // A whole container is this sandbox's alone; so is an isolated session's view of a shared one
    // (an image's pool). Unisolated, a shared container's sandbox stays confined as a lease is.
    const shared = !record.place.entry.freshContainer && record.place.entry.sessionsPerContainer > 1;
    const isolation = shared ? record.place.entry.pool.isolation() : null;
    const ownView = !shared || (isolation !== null && isolation.enabled && isolation.unisolatedContainers === 0);
    return { ...site, id, confined: ownView ? confined : site.confined, env, ownShell: record.place.taken.shell() ?? undefined };
  }
  return { id, slotId: `sbx-${id}`, container: record.place.container, root: record.place.workdir, confined, env, ended: record.ending.signal, backend };
}
