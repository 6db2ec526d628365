/**
 * execd's /metrics (one snapshot) and /metrics/watch (SSE, one `data:` event a second until the
 * client leaves) under `/sandboxes/{id}/execd`, from the sandbox's own cgroup or processes
 * (core/execd/execdMetrics.ts; each report's `scope` says which).
 */
import type { ExecdMetrics } from '../../core/execd/execdMetrics';
import type { SandboxDirectory } from '../../core/sandbox/sandboxDirectory';
import { errorMessage } from '../../common/errors';
import { sendJson } from '../../http/httpJson';
import type { Router } from '../../http/router';
import { openEventStream } from '../../http/sse';
import { apiErrors, served } from '../../http/contract';
import { EXECD_FILES_CONTRACT } from './execdContract';

const R = EXECD_FILES_CONTRACT.routes;

export function execdMetricsRouter(directory: SandboxDirectory, metrics: ExecdMetrics): Router {
  return {
    name: 'execd metrics',
    ...apiErrors(EXECD_FILES_CONTRACT),
    routes: [
      served(R.metrics, async ({ res, params }) => sendJson(res, 200, await metrics.snapshot(directory.resolve(params.id)))),
      served(R.watchMetrics, async ({ res, params }) => {
        const handle = directory.resolve(params.id); // an unknown id is a 404 before the stream opens
        const stream = openEventStream(res);
        try {
          await metrics.watch(handle, stream.signal, async (report) => {
            // Re-resolved each second: a sandbox that ended ends its watch (the catch below says why).
            directory.resolve(handle.id);
            if (!stream.send({ data: JSON.stringify(report) })) await stream.drained();
          });
        } catch (err) {
          stream.send({ event: 'error', data: JSON.stringify({ code: 'RUNTIME_ERROR', message: errorMessage(err) }) });
        } finally {
          stream.close();
        }
      }),
    ],
  };
}
