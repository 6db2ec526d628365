/**
 * The pool API's acquires that name an image (docs/images.md): served by the pool that runs it, or
 * by its pool made on demand, with `image_cost` in the answer. Same rules as any acquire: a
 * request_id's acquire outlives its client, one without gives its lease back when its client left.
 */
import type { ServerResponse } from 'node:http';
import type { ImagePools, Served } from '../../core/images/imagePools';
import type { RequestIds } from '../../core/pool/requestIds';
import type { AcquireResult } from '../../core/pool/poolTypes';
import { NotImplementedError } from '../../common/errors';
import { clientGone, ifUndelivered } from '../../http/clientGone';
import { sendJsonStreamed } from '../../http/httpJson';
import type { AcquireInput } from './poolInput';
import type { Acquired, GroupAcquired } from './poolContract';

/** The acquire's answer without its cost (poolRoutes.ts' acquireResponse, given: this file is below the routes). */
export type AcquireShape = (result: AcquireResult) => Acquired;

function imagesOf(images: ImagePools | null, image: string): ImagePools {
  if (!images) throw new NotImplementedError(`'image' (${image}) is not served by this broker`);
  return images;
}

const costOf = (served: Served<unknown>) => ({ kind: served.cost.kind, wait_ms: served.cost.waitMs });

export async function acquireByImage(images: ImagePools | null, input: AcquireInput & { image: string }, res: ServerResponse, requestIds: RequestIds, shape: AcquireShape): Promise<void> {
  const pools = imagesOf(images, input.image);
  const run = (signal?: AbortSignal): Promise<Served<AcquireResult>> =>
    pools.serve(input.image, { acquireTimeoutMs: input.acquireTimeoutMs, signal }, (pool, acquireTimeoutMs) => pool.acquire({ ...input, acquireTimeoutMs, signal }));
  const served = input.requestId ? await requestIds.run(`a:${input.requestId}`, input.fingerprint(), 'acquire', () => run()) : await run(clientGone(res));
  if (!input.requestId) ifUndelivered(res, () => served.pool.release(served.value.sessionId));
  await sendJsonStreamed(res, 200, { ...shape(served.value), image_cost: costOf(served) });
}

export async function acquireGroupByImage(
  images: ImagePools | null,
  input: AcquireInput & { image: string },
  group: { n: number; spread: boolean },
  res: ServerResponse,
  requestIds: RequestIds,
  shape: AcquireShape,
): Promise<void> {
  const pools = imagesOf(images, input.image);
  const run = (signal?: AbortSignal): Promise<Served<AcquireResult[]>> =>
    pools.serve(input.image, { acquireTimeoutMs: input.acquireTimeoutMs, signal, sessions: group.n, spread: group.spread }, (pool, acquireTimeoutMs) =>
      pool.acquireGroup({ ...input, ...group, acquireTimeoutMs, signal }),
    );
  const served = input.requestId ? await requestIds.run(`g:${input.requestId}`, input.fingerprint(), 'acquire_group', () => run()) : await run(clientGone(res));
  if (!input.requestId) ifUndelivered(res, () => served.value.forEach((r) => served.pool.release(r.sessionId)));
  const answer: GroupAcquired = {
    sessions: served.value.map((r) => ({ ...shape(r), container: r.containerIndex })),
    image_cost: costOf(served),
  };
  await sendJsonStreamed(res, 200, answer);
}
