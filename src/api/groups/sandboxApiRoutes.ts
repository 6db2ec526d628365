/**
 * The Sandbox API of sandbox groups, served on each sandbox's own port (groupListeners.ts): actions, the
 * terminal's input and output, health. A thin router over one core Sandbox.
 */
import type { Router } from '../../http/router';
import type { Sandbox } from '../../core/groups/sandbox';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendJson, sendJsonStreamed } from '../../http/httpJson';
import { parseActions, parseInputText } from './groupInput';

export function sandboxApiRouter(sandbox: Sandbox): Router {
  return {
    name: `sandbox ${sandbox.id}`,
    errors: poolErrorFormat,
    routes: [
      {
        method: 'POST',
        path: '/execute',
        body: 'json',
        async handle({ body, res }) {
          sendJson(res, 200, { observations: await sandbox.execute(parseActions(body)) });
        },
      },
      {
        method: 'POST',
        path: '/input',
        body: 'json',
        handle({ body, res }) {
          sandbox.input(parseInputText(body));
          sendJson(res, 200, { status: 'success' });
        },
      },
      {
        method: 'GET',
        path: '/output',
        async handle({ res }) {
          await sendJsonStreamed(res, 200, { ...sandbox.output() });
        },
      },
      {
        method: 'GET',
        path: '/health',
        public: true,
        async handle({ res }) {
          const health = await sandbox.health();
          if (health.healthy) sendJson(res, 200, { status: 'healthy' });
          else sendJson(res, 503, { status: 'unhealthy', reason: health.reason ?? 'unknown' });
        },
      },
    ],
  };
}
