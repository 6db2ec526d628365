/** Entry point: configuration from the environment, a broker on HOST:PORT, shutdown on SIGTERM/SIGINT. */
import { ConfigError, loadConfig, type BrokerConfig } from './config/config';
import { Broker } from './broker';
import { configureLogger, logger } from './common/logger';
import { errorMessage } from './common/errors';

async function main(): Promise<void> {
  let config: BrokerConfig;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`bash-session-broker: invalid configuration: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  configureLogger(config.logLevel);
  let broker: { close(): Promise<void> };
  if (config.cluster.role === 'standalone') {
    const standalone = new Broker(config);
    const address = await standalone.start();
    logger.info(
      { host: address.address, port: address.port, backend: config.backend, sessions: config.containers * config.sessionsPerContainer },
      `broker listening on http://${address.address}:${address.port}`,
    );
    broker = standalone;
  } else {
    // Loaded only for a cluster role: a standalone broker never loads the store's client (gRPC).
    const { startClusterRole } = await import('./cluster/startRole');
    broker = await startClusterRole(config);
  }
  // Warm-up logs its own progress and its "pool warm" line (core/pool/warmupProgress.ts).

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      logger.warn(`${signal} again: exiting now`);
      process.exit(1);
    }
    stopping = true;
    logger.info(`${signal}: draining and stopping`);
    broker.close().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err: errorMessage(err) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err) => {
  console.error(`bash-session-broker: failed to start: ${errorMessage(err)}`);
  process.exit(1);
});
