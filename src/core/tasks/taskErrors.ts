/** The task API's domain errors (their kinds decide the status: http/errorFormats.ts). */
import { BrokerError } from '../../common/errors';

export class TaskNotFoundError extends BrokerError {
  constructor(id: string) {
    super('not_found', 'sandbox_not_found', `Sandbox not found: ${id}`);
  }
}

export class TaskEndedError extends BrokerError {
  constructor(id: string) {
    super('gone', 'sandbox_terminated', `Sandbox ${id} has been terminated`);
  }
}

/** The daemon never answered its health check: the sandbox was removed (504). */
export class DaemonNotReadyError extends BrokerError {
  constructor(id: string, timeoutMs: number, lastError: string) {
    super('timeout', 'daemon_not_ready', `The daemon of sandbox ${id} did not become ready within ${timeoutMs / 1000} s (last error: ${lastError}); the sandbox was removed`);
  }
}

/** The broker runs without what task sandboxes need (the Docker backend): 501. */
export class TasksUnavailableError extends BrokerError {
  constructor(why: string) {
    super('not_implemented', 'tasks_not_available', why);
  }
}

export class TaskCapacityError extends BrokerError {
  constructor(max: number) {
    super('unavailable', 'too_many_sandboxes', `${max} task sandboxes are running (BROKER_TASK_MAX_SANDBOXES); delete one or retry later`);
  }
}

/** The daemon refused a forwarded request (its state, its validation): its status class and words. */
export class DaemonRefusedError extends BrokerError {
  constructor(status: number, detail: string) {
    super(status === 409 ? 'busy' : status < 500 ? 'invalid' : 'backend', status === 409 ? 'sandbox_state' : 'daemon_error', `The sandbox's daemon refused: ${detail}`);
  }
}
