/**
 * Whether a lifecycle create of an image can be a lease of that image's pool, a shared container's
 * isolated session (docs/images.md), rather than a container of its own.
 */
import type { ImagePools } from '../images/imagePools';
import type { ImageAccess } from '../images/imageAccess';
import { parseImageRef, type ImageRef } from '../images/imageRef';
import type { SandboxSpec } from './sandboxRecord';
import { IDLE_ENTRYPOINTS } from './sandboxSnapshots';

/** Images on demand: their pools, and which images the node pulls. */
export interface SandboxImages {
  pools: ImagePools;
  access: ImageAccess;
}

/**
 * The image's reference when a shared container of its pool can serve the create (docs/images.md):
 * on-demand images on, the image allowed, no limits of its own, an entry process that only idles.
 * Null: it takes a dedicated container, as it always did.
 */
export function sharedImageOf(images: SandboxImages | undefined, spec: SandboxSpec, poolRef: string | null): ImageRef | null {
  if (!images?.pools.onDemand || poolRef !== null || spec.cpus !== null || spec.memoryBytes !== null) return null;
  if (!IDLE_ENTRYPOINTS.includes(spec.entrypoint.join(' '))) return null;
  let ref: ImageRef;
  try {
    ref = parseImageRef(spec.image);
  } catch {
    return null;
  }
  const pulled = images.access.allows(ref);
  if (!pulled && !images.pools.configuredFor(ref)) return null;
  // Credentials mean something only for an image this node pulls: for a configured pool's, the create answers 501.
  if (spec.imageAuth && !pulled) return null;
  if (spec.imageAuth) images.access.checkNamed(ref, spec.imageAuth);
  return ref;
}
