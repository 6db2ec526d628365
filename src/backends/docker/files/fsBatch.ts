/**
 * One container's working-directory creations and removals, merged into as few fs-lane commands as
 * they allow (`rm -rf -- a b c; mkdir -p -- d e`: one fork per part). A fork costs ~1-5 ms of CPU
 * here, and an episode used to cost two (its directory's mkdir and its rm). Creations now come in
 * batches made ahead (core/pool/workdirStock.ts), and removals once per delay.
 *
 * A creation is waited for (a slot's fresh bash starts in it): it goes with the next command, at once
 * when the lane is idle; while a command runs, creations accumulate and the next command takes all of
 * them. Each has its own deadline: one that passes fails the creation alone (the caller then uploads
 * the directory instead) while the command runs on (a big removal ahead of it, say).
 *
 * Nobody waits for a removal: removals are held for REMOVAL_DELAY_MS (or until REMOVAL_BATCH are
 * pending, or the space is short) and then go out together, with the creations pending then, so a
 * container's removals cost one `rm` per delay, not one per episode. At the pids limit (PidsLimitError) creations fail at once (the upload needs no fork) and
 * removals wait for room, asking again every delay until their own deadline. A removal that failed is
 * kept and tried again with the next removals.
 */
import { BackendError } from '../../../common/errors';
import { PidsLimitError } from '../control/controlShell';

/**
 * How long removals are held to go out together (and how often those held by the pids limit ask
 * again: a builtin check, no fork): at most one `rm` per container per delay, or per
 * REMOVAL_BATCH removals when they come faster. A fork in a busy container costs ~5 ms of CPU here
 * (measured: an fs-lane command per second per container was ~0.3 ms of every episode at 64 at
 * once), so a released directory's space comes back up to this much later, unless the caller says
 * the space is short (remove's `now`). The more containers share the episodes, the fewer episodes
 * each sees per delay: at 256 at once (32 containers, ~1.5 episodes/s each) a 4 s delay meant an
 * `rm` every ~6 episodes per container; 15 s brings it to ~25, and the fs lanes' CPU per episode
 * to a tenth (episodeDiag at 256, 40 s windows one after the other, load 180-210: 2.9 -> 0.3 ms).
 */
export const REMOVAL_DELAY_MS = 15_000;
/** Held removals go out at once when this many are pending (one `rm` command line of ~3 KB). */
const REMOVAL_BATCH = 64;

/** The one command a batch needs of the container: what ControlShell.fsBatch does. */
export interface FsLane {
  readonly alive: boolean;
  /** `rm -rf -- removes...` then `mkdir -p -- makes...`, as one command; which of the two succeeded. */
  fsBatch(makes: readonly string[], removes: readonly string[], timeoutMs: number): Promise<{ made: boolean; removed: boolean }>;
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

interface Creation extends Waiter {
  dir: string;
  deadline: number;
  timer: NodeJS.Timeout;
  done: boolean;
}

interface Removal {
  deadline: number;
  waiters: Waiter[];
}

export class FsBatcher {
  private creations: Creation[] = [];
  /** The creations of the command running now. */
  private runningMakes: Creation[] = [];
  /** Removals asked for and not done yet, by directory. */
  private removals = new Map<string, Removal>();
  /** Directories whose removal failed: no one waits for them; they ride along with the next command. */
  private readonly retryDirs = new Set<string>();
  private running = false;
  private scheduled = false;
  /** Armed while removals are held; when it fires they are due and go with the next command. */
  private removalTimer: NodeJS.Timeout | null = null;
  private removalsDue = false;
  private closed = false;
  /** Commands run on the lane so far (for tests and the bench). */
  commands = 0;

  constructor(
    readonly lane: FsLane,
    /** REMOVAL_DELAY_MS; a test of the batching passes a shorter one. */
    private readonly removalDelayMs = REMOVAL_DELAY_MS,
  ) {}

  /** Resolves once `dir` exists; rejects (PidsLimitError, BackendError) when the lane could not make it in time. */
  make(dir: string, timeoutMs: number): Promise<void> {
    if (this.closed) return Promise.reject(new BackendError('the container is gone'));
    return new Promise<void>((resolve, reject) => {
      const creation: Creation = {
        dir,
        deadline: Date.now() + timeoutMs,
        done: false,
        resolve,
        reject,
        timer: setTimeout(() => settle(creation, new BackendError(`mkdir ${dir}: no answer within ${timeoutMs} ms`)), timeoutMs),
      };
      this.creations.push(creation);
      this.schedule();
    });
  }

