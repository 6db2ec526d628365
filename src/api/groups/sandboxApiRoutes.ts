/**
 * The Sandbox API of sandbox groups, served on each sandbox's own port (groupListeners.ts) and on the
 * broker's port under /groups/{group id}/sandboxes/{id} (groupRoutes.ts): actions, the terminal's
 * input and output, health. Thin routes over one core Sandbox.
 */
import type { Route, RouteContext, Router } from '../../http/router';
import type { GroupSandbox } from '../../core/groups/groupSandbox';
import { apiErrors } from '../../http/contract';
import { GROUP_CONTRACT } from './groupContract';
import { sendJson, sendJsonStreamed } from '../../http/httpJson';
import { parseActions, parseInputText } from './groupInput';

export function sandboxApiRouter(sandbox: GroupSandbox): Router {
  return { name: `sandbox ${sandbox.id}`, ...apiErrors(GROUP_CONTRACT), routes: sandboxApiRoutes('', () => sandbox) };
}

/** The Sandbox API's routes under `prefix`, each on the sandbox `sandboxOf` finds for the call. */
export function sandboxApiRoutes(prefix: string, sandboxOf: (ctx: RouteContext) => GroupSandbox): Route[] {
  return [
    {
      method: 'POST',
      path: `${prefix}/execute`,
      body: 'json',
      async handle(ctx) {
        sendJson(ctx.res, 200, { observations: await sandboxOf(ctx).execute(parseActions(ctx.body)) });
      },
    },
    {
      method: 'POST',
      path: `${prefix}/input`,
      body: 'json',
      handle(ctx) {
        sandboxOf(ctx).input(parseInputText(ctx.body));
        sendJson(ctx.res, 200, { status: 'success' });
      },
    },
    {
      method: 'GET',
      path: `${prefix}/output`,
      async handle(ctx) {
        await sendJsonStreamed(ctx.res, 200, { ...sandboxOf(ctx).output() });
      },
    },
    {
      method: 'GET',
      path: `${prefix}/health`,
      public: true,
      async handle(ctx) {
        const health = await sandboxOf(ctx).health();
        if (health.healthy) sendJson(ctx.res, 200, { status: 'healthy' });
        else sendJson(ctx.res, 503, { status: 'unhealthy', reason: health.reason ?? 'unknown' });
      },
    },
  ];
}
