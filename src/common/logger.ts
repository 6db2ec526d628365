import pino from 'pino';

/**
 * One logger for the process; the hot path logs at debug only. Its level is the configuration's
 * (BROKER_LOG_LEVEL), set by whoever loaded it (configureLogger); `info` until then.
 */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const logger = pino({ level: 'info', base: undefined });
export type Logger = typeof logger;

export function configureLogger(level: LogLevel): void {
  logger.level = level;
}
