/**
 * The broker's side of an isolated session's control pipes: requests to the session's init, the
 * namespace's pid 1 (sessionReuse.c), one at a time, one line each way. The container's spawner
 * opens the pipes from the broker's directory, which no session sees, and hands them to the init
 * alone (its shell never has them), so an answer comes from the init or not at all.
 *
 * Any answer but the expected one (the init gone, a timeout, `dirty`, `failed`) is only a "no":
 * the caller then does what it does without the init's help (a new session). After a timeout the
 * pipes are given up: a late answer would be taken for the next request's.
 */
import net from 'node:net';
import { LineReader } from '../../../common/lineReader';

/** An answer is one short line; anything longer is not the init's: the pipes are given up. */
const MAX_ANSWER = 512;

export class SessionControl {
  private readonly input: net.Socket;
  private readonly output: net.Socket;
  private readonly answers = new LineReader((line) => this.onLine(line), { maxLineBytes: MAX_ANSWER, overlong: () => this.close() });
  private waiter: ((line: string | null) => void) | null = null;
  private closed = false;
  /** The init said `ready` (it serves requests). */
  private ready = false;

  /** `requestFd`: the broker's end of the init's request pipe (written); `answerFd`: of its answer pipe (read). */
  constructor(requestFd: number, answerFd: number) {
    this.input = new net.Socket({ fd: requestFd, readable: false, writable: true });
    this.input.on('error', () => this.close());
    this.output = new net.Socket({ fd: answerFd, readable: true, writable: false });
    this.output.on('data', (chunk: Buffer) => this.answers.push(chunk));
    this.output.on('error', () => this.close());
    // EOF: no init holds the pipe (it ended with its session, or it never served one: the setup script).
    this.output.on('close', () => this.close());
  }

  /**
   * Whether a request can be answered: the init announced itself and its pipe is open. A session
   * started through the setup script never announces (nor closes: a pipe whose writer left before
   * the broker's end was open reports no end), so this is false there from the start.
   */
  get usable(): boolean {
    return this.ready && !this.closed;
  }

  /** Sends `request` and resolves with the init's answer line, or null (no init, or none within `timeoutMs`). */
  ask(request: string, timeoutMs: number): Promise<string | null> {
    if (!this.usable || this.waiter) return Promise.resolve(null);
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.close(), timeoutMs);
      this.waiter = (line) => {
        clearTimeout(timer);
        this.waiter = null;
        resolve(line);
      };
      this.input.write(`${request}\n`);
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.input.destroy();
    this.output.destroy();
    this.waiter?.(null);
  }

  private onLine(line: string): void {
    if (this.closed) return;
    if (!this.ready && line === 'ready') {
      this.ready = true;
      return;
    }
    // An answer no request asked for: the pipes are out of step, give them up.
    if (!this.waiter) return this.close();
    this.waiter(line);
  }
}
