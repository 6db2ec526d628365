/**
 * The workspace's terminal page: xterm.js (with its fit addon, served from node_modules, never a
 * CDN) attached to /ws/workspace/terminal, beside a live list of command and exit events from
 * /ws/workspace. A person types there while the agent calls /api/execute; both see both.
 *
 * The page and its scripts hold no data and are public; everything it reads goes through the one
 * `authorize`. With BROKER_TOKEN set, the page asks for the token once (kept in sessionStorage),
 * sends it as a Bearer header to HTTP routes and as the `bearer.<token>` subprotocol to WebSockets.
 */
import fs from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { Router } from '../../http/router';
import { WORKSPACE_PAGE_SCRIPT } from './workspacePageScript';
import { apiErrors, served } from '../../http/contract';
import { WORKSPACE_CONTRACT, WORKSPACE_PAGE_ROUTES } from './workspaceContract';

/** Files of the npm packages, resolved once at start (a missing package fails the start, not a page load). */
const ASSETS: Record<string, { file: string; type: string }> = {
  'xterm.js': { file: require.resolve('@xterm/xterm/lib/xterm.js'), type: 'text/javascript; charset=utf-8' },
  'xterm.css': { file: require.resolve('@xterm/xterm/css/xterm.css'), type: 'text/css; charset=utf-8' },
  'addon-fit.js': { file: require.resolve('@xterm/addon-fit/lib/addon-fit.js'), type: 'text/javascript; charset=utf-8' },
};

function page(base: string, title: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${title}</title>
<link rel="stylesheet" href="/ui/assets/xterm.css">
<style>
  body { margin: 0; display: flex; height: 100vh; background: #1e1e1e; color: #ddd; font: 13px monospace; }
  #terminal { flex: 3; padding: 4px; min-width: 0; }
  #events { flex: 1; overflow-y: auto; border-left: 1px solid #444; padding: 4px; margin: 0; list-style: none; }
  #events li { white-space: pre-wrap; word-break: break-all; margin-bottom: 2px; }
  .command { color: #8cf; } .exit-ok { color: #8f8; } .exit-failed { color: #f88; } .notice { color: #fc6; }
</style></head>
<body data-base="${base}"><div id="terminal"></div><ul id="events"></ul>
<script src="/ui/assets/xterm.js"></script><script src="/ui/assets/addon-fit.js"></script>
<script>${WORKSPACE_PAGE_SCRIPT}</script>
</body></html>`;
}

function sendText(res: ServerResponse, type: string, body: string | Buffer): void {
  res.writeHead(200, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-cache' });
  res.end(body);
}

/** Only ids the workspace routes could match reach the page (it is put into HTML). */
const SAFE_ID = /^[A-Za-z0-9_.-]{1,128}$/;

const R = WORKSPACE_PAGE_ROUTES;

export function workspacePageRouter(): Router {
  const assets = Object.fromEntries(Object.entries(ASSETS).map(([name, a]) => [name, { body: fs.readFileSync(a.file), type: a.type }]));
  return {
    name: 'workspace-page',
    ...apiErrors(WORKSPACE_CONTRACT),
    routes: [
      served(R.defaultPage, ({ res }) => sendText(res, 'text/html; charset=utf-8', page('', 'workspace'))),
      served(R.namedPage, ({ params, res }) => {
        const id = SAFE_ID.test(params.workspaceId) ? params.workspaceId : '';
        sendText(res, 'text/html; charset=utf-8', page(`/workspaces/${id}`, `workspace ${id}`));
      }),
      served(R.assets, ({ params, res }) => {
        // Own names only: `constructor` or `__proto__` would find the object's prototype's.
        const asset = Object.hasOwn(assets, params.name) ? assets[params.name] : undefined;
        if (!asset) {
          res.writeHead(404, { 'Content-Type': 'text/plain' });
          res.end('not found');
          return;
        }
        sendText(res, asset.type, asset.body);
      }),
    ],
  };
}
