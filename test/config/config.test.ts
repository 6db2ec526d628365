/**
 * Configuration from an injectable environment: defaults, aliases, named errors.
 * @backend any
 */
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/config';

describe('loadConfig', () => {
  it('has defaults for everything', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      backend: 'local',
      host: '127.0.0.1',
      port: 8180,
      containers: 4,
      sessionsPerContainer: 8,
      acquireTimeoutMs: 120_000,
      cleanupWorkers: 32, // the pool's size: 4 containers x 8 sessions
      sessionIdleTimeoutMs: 1_800_000,
      defaultCommandTimeoutMs: 30_000,
      maxCommandTimeoutMs: 86_400_000,
      shutdownGraceMs: 10_000,
      timeoutKillGraceMs: 10_000,
      localCgroups: 'auto',
    });
    expect(c.localRoot).toBe(path.join(os.tmpdir(), `bash-broker-${process.pid}`));
  });

  it('reads the broker variables, seconds as floats', () => {
    const c = loadConfig({
      BROKER_CONTAINERS: '3',
      BROKER_SESSIONS_PER_CONTAINER: '5',
      BROKER_ACQUIRE_TIMEOUT: '2.5',
      BROKER_CLEANUP_WORKERS: '7',
      BROKER_SESSION_IDLE_TIMEOUT: '60',
      PORT: '0',
      HOST: '0.0.0.0',
      BROKER_ALLOW_INSECURE: '1',
      BROKER_LOCAL_CGROUPS: 'off',
      BROKER_LOCAL_ROOT: '/tmp/somewhere',
    });
    expect(c).toMatchObject({
      containers: 3,
      sessionsPerContainer: 5,
      acquireTimeoutMs: 2500,
      cleanupWorkers: 7,
      sessionIdleTimeoutMs: 60_000,
      port: 0,
      host: '0.0.0.0',
      localCgroups: 'off',
      localRoot: '/tmp/somewhere',
    });
  });

  it('runs as many cleanups at once as the pool has sessions, unless told otherwise', () => {
    expect(loadConfig({ BROKER_CONTAINERS: '32', BROKER_SESSIONS_PER_CONTAINER: '8' }).cleanupWorkers).toBe(256);
    expect(loadConfig({ BROKER_CONTAINERS: '32', BROKER_CLEANUP_WORKERS: '16' }).cleanupWorkers).toBe(16);
  });

  it('takes the SWEREX_* names as aliases', () => {
    const c = loadConfig({ SWEREX_SESSIONS_PER_CONTAINER: '16', SWEREX_ACQUIRE_TIMEOUT: '30', SWEREX_CLEANUP_WORKERS: '64' });
    expect(c).toMatchObject({ sessionsPerContainer: 16, acquireTimeoutMs: 30_000, cleanupWorkers: 64 });
  });

  it("lets the broker's own name win over its alias", () => {
    const c = loadConfig({ BROKER_SESSIONS_PER_CONTAINER: '2', SWEREX_SESSIONS_PER_CONTAINER: '16', BROKER_ACQUIRE_TIMEOUT: '1', SWEREX_ACQUIRE_TIMEOUT: '99' });
    expect(c).toMatchObject({ sessionsPerContainer: 2, acquireTimeoutMs: 1000 });
  });

  it('treats empty and blank values as unset', () => {
    expect(loadConfig({ BROKER_CONTAINERS: '', SWEREX_ACQUIRE_TIMEOUT: '  ', BROKER_BACKEND: '' })).toMatchObject({
      containers: 4,
      acquireTimeoutMs: 120_000,
      backend: 'local',
    });
  });

  it.each([
    ['BROKER_CONTAINERS', 'abc'],
    ['BROKER_CONTAINERS', '0'],
    ['BROKER_CONTAINERS', '-1'],
    ['BROKER_CONTAINERS', '1.5'],
    ['BROKER_SESSIONS_PER_CONTAINER', 'many'],
    ['SWEREX_SESSIONS_PER_CONTAINER', '0'],
    ['BROKER_ACQUIRE_TIMEOUT', 'soon'],
    ['BROKER_ACQUIRE_TIMEOUT', '0'],
    ['SWEREX_ACQUIRE_TIMEOUT', '-5'],
    ['SWEREX_CLEANUP_WORKERS', 'x'],
    ['BROKER_SESSION_IDLE_TIMEOUT', '1e3'],
    ['BROKER_SHUTDOWN_GRACE', 'NaN'],
    ['BROKER_TIMEOUT_KILL_GRACE', '0'],
    ['PORT', '70000'],
    ['PORT', 'http'],
    ['BROKER_BACKEND', 'kubernetes'],
    ['BROKER_LOCAL_CGROUPS', 'yes'],
    ['BROKER_MAX_COMMAND_TIMEOUT', '99999999'],
    ['BROKER_START_CONCURRENCY', '0'],
    ['BROKER_START_CONCURRENCY', 'all'],
    ['BROKER_START_CONCURRENCY', '2000'],
    ['BROKER_LOG_LEVEL', 'verbose'],
    ['BROKER_LOG_LEVEL', 'INFO'],
    ['BROKER_DEFAULT_WORKSPACE', 'maybe'],
    ['BROKER_WORKSPACE_LOG_EVENTS', '0'],
    ['BROKER_WORKSPACE_LOG_EVENTS', '15'],
    ['BROKER_WORKSPACE_LOG_EVENTS', '2000000'],
    ['BROKER_WORKSPACE_MAX_READ_BYTES', '1k'],
    ['BROKER_WORKSPACE_VIEWER_BUFFER_BYTES', '100'],
    ['BROKER_WORKSPACE_TERMINAL_BUFFER_BYTES', '1000'],
    ['BROKER_WORKSPACE_VIEWER_STALL_MS', '0'],
    ['BROKER_WORKSPACE_PING_MS', '5'],
    ['BROKER_MAX_LEASE_TTL', '0'],
    ['BROKER_REQUEST_ID_WINDOW', 'forever'],
    ['BROKER_REQUEST_ID_MAX', '0'],
    ['BROKER_EXECUTE_FACTS', 'maybe'],
    ['BROKER_HISTORY_ENTRIES', '0'],
    ['BROKER_TRAJECTORY_DIR', 'relative/dir'],
    ['BROKER_TRAJECTORY_FILE_BYTES', '1k'],
    ['BROKER_TRAJECTORY_FILES', '-1'],
  ])('rejects %s=%s with a message naming the variable', (name, value) => {
    const load = (): unknown => loadConfig({ [name]: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(name);
  });

  it('reads BROKER_START_CONCURRENCY, 8 by default', () => {
    expect(loadConfig({}).startConcurrency).toBe(8);
    expect(loadConfig({ BROKER_START_CONCURRENCY: '32' }).startConcurrency).toBe(32);
    expect(loadConfig({ BROKER_START_CONCURRENCY: '1' }).startConcurrency).toBe(1);
  });

  it('reads BROKER_LOG_LEVEL: info by default, warn by default under NODE_ENV=test', () => {
    expect(loadConfig({}).logLevel).toBe('info');
    expect(loadConfig({ NODE_ENV: 'test' }).logLevel).toBe('warn');
    expect(loadConfig({ NODE_ENV: 'test', BROKER_LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
    expect(loadConfig({ BROKER_LOG_LEVEL: ' silent ' }).logLevel).toBe('silent');
  });

  it("takes the local sessions' PATH, LANG and TZ from the environment it is given", () => {
    expect(loadConfig({ PATH: '/opt/x/bin:/bin', LANG: 'de_DE.UTF-8', TZ: 'Europe/Berlin' }).hostEnv).toEqual({
      path: '/opt/x/bin:/bin',
      lang: 'de_DE.UTF-8',
      tz: 'Europe/Berlin',
    });
    expect(loadConfig({}).hostEnv).toEqual({ path: '/usr/local/bin:/usr/bin:/bin', lang: 'C.UTF-8', tz: null });
    // An empty PATH is what the broker runs with: kept, not replaced by the default.
    expect(loadConfig({ PATH: '', TZ: '' }).hostEnv).toMatchObject({ path: '', tz: null });
  });

  it('reads the workspace settings: a default workspace, 10000 events, 16 MiB reads, 8 MiB / 64 KiB viewer buffers, a 10 s stall', () => {
    expect(loadConfig({}).workspace).toEqual({
      defaultWorkspace: true,
      logEvents: 10_000,
      maxReadBytes: 16 * 1024 * 1024,
      viewerBufferBytes: 8 * 1024 * 1024,
      terminalBufferBytes: 64 * 1024,
      viewerStallMs: 10_000,
      pingMs: 15_000,
    });
    expect(
      loadConfig({
        BROKER_DEFAULT_WORKSPACE: '0',
        BROKER_WORKSPACE_LOG_EVENTS: '16',
        BROKER_WORKSPACE_MAX_READ_BYTES: '4096',
        BROKER_WORKSPACE_VIEWER_BUFFER_BYTES: '65536',
        BROKER_WORKSPACE_TERMINAL_BUFFER_BYTES: '131072',
        BROKER_WORKSPACE_VIEWER_STALL_MS: '500',
        BROKER_WORKSPACE_PING_MS: '1000',
      }).workspace,
    ).toEqual({ defaultWorkspace: false, logEvents: 16, maxReadBytes: 4096, viewerBufferBytes: 65536, terminalBufferBytes: 131072, viewerStallMs: 500, pingMs: 1000 });
    expect(loadConfig({ BROKER_DEFAULT_WORKSPACE: 'yes' }).workspace.defaultWorkspace).toBe(true);
  });

  it('reads the rollout settings: defaults, and the lease_ttl cap following the idle timeout', () => {
    expect(loadConfig({}).rollout).toEqual({
      executeFacts: false,
      requestIdWindowMs: 600_000,
      requestIdMax: 50_000,
      maxLeaseTtlMs: 1_800_000,
      historyEntries: 256,
      historyOutputChars: 1024,
      trajectoryDir: null,
      trajectoryFileBytes: 64 * 1024 * 1024,
      trajectoryFiles: 4,
    });
    expect(loadConfig({ BROKER_SESSION_IDLE_TIMEOUT: '90' }).rollout.maxLeaseTtlMs).toBe(90_000);
    expect(loadConfig({ BROKER_TRAJECTORY_DIR: '/var/lib/t', BROKER_TRAJECTORY_FILE_BYTES: '1m' }).rollout).toMatchObject({ trajectoryDir: '/var/lib/t', trajectoryFileBytes: 1024 * 1024 });
  });

  it('reads the sandbox group settings: ports 8001-8099, a 10 s action wait, 300 s tools, a directory per deployment', () => {
    const c = loadConfig({ BROKER_DEPLOYMENT: 'd1' }).groups;
    expect(c).toEqual({
      sandboxPorts: { first: 8001, last: 8099 },
      actionWaitMs: 10_000,
      toolTimeoutMs: 300_000,
      hostRoot: path.join(os.tmpdir(), 'bash-broker-groups', 'd1'),
      image: 'bash-broker-sandbox:latest',
      defaultDiskBytes: 1024 ** 3,
    });
    const set = loadConfig({ BROKER_SANDBOX_PORTS: '9000', BROKER_ACTION_WAIT: '0.5', BROKER_GROUP_DIR: '/srv/g', BROKER_SANDBOX_DISK: '2g' }).groups;
    expect(set).toMatchObject({ sandboxPorts: { first: 9000, last: 9000 }, actionWaitMs: 500, hostRoot: '/srv/g/default', defaultDiskBytes: 2 * 1024 ** 3 });
    expect(() => loadConfig({ BROKER_SANDBOX_PORTS: '9000-8000' })).toThrow(/BROKER_SANDBOX_PORTS must be a port range like 8001-8099/);
    expect(() => loadConfig({ BROKER_SANDBOX_PORTS: '0-10' })).toThrow(ConfigError);
    expect(() => loadConfig({ BROKER_GROUP_DIR: 'relative' })).toThrow(/BROKER_GROUP_DIR must be an absolute path/);
    expect(() => loadConfig({ BROKER_ACTION_WAIT: '-1' })).toThrow(/BROKER_ACTION_WAIT must be a positive number of seconds/);
  });
});
