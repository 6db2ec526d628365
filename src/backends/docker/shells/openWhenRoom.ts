/**
 * A session shell's open that waits for its container's pids limit. At the limit the container's
 * spawner refuses to fork (fifoSpawner.ts), and an isolated shell's setup (its namespace's init, its
 * mounts) needs forks of its own: a slot rebuilt while a neighbour's fork burst holds the limit must
 * wait for room, as the fs lane's removals do, not fail its cleanup and leave the slot broken.
 */
import type { ControlShell } from '../control/controlShell';

/** How long an open refused for want of room keeps asking (a burst lasts until its lease ends). */
export const ROOM_WAIT_MS = 60_000;
/** Between two asks (`__bk_room` is a builtin check on the signal lane: no fork). */
const ASK_EVERY_MS = [250, 500, 1_000, 2_000];

export async function openWhenRoom<T>(control: ControlShell, open: () => Promise<T>, waitMs = ROOM_WAIT_MS): Promise<T> {
  const deadline = Date.now() + waitMs;
  let waited = 0;
  for (;;) {
    try {
      return await open();
    } catch (err) {
      // Room now, and none was waited for: the failure is something else. Room after a wait: one more try.
      const room = !control.alive || (await control.hasRoom().catch(() => true));
      if (room && waited === 0) throw err;
      if (Date.now() >= deadline) throw err;
      if (room) {
        waited = 0;
        continue;
      }
      await new Promise((resolve) => setTimeout(resolve, ASK_EVERY_MS[Math.min(waited, ASK_EVERY_MS.length - 1)]));
      waited++;
    }
  }
}
