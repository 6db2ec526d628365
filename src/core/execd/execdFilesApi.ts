/** execd's files and metrics, as the broker builds them from its backend and configuration. */
import type { SessionBackend } from '../ports/backend';
import type { BrokerConfig } from '../../config/config';
import { ExecdFiles } from './execdFiles';
import { ExecdMetrics } from './execdMetrics';

export interface ExecdFilesApi {
  files: ExecdFiles;
  metrics: ExecdMetrics;
}

export function createExecdFilesApi(backend: SessionBackend, config: BrokerConfig): ExecdFilesApi {
  return { files: new ExecdFiles(backend.files, config.execdFiles), metrics: new ExecdMetrics(backend.meter) };
}
