/** The task API's domain errors (their kinds decide the status: http/errorFormats.ts). */
import { BrokerError, brokerError } from '../../common/errors';

export class TaskNotFoundError extends brokerError('not_found', 'sandbox_not_found', (id: string) => `Sandbox not found: ${id}`) {}

export class TaskEndedError extends brokerError('gone', 'sandbox_terminated', (id: string) => `Sandbox ${id} has been terminated`) {}

/** The daemon never answered its health check: the sandbox was removed (504). */
export class DaemonNotReadyError extends brokerError('timeout', 'daemon_not_ready', (id: string, timeoutMs: number, lastError: string) => `The daemon of sandbox ${id} did not become ready within ${timeoutMs / 1000} s (last error: ${lastError}); the sandbox was removed`) {}

/** The broker runs without what task sandboxes need (the Docker backend): 501. */
export class TasksUnavailableError extends brokerError('not_implemented', 'tasks_not_available', (why: string) => why) {}

export class TaskCapacityError extends brokerError('unavailable', 'too_many_sandboxes', (max: number) => `${max} task sandboxes are running (BROKER_TASK_MAX_SANDBOXES); delete one or retry later`) {}

/** The daemon refused a forwarded request (its state, its validation): its status class and words. */
export class DaemonRefusedError extends BrokerError {
  constructor(status: number, detail: string) {
    super(status === 409 ? 'busy' : status < 500 ? 'invalid' : 'backend', status === 409 ? 'sandbox_state' : 'daemon_error', `The sandbox's daemon refused: ${detail}`);
  }
}
