import pino from 'pino';

/** One logger for the process. Level from BROKER_LOG_LEVEL; the hot path logs at debug only. */
export const logger = pino({
  level: process.env.BROKER_LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'warn' : 'info'),
  base: undefined,
});
export type Logger = typeof logger;
