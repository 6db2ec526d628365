/**
 * execd's files and metrics, as the broker builds them from its configuration. Neither holds a
 * backend: each call reaches its sandbox through the sandbox's own (SandboxHandle.backend).
 */
import type { BrokerConfig } from '../../config/config';
import { ExecdFiles } from './execdFiles';
import { ExecdMetrics } from './execdMetrics';

export interface ExecdFilesApi {
  files: ExecdFiles;
  metrics: ExecdMetrics;
}

export function createExecdFilesApi(config: BrokerConfig): ExecdFilesApi {
  return { files: new ExecdFiles(config.execdFiles), metrics: new ExecdMetrics() };
}
