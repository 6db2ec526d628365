/**
 * Container removals that must not be lost. A removal that fails (the engine down or restarting)
 * is kept and retried before every container start, with the health checks and at close, so a
 * daemon restart leaves no container of the old generation behind. A create abandoned at its
 * deadline may still be carried out once the engine moves again: its name is retried too.
 */
import type Dockerode from 'dockerode';
import { errorMessage } from '../../../common/errors';
import { logger } from '../../../common/logger';

/**
 * How long one container removal may wait for the engine. A stuck engine answers nothing; past
 * this the removal counts as failed and is retried, so no caller waits for good.
 */
const REMOVE_CALL_TIMEOUT_MS = 60_000;
/**
 * A create abandoned at its deadline may still be carried out once the engine moves again, after a
 * removal by name already found nothing. So its name is retried until the engine has said "no such
 * container" for this long: a queued request is served within seconds of the engine answering.
 */
const ABANDONED_NAME_GRACE_MS = 60_000;

export class ContainerRemovals {
  /** Ids whose removal failed (the pool forgets a failed container once it asked for its removal). */
  private readonly unremoved = new Set<string>();
  /**
   * Names of creates abandoned at their deadline, each with when the engine first said it has no
   * such container (null: not yet). Dropped ABANDONED_NAME_GRACE_MS after that, or once removed.
   */
  private readonly abandonedNames = new Map<string, number | null>();
  /** A retry started by retryInBackground is under way. */
  private retrying = false;

  constructor(private readonly docker: Dockerode) {}

  /** A container whose start passed its deadline: the engine is likely stuck, remove it later. */
  removeLater(id: string): void {
    this.unremoved.add(id);
  }

  /** A create abandoned at its deadline: remove it by name should the engine carry it out later. */
  abandonName(name: string): void {
    this.abandonedNames.set(name, null);
  }

  /** Retries every failed removal; resolves when each was tried once. */
  async retry(): Promise<void> {
    const byId = [...this.unremoved].map((id) => this.forceRemove(id));
    const byName = [...this.abandonedNames.keys()].map((name) => this.removeAbandoned(name));
    await Promise.all([...byId, ...byName]);
  }

  /**
   * Retries in the background, one retry at a time (the health checks call it: a pool whose
   * replacements all started has no next start to retry before).
   */
  retryInBackground(): void {
    if (this.unremoved.size + this.abandonedNames.size === 0 || this.retrying) return;
    this.retrying = true;
    void this.retry().finally(() => (this.retrying = false));
  }

  /** Gone (or 404) drops it from the retries; any other outcome keeps it there. */
  async forceRemove(id: string): Promise<void> {
    try {
      await this.removeCall(id);
      this.unremoved.delete(id);
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      // 409: a removal already in progress; a retry then finds it gone (404), or finishes it.
      if (status === 404) this.unremoved.delete(id);
      else this.unremoved.add(id);
      if (status !== 404 && status !== 409) logger.warn({ id, err: errorMessage(err) }, 'container removal failed');
    }
  }

  /** Removes a container by the name of a create abandoned at its deadline (abandonedNames). */
  private async removeAbandoned(name: string): Promise<void> {
    try {
      await this.removeCall(name);
      this.abandonedNames.delete(name);
      logger.info({ container: name }, 'removed a container the engine created after its start was abandoned');
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) return; // the engine did not answer: later
      const firstMissing = this.abandonedNames.get(name) ?? Date.now();
      if (Date.now() - firstMissing >= ABANDONED_NAME_GRACE_MS) this.abandonedNames.delete(name);
      else this.abandonedNames.set(name, firstMissing);
    }
  }

  /** One forced removal (volumes too) by id or name, given up after REMOVE_CALL_TIMEOUT_MS. */
  private removeCall(idOrName: string): Promise<unknown> {
    return this.docker.getContainer(idOrName).remove({ force: true, v: true, abortSignal: AbortSignal.timeout(REMOVE_CALL_TIMEOUT_MS) });
  }
}
