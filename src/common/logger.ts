import pino from 'pino';
import type { LogLevel } from '../config/config';

/**
 * One logger for the process; the hot path logs at debug only. Its level is the configuration's
 * (BROKER_LOG_LEVEL), set by whoever loaded it (configureLogger); `info` until then.
 */
export const logger = pino({ level: 'info', base: undefined });
export type Logger = typeof logger;

export function configureLogger(level: LogLevel): void {
  logger.level = level;
}
