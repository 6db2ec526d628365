/** What an acquire does when a slot it took fails while being prepared (its shell or container died). */
import { BrokerError, SessionBrokenError, SessionUnavailableError, errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';

/** Slots an acquire tries when the one it got fails while being prepared. */
export const PREPARE_ATTEMPTS = 3;

/** Returns when another slot is worth a try; throws what the client gets otherwise. */
export function checkPrepareRetry(err: unknown, attempt: number, deadline: number, signal: AbortSignal | undefined): void {
  // A dead shell (410) or a failing backend (5xx, or an unexpected error) is the slot's fault, not the request's.
  const retryable = err instanceof SessionBrokenError || !(err instanceof BrokerError) || err.isBrokerFault;
  if (!retryable || signal?.aborted) throw err;
  logger.warn({ attempt, err: errorMessage(err) }, 'acquire: a session failed while being prepared');
  if (attempt >= PREPARE_ATTEMPTS || Date.now() >= deadline) throw new SessionUnavailableError(attempt, errorMessage(err));
}
