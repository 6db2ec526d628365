/**
 * The port of an engine's images (Docker's: backends/docker/images/dockerImageStore.ts): what it
 * holds, a pull from a registry, a removal. The core decides which image, when and whether (pulls
 * shared, allow-list, disk budget: core/images/); the engine only does. References are canonical
 * (core/images/imageRef.ts).
 */

/** One layer of an image: `key` names it with every layer under it (two images sharing a base share its keys). */
export interface ImageLayer {
  key: string;
  bytes: number;
}

/** An image the engine holds, under one reference. */
export interface HeldImage {
  ref: string;
  layers: ImageLayer[];
}

/** Credentials for one registry, the node's own (never a client's). */
export interface RegistryCredentials {
  username: string;
  password: string;
}

/**
 * A pull's progress as the engine tells it: the layers it fetches (not those it already has), their
 * sizes as the registry states them (compressed) and how much of them has arrived.
 */
export interface PullProgress {
  bytesTotal: number;
  bytesDone: number;
}

export type PullFailureReason =
  /** The registry has no such repository, tag or digest. */
  | 'not_found'
  /** The registry refused the credentials, or wants some the node has not. */
  | 'denied'
  /** The registry could not be reached, or stopped answering. */
  | 'unreachable'
  /** Anything else the engine said (a broken image, a full engine disk). */
  | 'failed';

/** A pull that did not finish: why, in the port's terms, and the engine's own words. */
export class PullFailure extends Error {
  constructor(
    readonly reason: PullFailureReason,
    message: string,
  ) {
    super(message);
    this.name = 'PullFailure';
  }
}

export interface ImageStore {
  /** The image `ref` names if the engine holds it, else null. */
  inspect(ref: string): Promise<HeldImage | null>;
  /** Every image the engine holds under a reference `wanted` accepts (a canonical one). */
  list(wanted: (ref: string) => boolean): Promise<HeldImage[]>;
  /**
   * Pulls `ref` with `credentials` (null: anonymously). Resolves once the engine holds it; rejects
   * with a PullFailure. `signal` ends it (the engine drops what it fetched of it).
   */
  pull(ref: string, credentials: RegistryCredentials | null, onProgress: (progress: PullProgress) => void, signal: AbortSignal): Promise<void>;
  /** Removes the reference (the image with it when nothing else names it). False: a container uses it, it stays. */
  remove(ref: string): Promise<boolean>;
}
