/**
 * The dashboard's page and its two assets, plain HTML, CSS and JS (no build step, nothing from a
 * CDN). One column on a phone, a grid of cards on a wide screen; tables scroll sideways on their own.
 */
import { DASHBOARD_SCRIPT } from './dashboardScript';

const STYLE = `
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.35 system-ui, sans-serif; background: #f4f5f7; color: #1d2330; }
header { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; padding: 10px 14px; background: #1d2330; color: #fff; }
header h1 { font-size: 16px; margin: 0; }
#status { padding: 2px 8px; border-radius: 10px; background: #666; font-size: 12px; }
#status.healthy { background: #2e7d32; } #status.degraded { background: #b26a00; } #status.unhealthy, #status.offline { background: #b00020; }
#updated { font-size: 12px; opacity: .8; }
main { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 12px; padding: 12px; }
section { background: #fff; border-radius: 6px; padding: 10px 12px; box-shadow: 0 1px 2px rgba(0,0,0,.12); min-width: 0; }
section.wide { grid-column: 1 / -1; }
h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #5a6270; margin: 0 0 8px; }
.figures { display: flex; flex-wrap: wrap; gap: 6px 18px; }
.figure b { display: block; font-size: 22px; font-variant-numeric: tabular-nums; }
.figure span { font-size: 12px; color: #5a6270; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid #eceef2; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.id { font-family: ui-monospace, monospace; }
.slots { display: flex; flex-wrap: wrap; gap: 2px; }
.slot { width: 10px; height: 10px; border-radius: 2px; }
.s-A { background: #4caf50; } .s-U { background: #1e88e5; } .s-C { background: #fdd835; } .s-B { background: #e53935; }
.dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 4px; background: #4caf50; }
.dot.bad { background: #e53935; } .dot.replacing { background: #fb8c00; }
.bar { display: flex; width: 160px; height: 10px; border-radius: 2px; overflow: hidden; background: #eceef2; }
.bar span { display: block; flex-basis: 0; }
svg.spark { width: 100%; height: 40px; display: block; margin-top: 6px; }
svg.spark polyline { fill: none; stroke: #1e88e5; stroke-width: 1.5; vector-effect: non-scaling-stroke; }
svg.spark polyline.bad { stroke: #e53935; }
button { font: inherit; font-size: 12px; padding: 2px 8px; margin-right: 4px; border: 1px solid #9aa3b2; border-radius: 4px; background: #fff; cursor: pointer; }
button:hover { background: #eef1f6; }
ul.log { list-style: none; margin: 0; padding: 0; max-height: 220px; overflow-y: auto; font-size: 12px; }
ul.log li { padding: 3px 0; border-bottom: 1px solid #eceef2; word-break: break-word; }
ul.log time { color: #5a6270; margin-right: 6px; }
.muted { color: #8a93a2; font-size: 12px; }
#notice { padding: 6px 14px; background: #fff3cd; display: none; }
@media (max-width: 480px) { main { padding: 6px; gap: 8px; } .figure b { font-size: 18px; } }
`;

export function dashboardPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>bash-session broker</title><link rel="stylesheet" href="/ui/dashboard/dashboard.css"></head>
<body>
<header><h1>bash-session broker</h1><span id="status">connecting</span><span id="updated"></span></header>
<div id="notice"></div>
<main>
  <section id="pool"><h2>Pool</h2><div class="figures" id="pool-figures"></div><ul class="log" id="pool-list"></ul></section>
  <section id="queue"><h2>Acquire queue</h2><div class="figures" id="queue-figures"></div><svg class="spark" id="queue-spark" viewBox="0 0 60 40" preserveAspectRatio="none"></svg></section>
  <section id="execute"><h2>Execute</h2><div class="figures" id="execute-figures"></div><svg class="spark" id="execute-spark" viewBox="0 0 60 40" preserveAspectRatio="none"></svg></section>
  <section id="containers" class="wide"><h2>Containers</h2><div class="scroll"><table><thead><tr><th>#</th><th>health</th><th>sessions</th><th></th></tr></thead><tbody id="container-rows"></tbody></table></div></section>
  <section id="leases" class="wide"><h2>Leases <span class="muted" id="lease-count"></span></h2><div class="scroll"><table><thead><tr><th>session</th><th>holder</th><th>container</th><th>age</th><th>idle</th><th>ttl</th><th>state</th><th></th></tr></thead><tbody id="lease-rows"></tbody></table></div></section>
  <section id="errors"><h2>Recent errors</h2><ul class="log" id="error-list"></ul></section>
  <section id="replaced"><h2>Replaced containers</h2><ul class="log" id="replaced-list"></ul></section>
  <section id="workspaces"><h2>Workspaces</h2><ul class="log" id="workspace-list"></ul></section>
  <section id="sandboxes"><h2>Sandboxes</h2><ul class="log" id="sandbox-list"></ul></section>
  <section id="images"><h2>Images</h2><ul class="log" id="image-list"></ul></section>
</main>
<script src="/ui/dashboard/dashboard.js"></script>
</body></html>`;
}

export const DASHBOARD_ASSETS: Record<string, { type: string; body: string }> = {
  'dashboard.js': { type: 'text/javascript; charset=utf-8', body: DASHBOARD_SCRIPT },
  'dashboard.css': { type: 'text/css; charset=utf-8', body: STYLE },
};
