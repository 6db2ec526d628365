/**
 * A broker's images on demand (docs/images.md), put together: the engine's images (Docker only),
 * the pulls and their disk, the pools made per image (each a SessionPool over a backend of
 * that image, like a BROKER_POOLS pool's) and the warm-ups, with their report for GET /images,
 * /health and /metrics.
 */
import { createHash } from 'node:crypto';
import type { BrokerConfig } from './config/config';
import type { SessionBackend } from './core/ports/backend';
import { SessionPool, type PoolOptions } from './core/pool/pool';
import type { PoolRegistry } from './core/pool/poolRegistry';
import type { PoolObserver } from './core/ports/observer';
import { ImageAccess } from './core/images/imageAccess';
import { ImageDisk } from './core/images/imageDisk';
import { ImagePulls } from './core/images/imagePulls';
import { ImagePools, type ImagePoolFactory } from './core/images/imagePools';
import { ImageWarmups } from './core/images/imageWarmups';
import { imagesReport, type ImagesReport } from './core/images/imageViews';
import type { ImageMetrics } from './metrics/imageMetrics';
import { logger } from './common/logger';

export interface BrokerImages {
  pools: ImagePools;
  pulls: ImagePulls | null;
  warmups: ImageWarmups;
  access: ImageAccess;
  report(): ImagesReport;
  /** Takes on the allowed images the engine holds (before the first acquire). */
  start(): Promise<void>;
}

/** An image pool's deployment: the broker's, and a hash of the image (its containers' labels and names stay short). */
export function imageDeployment(deployment: string, image: string): string {
  return `${deployment}.i-${createHash('sha256').update(image).digest('hex').slice(0, 12)}`;
}

export function createBrokerImages(
  config: BrokerConfig,
  backend: SessionBackend,
  configured: PoolRegistry,
  poolOptions: Omit<PoolOptions, 'containers' | 'sessionsPerContainer'>,
  observer: PoolObserver,
  metrics: ImageMetrics,
): BrokerImages {
  const settings = config.images;
  const createdAtMs = Date.now();
  const access = new ImageAccess(settings.allow, settings.credentials);
  // Where the backend has an engine's images (Docker); elsewhere images are names only.
  const engine = backend.images ?? null;
  const store = engine?.store ?? null;
  const sessionsPerContainer = settings.sessionsPerContainer;
  const make: ImagePoolFactory | null = engine
    ? (image) => {
        const poolBackend = engine.poolBackend(image, imageDeployment(config.docker.deployment, image));
        const pool = new SessionPool(
          poolBackend,
          { ...poolOptions, containers: 0, sessionsPerContainer, cleanupWorkers: Math.min(poolOptions.cleanupWorkers, settings.maxContainersPerImage * sessionsPerContainer) },
          observer,
        );
        return { pool, backend: poolBackend };
      }
    : null;
  // The pulls ask the pools what is pinned; the pools are made with the pulls.
  let pinned: () => Set<string> = () => new Set();
  const pulls = store ? new ImagePulls(store, new ImageDisk(settings.diskBytes), access, settings, () => pinned(), metrics) : null;
  const pools = new ImagePools({
    configured,
    access,
    pulls,
    make,
    limits: { ...settings, acquireTimeoutMs: config.acquireTimeoutMs },
    events: metrics,
  });
  pinned = () => pools.pinned();
  const warmups = new ImageWarmups(pools, pulls, access, sessionsPerContainer, settings.maxContainersPerImage);
  const report = (): ImagesReport => imagesReport(pools, pulls, warmups, metrics.evictions);
  metrics.attach(report);
  return {
    pools,
    pulls,
    warmups,
    access,
    report,
    start: async () => {
      if (engine) {
        const swept = await engine.sweepPools(config.docker.deployment, createdAtMs);
        if (swept > 0) logger.info({ removed: swept }, 'removed image pool containers an earlier broker left');
      }
      if (pulls && access.enabled) await pulls.start();
    },
  };
}
