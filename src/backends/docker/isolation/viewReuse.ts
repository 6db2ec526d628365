/**
 * The broker's two requests to an isolated session's init at a release (sessionReuse.c): reuse
 * its view for the next lease, untouched or rolled back to the image's (a rewind, sessionRewind.c),
 * and, after a rewind, settle it once the fresh bash is in the fresh view. Any other answer (the
 * init gone, dirty, failed, a timeout) is a "no": the slot then gets a new shell in new namespaces.
 */
import { logger } from '../../../common/logger';
import { RECYCLE_TIMEOUT_MS } from '../../shellRecycle';
import type { SessionControl } from './sessionControl';

/** Run by bash's exec line before the fresh bash after a rewind: the program that moves it into the fresh view, and where that view waits. */
export const REWIND_LAUNCHER = '/dev/.bkr-reroot reroot /dev/.bkr-next -- ';

/**
 * Asks the init whether the lease left the view untouched and, if so, to bind `next` there instead
 * of the last lease's working directory (`ok`); with `rewinds`, a lease that changed only its view
 * has it rolled back to the image's with `next` bound in (`rewound`: the exec line then runs
 * REWIND_LAUNCHER). Null otherwise (why is logged at debug).
 */
export async function reuseView(control: SessionControl | null | undefined, next: string, rewinds: boolean, shell: string): Promise<'ok' | 'rewound' | null> {
  const answer = (await control?.ask(`${rewinds ? 'rewind' : 'rebind'} ${next}`, RECYCLE_TIMEOUT_MS)) ?? 'failed: no answer from the session init';
  if (answer === 'ok' || answer === 'rewound') return answer;
  logger.debug({ shell, why: answer }, 'released isolated shell not reused in place: a new one takes its slot');
  return null;
}

/** A rewind's last step: the init checks bash is in the fresh view and puts that view where extra shells and file routes enter it. */
export async function settleRewind(control: SessionControl | null | undefined, shell: string): Promise<boolean> {
  const answer = (await control?.ask('settle', RECYCLE_TIMEOUT_MS)) ?? 'failed: no answer from the session init';
  if (answer === 'ok') return true;
  logger.warn({ shell, why: answer }, 'rewound isolated shell not settled: a new one takes its slot');
  return false;
}
