/**
 * The sandbox groups' API on the broker's port: a group, its sandboxes, and each sandbox's Sandbox
 * API again under /groups/{group id}/sandboxes/{id} (its own port serves it too). A thin router over
 * core/groups, each group route served from its contract (groupContract.ts); errors in the pool API's
 * `{"detail", "code"}` format.
 */
import type { Route, Router } from '../../http/router';
import type { GroupService } from '../../core/groups/groupService';
import { sendJson } from '../../http/httpJson';
import { publicAddress } from '../../http/publicAddress';
import { parseGroupStart, parseSandboxStart, parseSandboxStop } from './groupInput';
import { apiErrors, served, type RouteContract } from '../../http/contract';
import { sandboxApiRoutes } from './sandboxApiRoutes';
import { GROUP_CONTRACT, SANDBOX_API_PREFIX } from './groupContract';

const R = GROUP_CONTRACT.routes;

/**
 * Where a started sandbox's URL leads: its own port ('port', a broker clients reach directly), or
 * its routes on the broker's port at the address the client called ('broker': a node of a cluster,
 * reached only through gateways, which route /groups/{group id}/... by the group id's node).
 */
export type SandboxUrls = 'port' | 'broker';

export function groupRouter(groups: GroupService, sandboxUrls: SandboxUrls = 'port'): Router {
  return {
    name: 'groups',
    ...apiErrors(GROUP_CONTRACT),
    routes: [
      served(R.startGroup, async ({ body, res }) => {
        await groups.startGroup(parseGroupStart(body));
        sendJson(res, 200, { status: 'started' });
      }),
      served(R.stopGroup, async ({ res }) => {
        await groups.stopGroup();
        sendJson(res, 200, { status: 'stopped' });
      }),
      served(R.startSandbox, async ({ body, req, res }) => {
        const request = parseSandboxStart(body);
        const started = await groups.startSandbox(request);
        const groupId = groups.groupId;
        if (sandboxUrls === 'broker' && groupId !== null) {
          started.sandbox_url = `http://${publicAddress(req)}/groups/${encodeURIComponent(groupId)}/sandboxes/${encodeURIComponent(request.id)}`;
        }
        sendJson(res, 200, started);
      }),
      served(R.stopSandbox, async ({ body, res }) => {
        await groups.stopSandbox(parseSandboxStop(body));
        sendJson(res, 200, { status: 'stopped' });
      }),
      // The same routes as a sandbox's own port serves, each from its contract here.
      ...sandboxApiRoutes(SANDBOX_API_PREFIX, ({ params }) => groups.sandbox(params.groupId, params.sandboxId)).map((route) => served(contractFor(route), route.handle)),
    ],
  };
}

function contractFor(route: Route): RouteContract {
  const contract = Object.values(R).find((c) => c.method === route.method && c.path === route.path);
  if (!contract) throw new Error(`${route.method} ${route.path} has no contract in groupContract.ts`);
  return contract;
}
