/**
 * Which images a client may make this node pull (the operator's allow-list of registry/repository
 * globs) and with which credentials (the node's, per registry). A client's request never brings
 * credentials: the lifecycle's `image.auth` may only name the node's own.
 */
import picomatch from 'picomatch';
import type { RegistryCredentials } from '../ports/imageStore';
import type { ImageRef } from './imageRef';
import { CredentialsNotConfiguredError, ImageNotAllowedError } from './imageErrors';

export class ImageAccess {
  private readonly matches: (repository: string) => boolean;

  constructor(
    readonly patterns: readonly string[],
    private readonly credentials: Readonly<Record<string, RegistryCredentials>>,
  ) {
    // `*` stays within one path part, `**` crosses them; dot: a registry host has dots.
    this.matches = patterns.length === 0 ? () => false : picomatch([...patterns], { dot: true });
  }

  /** Whether any image may be pulled at all (BROKER_IMAGE_ALLOW names a pattern). */
  get enabled(): boolean {
    return this.patterns.length > 0;
  }

  allows(ref: ImageRef): boolean {
    return this.matches(ref.repository);
  }

  /** Throws the 403 that names the image and the patterns when it is not allowed. */
  check(ref: ImageRef): void {
    if (!this.allows(ref)) throw new ImageNotAllowedError(ref.canonical, ref.repository, this.patterns);
  }

  /** The node's credentials for the image's registry, or null (an anonymous pull). */
  credentialsFor(ref: ImageRef): RegistryCredentials | null {
    return this.credentials[ref.registry] ?? null;
  }

  /**
   * The lifecycle's `image.auth`: accepted only when it names the credentials the node has for that
   * registry (same username, and same password if one is given); the node pulls with its own either way.
   */
  checkNamed(ref: ImageRef, auth: { username?: string; password?: string }): void {
    const own = this.credentialsFor(ref);
    const named = own !== null && auth.username === own.username && (auth.password === undefined || auth.password === own.password);
    if (!named) throw new CredentialsNotConfiguredError(ref.registry);
  }
}
