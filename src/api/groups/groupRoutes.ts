/**
 * The sandbox groups' API on the broker's port: a group, its sandboxes. A thin router over
 * core/groups, each route served from its contract (groupContract.ts); errors in the pool API's `{"detail", "code"}` format.
 */
import type { Router } from '../../http/router';
import type { GroupService } from '../../core/groups/groupService';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendJson } from '../../http/httpJson';
import { parseGroupStart, parseSandboxStart, parseSandboxStop } from './groupInput';
import { served } from '../../http/contract';
import { GROUP_CONTRACT } from './groupContract';

const R = GROUP_CONTRACT.routes;

export function groupRouter(groups: GroupService): Router {
  return {
    name: 'groups',
    errors: poolErrorFormat,
    routes: [
      served(R.startGroup, async ({ body, res }) => {
        await groups.startGroup(parseGroupStart(body));
        sendJson(res, 200, { status: 'started' });
      }),
      served(R.stopGroup, async ({ res }) => {
        await groups.stopGroup();
        sendJson(res, 200, { status: 'stopped' });
      }),
      served(R.startSandbox, async ({ body, res }) => {
        sendJson(res, 200, await groups.startSandbox(parseSandboxStart(body)));
      }),
      served(R.stopSandbox, async ({ body, res }) => {
        await groups.stopSandbox(parseSandboxStop(body));
        sendJson(res, 200, { status: 'stopped' });
      }),
    ],
  };
}
