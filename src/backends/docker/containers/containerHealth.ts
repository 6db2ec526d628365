/**
 * One health check of a Docker container: the engine's view (stopped, paused) when it answers in
 * time, then a ping of the container's control shell. A missed ping alone is a slow container, not
 * a dead one, until its control lane has been silent for the stall timeout.
 */
import type Dockerode from 'dockerode';
import type { ContainerHealth, ContainerRef } from '../../../core/ports/backend';
import type { ControlShell } from '../control/controlShell';
import { errorMessage } from '../../../common/errors';
import { logger } from '../../../common/logger';

/**
 * How long a health check waits for the engine's `inspect`. Past it the engine's silence says
 * nothing about the container (a stuck or swamped engine), and the check goes on with the
 * container's own control lane alone: the monitor neither hangs with the engine nor replaces
 * containers that still serve leases.
 */
const INSPECT_TIMEOUT_MS = 10_000;

export interface HealthLimits {
  pingTimeoutMs: number;
  stallTimeoutMs: number;
}

export async function checkContainerHealth(
  docker: Dockerode,
  ref: ContainerRef,
  /** Looked up after the inspect: the container may have been removed meanwhile. */
  controlOf: () => ControlShell | undefined,
  limits: HealthLimits,
): Promise<ContainerHealth> {
  const deadline = AbortSignal.timeout(INSPECT_TIMEOUT_MS);
  let state: Dockerode.ContainerInspectInfo['State'] | null = null;
  try {
    state = (await docker.getContainer(ref.id).inspect({ abortSignal: deadline })).State;
  } catch (err) {
    if (!deadline.aborted) return { healthy: false, reason: `inspect failed: ${errorMessage(err)}` };
    logger.warn({ container: ref.name }, `the engine did not answer an inspect within ${INSPECT_TIMEOUT_MS / 1000} s: checking the container's control lane alone`);
  }
  // A command killed by the memory limit sets OOMKilled while the container still runs; only a
  // container that stopped is lost (its sessions' own leases learn of their kill separately).
  // OOMKilled stays set once any process in the container was OOM-killed, so it is only a hint.
  if (state && !state.Running) {
    const hint = state.OOMKilled ? '; a process in it was OOM-killed' : '';
    return { healthy: false, reason: `container is ${state.Status} (exit code ${state.ExitCode}${hint})` };
  }
  if (state?.Paused) return { healthy: false, reason: 'container is paused' };
  const control = controlOf();
  if (!control?.alive) return { healthy: false, reason: state ? 'control shell is gone' : 'control shell is gone (and the engine does not answer)' };
  try {
    await control.ping(limits.pingTimeoutMs);
  } catch {
    // The engine says it runs (or says nothing): a missed ping alone is a starved container (a busy
    // host, a kill scanning a fork burst ahead of the ping), not a dead one, until the lane is
    // silent this long.
    const silentMs = control.silentForMs;
    if (silentMs < limits.stallTimeoutMs) {
      logger.warn({ container: ref.name, silentMs }, `container missed a ping (${limits.pingTimeoutMs} ms): slow, not replaced yet`);
      return { healthy: true };
    }
    return { healthy: false, reason: `container did not answer for ${Math.round(silentMs / 1000)} s (pings time out after ${limits.pingTimeoutMs} ms)` };
  }
  return { healthy: true };
}
