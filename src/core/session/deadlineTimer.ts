/** Whether `deadline` has come, within a timer's 1 ms resolution (a timer may go off that much early). */
export function deadlinePassed(deadline: number): boolean {
  return deadline - performance.now() < 1;
}

/**
 * One timer for a sequence of deadlines, of which at most one is pending at a time (a session's
 * commands). A setTimeout + clearTimeout per command costs more than the command's own bookkeeping
 * when commands take ~100 us: Node creates a timer object, inserts it in a timer list (created
 * anew, and put in the priority queue, each time the only timer of its duration is cleared) and
 * toggles the loop's reference on both ends. Here a command only writes its deadline; the timer,
 * armed once, stays armed past the command that armed it, and when it goes off the owner looks at
 * the deadline pending then: passed (time is up) or not (`arm` again for the rest).
 *
 * The timer is unref'd: it must not keep the process alive between commands; while a command runs,
 * the shell's own pipes or sockets do.
 */
export class DeadlineTimer {
  private timer: NodeJS.Timeout | null = null;
  /** When the armed timer goes off, on the clock of `performance.now()`. */
  private firesAt = Infinity;

  constructor(private readonly onFire: () => void) {}

  /** Makes sure the timer goes off no later than `deadline` (ms, on the clock of `performance.now()`). */
  arm(deadline: number): void {
    if (this.timer !== null && this.firesAt <= deadline) return; // it goes off first: checked then
    if (this.timer !== null) clearTimeout(this.timer);
    this.firesAt = deadline;
    // setTimeout's own floor is 1 ms.
    this.timer = setTimeout(this.fire, Math.max(1, deadline - performance.now()));
    this.timer.unref();
  }

  /** No more deadlines (the session ended). */
  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.firesAt = Infinity;
  }

  private readonly fire = (): void => {
    this.timer = null;
    this.firesAt = Infinity;
    this.onFire();
  };
}
