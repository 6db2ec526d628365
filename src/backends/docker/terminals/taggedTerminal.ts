/**
 * What the docker backend's two terminals (dockerTerminal.ts over `docker exec`, fifoTerminal.ts on
 * the broker's pipes) share: their processes carry a tag, so closing kills every one of them through
 * the control shell; and a resize is applied before the keys typed after it, as a terminal does.
 */
import type { TerminalProcess } from '../../../core/ports/backend';
import type { ControlShell } from '../control/controlShell';

export abstract class TaggedTerminal implements TerminalProcess {
  abstract readonly description: string;
  protected ended = false;
  /** A resize in flight and the keys that came after it. */
  private resizing: Promise<void> | null = null;
  private held: (string | Buffer)[] = [];
  private closePromise: Promise<void> | null = null;
  /** In a session's pid namespace: bash's pid there (what it says as `$$`) → its pid in the container. */
  private readonly containerPids = new Map<number, Promise<number>>();

  /** `namespaced`: the terminal runs in an isolated session's namespaces (isolation/), where `$$` is not the container's pid. */
  constructor(
    protected readonly control: ControlShell,
    protected readonly tag: string,
    private readonly namespaced = false,
  ) {}

  abstract onData(listener: (chunk: Buffer) => void): void;
  abstract onExit(listener: (exit: { code: number | null; reason: string }) => void): void;
  /** Writes keys to the terminal now. */
  protected abstract send(data: string | Buffer): void;
  /** Sets the window size; resolves once applied (or failed: nothing to do then). */
  protected abstract applySize(cols: number, rows: number): Promise<void>;
  /** Drops the broker's end of the stream. */
  protected abstract destroyStream(): void;

  write(data: string | Buffer): void {
    if (this.ended) return;
    if (this.resizing) this.held.push(data);
    else this.send(data);
  }

  resize(cols: number, rows: number): void {
    if (this.ended) return;
    const done: Promise<void> = (this.resizing ?? Promise.resolve())
      .then(() => this.applySize(cols, rows))
      .catch(() => undefined)
      .then(() => {
        if (this.resizing !== done) return; // a later resize carries the held keys
        this.resizing = null;
        for (const data of this.held.splice(0)) if (!this.ended) this.send(data);
      });
    this.resizing = done;
  }

  /** On the container's signal lane (`__bk_fgint`), with bash's pid as the container sees it. */
  async interruptForeground(shellPid: number): Promise<boolean> {
    if (this.ended) return false;
    const pid = await this.inContainer(shellPid);
    return pid > 0 && (await this.control.interruptForeground(pid));
  }

  /** bash's tree, session and group, and the tag, started since then: bash itself (older) is kept. */
  async killStartedSince(shellPid: number | null, sinceEpochMs: number): Promise<number> {
    const root = shellPid === null ? -1 : await this.inContainer(shellPid);
    return this.control.kill(root > 0 ? root : -1, sinceEpochMs, this.tag, true);
  }

  /** `pid` as the container sees it (0: not found); asked of the signal lane once per pid, by the terminal's tag. */
  private inContainer(pid: number): Promise<number> {
    if (!this.namespaced) return Promise.resolve(pid);
    let found = this.containerPids.get(pid);
    if (!found) {
      found = this.control.containerPidOf(pid, this.tag).catch(() => 0);
      this.containerPids.set(pid, found);
      void found.then((p) => p > 0 || this.containerPids.delete(pid));
    }
    return found;
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    // Everything with the tag, bash included (root -1: no tree, the tag finds them all).
    await this.control.kill(-1, -1, this.tag, false).catch(() => undefined);
    this.control.dropTag(this.tag);
    this.destroyStream();
  }
}
