/**
 * The dashboard a gateway serves at GET /ui: the cluster node by node, from the gateway's own
 * /health (its membership: each node's health, heartbeat age and sessions by state, every pool's
 * totals). A gateway holds no sessions, so a node's dashboard would show one node only; this page
 * shows them all. Public like the standalone page: it reads only /health, which is public too.
 * Leases, containers and errors stay on each node's own dashboard.
 */
import type { ServerResponse } from 'node:http';
import { sendText } from '../../http/httpJson';
import { DASHBOARD_ASSETS } from './dashboardPage';
import { CLUSTER_DASHBOARD_SCRIPT } from './clusterDashboardScript';

export function clusterDashboardPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>bash-session broker: cluster</title><link rel="stylesheet" href="/ui/dashboard/dashboard.css"></head>
<body>
<header><h1>bash-session broker: cluster</h1><span id="status">connecting</span><span id="store"></span><span id="updated"></span></header>
<div id="notice"></div>
<main>
  <section id="cluster"><h2>Cluster</h2><div class="figures" id="cluster-figures"></div></section>
  <section id="pools"><h2>Pools</h2><div class="scroll"><table><thead><tr><th>pool</th><th>available</th><th>in use</th><th>cleaning</th><th>broken</th><th>total</th></tr></thead><tbody id="pool-rows"></tbody></table></div></section>
  <section id="nodes" class="wide"><h2>Nodes <span class="muted" id="node-count"></span></h2><div class="scroll"><table><thead><tr><th>node</th><th>health</th><th>address</th><th>heartbeat</th><th>available</th><th>in use</th><th>cleaning</th><th>broken</th><th>total</th><th>sessions</th><th>other pools</th></tr></thead><tbody id="node-rows"></tbody></table></div></section>
</main>
<script src="/ui/dashboard/cluster.js"></script>
</body></html>`;
}

const CLUSTER_ASSETS: Record<string, { type: string; body: string }> = {
  'cluster.js': { type: 'text/javascript; charset=utf-8', body: CLUSTER_DASHBOARD_SCRIPT },
  'dashboard.css': DASHBOARD_ASSETS['dashboard.css'],
};

/**
 * Answers GET /ui and the page's assets (/ui/dashboard/{cluster.js,dashboard.css}) on a gateway;
 * false for any other path, which the gateway routes as before.
 */
export function serveClusterDashboard(path: string, res: ServerResponse): boolean {
  if (path === '/ui') {
    sendText(res, 'text/html; charset=utf-8', clusterDashboardPage());
    return true;
  }
  const prefix = '/ui/dashboard/';
  const asset = path.startsWith(prefix) ? CLUSTER_ASSETS[path.slice(prefix.length)] : undefined;
  if (!asset) return false;
  sendText(res, asset.type, asset.body);
  return true;
}
