/**
 * A unix socket deeper than sun_path allows (a CI run's long deployment names put the group's
 * database sockets there) is still made where it was asked for, and answers HTTP there.
 * @backend any
 */
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { listenOnSocket } from '../../src/api/groups/groupListeners';

describe('listenOnSocket', () => {
  it('binds a path longer than 107 bytes in its own directory and leaves no link behind', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bkr-sockpath-'));
    const dir = path.join(root, 'x'.repeat(60), 'y'.repeat(40));
    fs.mkdirSync(dir, { recursive: true });
    const socketPath = path.join(dir, 'db0.sock');
    expect(Buffer.byteLength(socketPath)).toBeGreaterThan(107);
    const linksBefore = fs.readdirSync('/tmp').filter((n) => n.startsWith('bkr-sock-')).length;
    const server = http.createServer((_req, res) => res.end('here'));
    try {
      await listenOnSocket(server, socketPath);
      expect(fs.statSync(socketPath).isSocket()).toBe(true);
      // A client reaches it through a short link of its own (it has the same bound on its path).
      const clientLink = path.join(root, 'c');
      fs.symlinkSync(dir, clientLink);
      const body = await new Promise<string>((resolve, reject) => {
        const req = http.request({ socketPath: path.join(clientLink, 'db0.sock'), path: '/' }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(text));
        });
        req.on('error', reject);
        req.end();
      });
      expect(body).toBe('here');
      expect(fs.readdirSync('/tmp').filter((n) => n.startsWith('bkr-sock-')).length).toBe(linksBefore);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
