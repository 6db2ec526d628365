import type Dockerode from 'dockerode';
import type { ContainerPausing, ContainerRef } from '../../../core/ports/backend';
import { BackendError, errorMessage } from '../../../common/errors';

/**
 * Lifecycle pause: the engine freezes the container. Which containers are paused on purpose is
 * kept here, so their health checks say healthy until they are thawed (a frozen container answers
 * no ping, and the engine reports it Paused: neither is a failure then).
 */
export class ContainerPauses implements ContainerPausing {
  private readonly paused = new Set<string>();

  constructor(private readonly docker: Dockerode) {}

  has(id: string): boolean {
    return this.paused.has(id);
  }

  forget(id: string): void {
    this.paused.delete(id);
  }

  async pause(ref: ContainerRef): Promise<void> {
    this.paused.add(ref.id);
    try {
      await this.docker.getContainer(ref.id).pause();
    } catch (err) {
      this.paused.delete(ref.id);
      throw new BackendError(`could not pause container ${ref.name}: ${errorMessage(err)}`);
    }
  }

  async resume(ref: ContainerRef): Promise<void> {
    try {
      await this.docker.getContainer(ref.id).unpause();
    } catch (err) {
      throw new BackendError(`could not resume container ${ref.name}: ${errorMessage(err)}`);
    }
    this.paused.delete(ref.id);
  }
}
