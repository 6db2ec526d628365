/**
 * The answers of images on demand (docs/images.md, Failure answers): each names the image, says
 * what the client or the operator can do, and is given before anything starts, or after what was
 * started is gone.
 */
import { BrokerError, brokerError } from '../../common/errors';

export class ImageNotAllowedError extends brokerError(
  'forbidden',
  'image_not_allowed',
  (image: string, repository: string, patterns: readonly string[]) =>
    patterns.length === 0
      ? `image '${image}' is not served: this node pulls no images (BROKER_IMAGE_ALLOW is empty) and no configured pool runs it`
      : `image '${image}' is not allowed: repository '${repository}' matches none of BROKER_IMAGE_ALLOW (${patterns.join(', ')})`,
) {}

export class ImageNotFoundError extends brokerError('not_found', 'image_not_found', (image: string, why: string) => `image '${image}' was not found in its registry (${why})`) {}

export class RegistryDeniedError extends brokerError(
  'forbidden',
  'registry_denied',
  (image: string, registry: string, why: string) => `registry '${registry}' refused this node's pull of '${image}' (${why}): its credentials are the operator's (BROKER_REGISTRY_AUTH)`,
) {}

/** The lifecycle's `image.auth` named credentials the node does not have for that registry. */
export class CredentialsNotConfiguredError extends brokerError(
  'forbidden',
  'registry_denied',
  (registry: string) => `image.auth names credentials this node has not configured for registry '${registry}': the node pulls with its own (BROKER_REGISTRY_AUTH), never a request's`,
) {}

/** 503 with Retry-After: nothing was started, a later attempt may succeed. */
function retryable(err: BrokerError, seconds: number): BrokerError {
  err.retryAfterSeconds = seconds;
  return err;
}

export function registryUnavailable(image: string, registry: string, why: string): BrokerError {
  return retryable(new BrokerError('unavailable', 'registry_unavailable', `registry '${registry}' could not be reached for '${image}' (${why}); retry later`), 5);
}

export function imageStillPulling(image: string, progress: string): BrokerError {
  return retryable(new BrokerError('unavailable', 'image_pulling', `image '${image}' is still being pulled (${progress}); the pull goes on: retry to get a session once it is done`), 5);
}

export function imageStarting(image: string): BrokerError {
  return retryable(new BrokerError('unavailable', 'image_starting', `the first container of '${image}' is still starting; it goes on: retry to get a session once it runs`), 2);
}

export function nodeFull(image: string, detail: string): BrokerError {
  return retryable(new BrokerError('unavailable', 'node_full', `no room on this node for a container of '${image}': ${detail}`), 5);
}

export function imageDiskFull(image: string, needBytes: number, budgetBytes: number, inUseBytes: number): BrokerError {
  return retryable(
    new BrokerError(
      'unavailable',
      'image_disk_full',
      `image '${image}' needs ${mib(needBytes)} and images in use hold ${mib(inUseBytes)} of the ${mib(budgetBytes)} budget (BROKER_IMAGE_DISK); it fits once a pool of them goes idle`,
    ),
    30,
  );
}

/** Larger than the whole budget: no retry helps (507, Insufficient Storage). */
export class ImageTooLargeError extends BrokerError {
  constructor(image: string, needBytes: number, budgetBytes: number) {
    super('insufficient_storage', 'image_too_large', `image '${image}' needs ${mib(needBytes)}, more than this node's whole image disk budget of ${mib(budgetBytes)} (BROKER_IMAGE_DISK)`);
  }
}

export class PullFailedError extends brokerError('backend', 'image_pull_failed', (image: string, why: string) => `the pull of '${image}' failed: ${why}`) {}

function mib(n: number): string {
  return `${(n / 1024 ** 2).toFixed(1)} MiB`;
}
