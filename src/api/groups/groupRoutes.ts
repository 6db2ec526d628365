/**
 * The sandbox groups' API on the broker's port: a group, its sandboxes. A thin router over
 * core/groups; errors in the pool API's `{"detail", "code"}` format.
 */
import type { Router } from '../../http/router';
import type { GroupService } from '../../core/groups/groupService';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendJson } from '../../http/httpJson';
import { parseGroupStart, parseSandboxStart, parseSandboxStop } from './groupInput';

export function groupRouter(groups: GroupService): Router {
  return {
    name: 'groups',
    errors: poolErrorFormat,
    routes: [
      {
        method: 'POST',
        path: '/group/start',
        body: 'json',
        async handle({ body, res }) {
          await groups.startGroup(parseGroupStart(body));
          sendJson(res, 200, { status: 'started' });
        },
      },
      {
        method: 'POST',
        path: '/group/stop',
        body: 'json',
        async handle({ res }) {
          await groups.stopGroup();
          sendJson(res, 200, { status: 'stopped' });
        },
      },
      {
        method: 'POST',
        path: '/sandbox/start',
        body: 'json',
        async handle({ body, res }) {
          sendJson(res, 200, await groups.startSandbox(parseSandboxStart(body)));
        },
      },
      {
        method: 'POST',
        path: '/sandbox/stop',
        body: 'json',
        async handle({ body, res }) {
          await groups.stopSandbox(parseSandboxStop(body));
          sendJson(res, 200, { status: 'stopped' });
        },
      },
    ],
  };
}
