/**
 * A gateway's dashboard: GET /ui on a gateway is the cluster's page (public, as on any broker), its
 * assets are the gateway's own, and any other path is routed as before. In real headless Chromium
 * the page shows every node of a live cluster (a private etcd, two nodes, a gateway) with its
 * health and sessions, follows a lease taken through the gateway to the node that holds it, and
 * drops a node that leaves. A screenshot goes under test-output/.
 * The page reads only the gateway's /health, whatever backend the nodes run: the browser part runs
 * in the local project. Without a chromium it fails under CI and is skipped loudly elsewhere.
 *
 * The page and the routes checked read the gateway alone, whatever the nodes run:
 * @backend any
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { useTestCluster, SESSIONS_PER_NODE, nodeOf } from '../helpers/cluster';
import { call } from '../../devtools/clusterProcs';
import { testBackend } from '../helpers/broker';

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && fs.existsSync(p));
const OUTPUT_DIR = path.join(__dirname, '..', '..', 'test-output');
const ci = Boolean(process.env.CI) && process.env.CI !== 'false';
/** The page redraws once a second; a change shows within a heartbeat and a redraw. */
const SHOWN_WITHIN_MS = 20_000;

const cluster = useTestCluster(['n1', 'n2'], 1);

describe("a gateway's dashboard", () => {
  test('GET /ui and its assets are the gateway\'s own and public; other paths are routed to a node as before', async () => {
    const [gateway] = cluster.gateways;
    const page = await call(gateway.url, 'GET', '/ui');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.text).toContain('bash-session broker: cluster');
    expect(page.text).toContain('/ui/dashboard/cluster.js');
    const script = await call(gateway.url, 'GET', '/ui/dashboard/cluster.js');
    expect([script.status, script.headers['content-type']]).toEqual([200, 'text/javascript; charset=utf-8']);
    expect(script.text).toContain("fetch('/health'");
    const style = await call(gateway.url, 'GET', '/ui/dashboard/dashboard.css');
    expect([style.status, style.headers['content-type']]).toEqual([200, 'text/css; charset=utf-8']);
    // A node answers what the gateway does not serve itself: the standalone dashboard's own script,
    // and its error for an asset that does not exist; /admin keeps the client's token.
    expect((await cluster.call(gateway, 'GET', '/ui/dashboard/dashboard.js')).text).toContain('/admin/live');
    expect((await cluster.call(gateway, 'GET', '/ui/dashboard/nope.js')).json).toMatchObject({ code: 'asset_not_found' });
    expect((await call(gateway.url, 'GET', '/admin/state')).status).toBe(401);
  });
});

// The Docker project runs the HTTP part only: the page reads the gateway alone, whatever the nodes run.
const inBrowser = testBackend === 'local';
if (inBrowser && CHROMIUM) {
  describe("a gateway's dashboard in headless Chromium", () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    }, 60_000);
    afterAll(() => browser?.close());

    /** The text of each cell of the node's row: node, health, address, heartbeat, available, in use, cleaning, broken, total. */
    async function nodeRow(page: Page, nodeId: string): Promise<string[] | null> {
      const row = page.locator(`#node-rows tr[data-node="${nodeId}"]`);
      if ((await row.count()) === 0) return null;
      return (await row.locator('td').allTextContents()).map((t) => t.trim());
    }

    async function until(page: Page, what: string, check: () => Promise<boolean>): Promise<void> {
      const deadline = Date.now() + SHOWN_WITHIN_MS;
      while (!(await check())) {
        if (Date.now() > deadline) {
          const rows = await page.locator('#node-rows').innerText();
          throw new Error(`the page to show ${what}; it shows:\n${rows}`);
        }
        await page.waitForTimeout(200);
      }
    }

    test('shows every node with its health and sessions, follows a lease to its node, and drops a node that leaves', async () => {
      const [gateway] = cluster.gateways;
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(String(err)));
      await page.goto(`${gateway.url}/ui`);
      const address = (id: string): string => new URL(cluster.nodes.get(id)!.url).origin;
      await until(page, 'both nodes healthy with every session available', async () => {
        const rows = await Promise.all(['n1', 'n2'].map((id) => nodeRow(page, id)));
        return rows.every((r, i) => r !== null && r[1] === 'healthy' && r[2] === address(['n1', 'n2'][i]) && r[4] === String(SESSIONS_PER_NODE) && r[5] === '0');
      });
      expect(await page.textContent('#cluster-nodes')).toBe('2');
      expect(await page.textContent('#cluster-total')).toBe(String(2 * SESSIONS_PER_NODE));
      expect(await page.textContent('#status')).toBe('healthy');
      const all = String(2 * SESSIONS_PER_NODE);
      expect(await page.locator('#pool-rows tr[data-pool="default"] td').allTextContents()).toEqual(['default', all, '0', '0', '0', all]);

      // A lease through the gateway shows on the node its id names, and on the cluster's figures.
      const acquired = await cluster.call(gateway, 'POST', '/session/acquire', {});
      expect(acquired.status).toBe(200);
      const holder = nodeOf(acquired.json.session_id);
      const other = holder === 'n1' ? 'n2' : 'n1';
      await until(page, `one session in use on ${holder}`, async () => {
        const [held, free] = [await nodeRow(page, holder), await nodeRow(page, other)];
        return held?.[5] === '1' && held[4] === String(SESSIONS_PER_NODE - 1) && free?.[5] === '0' && (await page.textContent('#cluster-in-use')) === '1';
      });
      fs.mkdirSync(OUTPUT_DIR, { recursive: true });
      await page.screenshot({ path: path.join(OUTPUT_DIR, 'cluster-dashboard.png'), fullPage: true });
      expect((await cluster.call(gateway, 'POST', `/session/${acquired.json.session_id}/release`)).json).toEqual({ status: 'released' });

      // A node that stops leaves the membership first: its row goes.
      await cluster.nodes.get(other)!.stop();
      await until(page, `${other} gone`, async () => (await nodeRow(page, other)) === null && (await page.textContent('#cluster-nodes')) === '1');
      expect(await nodeRow(page, holder)).not.toBeNull();
      expect(errors).toEqual([]);
      await page.close();
    });
  });
} else if (inBrowser && ci) {
  describe("a gateway's dashboard in headless Chromium", () => {
    test('needs chromium', () => {
      throw new Error('CI must run this suite: install chromium (apt-get install chromium) or set CHROMIUM_PATH');
    });
  });
} else if (inBrowser) {
  describe("a gateway's dashboard in headless Chromium -- SKIPPED: no chromium", () => {
    test('warns that the suite did not run', () => console.warn('clusterDashboard.test.ts SKIPPED: no chromium (apt-get install chromium, or set CHROMIUM_PATH)'));
  });
}