  /**
   * Resolves once `dir` is gone; rejects when it could not be removed before `timeoutMs` (it is kept
   * for a later try). `now`: the held removals go with the next command, not after the delay.
   */
  remove(dir: string, timeoutMs: number, now = false): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const removal = this.removals.get(dir) ?? { deadline: Date.now() + timeoutMs, waiters: [] };
      removal.waiters.push({ resolve, reject });
      this.removals.set(dir, removal);
      if (now || this.removals.size >= REMOVAL_BATCH) this.removalsDueNow();
      else this.holdRemovals();
    });
  }

  /** The container is gone, and its directories with it: nothing more runs. */
  close(): void {
    this.closed = true;
    if (this.removalTimer) clearTimeout(this.removalTimer);
    for (const c of [...this.runningMakes, ...this.creations.splice(0)]) settle(c, new BackendError('the container is gone'));
    for (const r of this.removals.values()) for (const w of r.waiters) w.resolve();
    this.removals.clear();
    this.retryDirs.clear();
  }

  /** Runs the next command soon, once the requests of this turn of the event loop are in. */
  private schedule(): void {
    if (this.running || this.scheduled || this.closed) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private removalsDueNow(): void {
    if (this.removalTimer) clearTimeout(this.removalTimer);
    this.removalTimer = null;
    this.removalsDue = true;
    this.schedule();
  }

  /** Removals go out with the first command after the removal delay. */
  private holdRemovals(): void {
    if (this.removalTimer || this.closed) return;
    this.removalTimer = setTimeout(() => this.removalsDueNow(), this.removalDelayMs);
    this.removalTimer.unref();
  }

  private async flush(): Promise<void> {
    if (this.running || this.closed) return;
    const makes = this.creations.filter((c) => !c.done);
    this.creations = [];
    const due = this.removalsDue;
    this.removalsDue = false;
    const removals = due ? this.removals : new Map<string, Removal>();
    if (due) this.removals = new Map();
    if (makes.length === 0 && removals.size === 0) return;
    const removeDirs = due ? [...new Set([...removals.keys(), ...this.retryDirs])] : [];
    const deadline = Math.max(...makes.map((c) => c.deadline), ...[...removals.values()].map((r) => r.deadline));
    this.running = true;
    this.runningMakes = makes;
    this.commands++;
    try {
      const r = await this.lane.fsBatch(
        makes.map((c) => c.dir),
        removeDirs,
        Math.max(1, deadline - Date.now()),
      );
      for (const c of makes) settle(c, r.made ? null : new BackendError(`mkdir of ${makes.length} directories failed`));
      if (due) this.removed(removeDirs, removals, r.removed ? null : new BackendError(`rm -rf of ${removeDirs.length} directories failed`));
    } catch (err) {
      const error = err instanceof Error ? err : new BackendError(String(err));
      for (const c of makes) settle(c, error);
      if (error instanceof PidsLimitError && this.lane.alive) this.waitForRoom(removals, error);
      else if (due) this.removed(removeDirs, removals, error);
    } finally {
      this.running = false;
      this.runningMakes = [];
      if (this.creations.length > 0 || this.removalsDue) this.schedule();
    }
  }

  /** The outcome of a command's removals: done, or failed (kept in retryDirs for a later command). */
  private removed(dirs: readonly string[], removals: Map<string, Removal>, error: Error | null): void {
    for (const dir of dirs) {
      if (error) this.retryDirs.add(dir);
      else this.retryDirs.delete(dir);
    }
    for (const r of removals.values()) {
      for (const w of r.waiters) {
        if (error) w.reject(error);
        else w.resolve();
      }
    }
  }

  /** At the pids limit: removals go back in the queue until their deadline, and ask again later. */
  private waitForRoom(removals: Map<string, Removal>, error: Error): void {
    const now = Date.now();
    for (const [dir, r] of removals) {
      if (now + this.removalDelayMs >= r.deadline) {
        this.retryDirs.add(dir);
        for (const w of r.waiters) w.reject(error);
      } else {
        const queued = this.removals.get(dir);
        this.removals.set(dir, queued ? { deadline: r.deadline, waiters: [...r.waiters, ...queued.waiters] } : r);
      }
    }
    if (this.removals.size > 0) this.holdRemovals();
  }
}

function settle(c: Creation, error: Error | null): void {
  if (c.done) return;
  c.done = true;
  clearTimeout(c.timer);
  if (error) c.reject(error);
  else c.resolve();
}
