/**
 * The workspace's terminal page in real headless Chromium (playwright-core driving Debian's chromium):
 * a person types in the page and the agent sees it (events, logs); the agent executes and the page
 * shows it. With BROKER_TOKEN set, the page asks for the token once. A screenshot is saved under
 * test-output/. Without a chromium the suite fails under CI and is skipped loudly elsewhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestBroker, eventually, testBackend, type TestBroker } from '../helpers/broker';
import { openSocket, wsUrl, type Event } from '../helpers/workspaceClient';

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && fs.existsSync(p));
const OUTPUT_DIR = path.join(__dirname, '..', '..', 'test-output');
const TOKEN = 'page-secret';
const auth = { Authorization: `Bearer ${TOKEN}` };

if (CHROMIUM) {
  describe('workspace: the terminal page in headless Chromium', () => {
    let tb: TestBroker;
    let browser: Browser;
    let page: Page;
    beforeAll(async () => {
      tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_TOKEN: TOKEN });
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await tb?.close();
    }, 60_000);

    let lastScreen = '';
    const screen = async (): Promise<string> => (lastScreen = (await page.locator('.xterm-rows').textContent()) ?? '');
    const sidebar = async (): Promise<string> => (await page.locator('#events').textContent()) ?? '';

    it('asks for the token, attaches to the terminal, and shares it with the agent both ways', async () => {
      page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      page.on('console', (m) => errors.push(`console ${m.type()}: ${m.text()}`));
      let asked = 0;
      page.on('dialog', (dialog) => {
        asked++;
        void dialog.accept(TOKEN);
      });
      const events: Event[] = [];
      const socket = await openSocket(wsUrl(tb, '/ws/workspace'), auth, (data) => events.push(JSON.parse(data.toString('utf8'))));
      try {
        await page.goto(`${tb.url}/ui/workspace`);
        await eventually(async () => /\s[#$]\s/.test(await screen()), 30_000, () => `a prompt on the page; got ${JSON.stringify(lastScreen)}; errors: ${errors.join('; ')}`);
        expect(asked).toBe(1);

        // A person types in the page: the agent sees the command and its output.
        await page.click('#terminal');
        await page.keyboard.type('echo from-page-$((2+3))');
        await page.keyboard.press('Enter');
        await eventually(() => events.some((e) => e.type === 'output' && e.line === 'from-page-5'), 30_000, () => `from-page-5 over /ws/workspace; got ${JSON.stringify(events)}`);
        const typed = events.find((e) => e.type === 'command')!;
        expect(typed).toMatchObject({ source: 'terminal', command: 'echo from-page-$((2+3))' });
        // Its output can come before its exit event: the agent's execute waits for the job to end (else 409).
        await eventually(() => events.some((e) => e.type === 'exit' && e.job_id === typed.job_id), 30_000, () => `the typed job's exit; got ${JSON.stringify(events)}`);
        const logs = (await tb.request('GET', '/api/workspace/logs?offset=-20&limit=20', undefined, auth)).json as Event[];
        expect(logs.some((e) => e.type === 'output' && e.line === 'from-page-5')).toBe(true);

        // The agent executes: the page's terminal shows the command and its output, the list its events.
        const r = await tb.post('/api/execute', { command: 'echo from-agent-$((3*3))' }, auth);
        expect(r.json).toMatchObject({ returncode: 0, stdout: 'from-agent-9\n' });
        await eventually(async () => (await screen()).includes('from-agent-9'), 30_000, () => `from-agent-9 on the page; got ${lastScreen}`);
        await eventually(async () => (await sidebar()).includes('$ echo from-agent-$((3*3))'), 30_000, 'the command in the event list');
        expect(await sidebar()).toContain('exit 0');

        fs.mkdirSync(OUTPUT_DIR, { recursive: true });
        await page.screenshot({ path: path.join(OUTPUT_DIR, `workspace-page-${testBackend}.png`) });
      } finally {
        socket.close();
      }
    });

    it('serves the page and its scripts without the token, and nothing else', async () => {
      for (const p of ['/ui/workspace', '/ui/workspaces/abc', '/ui/assets/xterm.js', '/ui/assets/xterm.css', '/ui/assets/addon-fit.js']) {
        expect((await tb.get(p)).status).toBe(200);
      }
      expect((await tb.get('/ui/assets/nope.js')).status).toBe(404);
      expect((await tb.get('/api/workspace/logs')).status).toBe(401);
    });
  });
} else if (process.env.CI && process.env.CI !== 'false') {
  describe('workspace: the terminal page in headless Chromium', () => {
    it('needs chromium', () => {
      throw new Error('CI must run this suite: install chromium (apt-get install chromium) or set CHROMIUM_PATH');
    });
  });
} else {
  describe('workspace: the terminal page -- SKIPPED: no chromium', () => {
    it('warns that the suite did not run', () => console.warn('workspacePage.test.ts SKIPPED: no chromium (apt-get install chromium, or set CHROMIUM_PATH)'));
  });
}
