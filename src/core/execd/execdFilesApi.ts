/**
 * execd's files and metrics, as the broker builds them from its configuration. Neither holds a
 * backend: each call reaches its sandbox through the sandbox's own (SandboxHandle.backend).
 */
import { ExecdFiles, type ExecdFileLimits } from './execdFiles';
import { ExecdMetrics } from './execdMetrics';

export interface ExecdFilesApi {
  files: ExecdFiles;
  metrics: ExecdMetrics;
}

/** `config`: the broker's configuration, of which this reads execd's file limits. */
export function createExecdFilesApi(config: { execdFiles: ExecdFileLimits }): ExecdFilesApi {
  return { files: new ExecdFiles(config.execdFiles), metrics: new ExecdMetrics() };
}
