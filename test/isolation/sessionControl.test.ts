/**
 * The broker's side of a session init's control pipes (isolation/sessionControl.ts), against real
 * named pipes with this test as the init: nothing is asked before the init says `ready`; an answer
 * comes back to its request; anything out of step, a silent init or its end makes the control
 * unusable and every later request a null (the caller's fallback: a new session).
 * @backend any
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SessionControl } from '../../src/backends/docker/isolation/sessionControl';

interface Rig {
  control: SessionControl;
  /** The init's ends: its requests (read) and its answers (written). */
  requests: number;
  answers: number;
}

let dir: string;
const opened: number[] = [];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'session-control-'));
});

afterEach(() => {
  for (const fd of opened.splice(0)) {
    try {
      fs.closeSync(fd);
    } catch {
      /* closed by the test */
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Pipes as the spawner makes them: the broker's request end read-write, the init's answer end open before the broker's. */
function rig(): Rig {
  const [ctl, ans] = [path.join(dir, 'x.ctl'), path.join(dir, 'x.ans')];
  execFileSync('mkfifo', [ctl, ans]);
  const nonblock = fs.constants.O_NONBLOCK;
  const brokerRequests = fs.openSync(ctl, fs.constants.O_RDWR | nonblock);
  const requests = fs.openSync(ctl, fs.constants.O_RDONLY | nonblock);
  const answers = fs.openSync(ans, fs.constants.O_RDWR | nonblock);
  const brokerAnswers = fs.openSync(ans, fs.constants.O_RDONLY | nonblock);
  opened.push(requests, answers);
  return { control: new SessionControl(brokerRequests, brokerAnswers), requests, answers };
}

/** Waits until the init's request pipe holds a line, and returns it. */
async function nextRequest(fd: number): Promise<string> {
  const buf = Buffer.alloc(256);
  for (;;) {
    try {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n > 0) return buf.subarray(0, n).toString('latin1');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Until `check` holds (the sockets' events are asynchronous). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setImmediate(resolve));
}

describe('SessionControl', () => {
  it('asks nothing before the init says ready, then gets each answer for its request', async () => {
    const { control, requests, answers } = rig();
    expect(control.usable).toBe(false);
    await expect(control.ask('rebind a1', 10_000)).resolves.toBeNull();
    fs.writeSync(answers, 'ready\n');
    await until(() => control.usable);
    const first = control.ask('rebind a1', 10_000);
    expect(await nextRequest(requests)).toBe('rebind a1\n');
    fs.writeSync(answers, 'ok\n');
    await expect(first).resolves.toBe('ok');
    const second = control.ask('rebind b2', 10_000);
    expect(await nextRequest(requests)).toBe('rebind b2\n');
    fs.writeSync(answers, 'dirty disk: the lease wrote\n');
    await expect(second).resolves.toBe('dirty disk: the lease wrote');
    expect(control.usable).toBe(true);
    control.close();
  });

  it('gives up on an answer no request asked for, on a silent init, and on the init gone', async () => {
    const stray = rig();
    fs.writeSync(stray.answers, 'ready\nok\n');
    await until(() => !stray.control.usable);
    await expect(stray.control.ask('rebind a1', 10_000)).resolves.toBeNull();

    fs.rmSync(path.join(dir, 'x.ctl'));
    fs.rmSync(path.join(dir, 'x.ans'));
    const silent = rig();
    fs.writeSync(silent.answers, 'ready\n');
    await until(() => silent.control.usable);
    await expect(silent.control.ask('rebind a1', 50)).resolves.toBeNull();
    expect(silent.control.usable).toBe(false);

    fs.rmSync(path.join(dir, 'x.ctl'));
    fs.rmSync(path.join(dir, 'x.ans'));
    const gone = rig();
    fs.writeSync(gone.answers, 'ready\n');
    await until(() => gone.control.usable);
    const pending = gone.control.ask('rebind a1', 10_000);
    fs.closeSync(gone.answers);
    await expect(pending).resolves.toBeNull();
    expect(gone.control.usable).toBe(false);
  });
});
