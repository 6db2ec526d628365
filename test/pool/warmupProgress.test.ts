/**
 * Warm-up's log line: n of N, the rate and the time left, every 2 s while it runs, and a summary.
 * @backend any
 */
import { WarmupProgress } from '../../src/core/pool/warmupProgress';
import { logger } from '../../src/common/logger';

describe('WarmupProgress', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('logs n of N, the rate and the time left while it runs, then the summary, and stops', () => {
    const info = jest.spyOn(logger, 'info').mockImplementation(() => undefined);
    const progress = new WarmupProgress(100);
    for (let i = 0; i < 20; i++) progress.settled(true);
    progress.settled(false);
    expect(info).not.toHaveBeenCalled();
    jest.advanceTimersByTime(2_000);
    expect(info).toHaveBeenCalledTimes(1);
    // 21 settled in 2 s: 10.5/s, 79 to go: 7.5 s, shown rounded up.
    expect(info.mock.calls[0][1]).toBe('warming up: 20 of 100 sessions ready (10.5/s, 8 s left)');
    expect(progress.snapshot()).toEqual({
      target_sessions: 100,
      ready_sessions: 20,
      failed_sessions: 1,
      elapsed_seconds: 2,
      sessions_per_second: 10.5,
      seconds_left: 7.5,
    });
    expect(progress.running).toBe(true);
    progress.finish();
    expect(progress.running).toBe(false);
    expect(info.mock.calls[1][1]).toBe('pool warm: 20 of 100 sessions ready in 2 s, 1 failed (retried in the background)');
    jest.advanceTimersByTime(10_000);
    expect(info).toHaveBeenCalledTimes(2);
  });

  it('has no rate or time left before the first session', () => {
    jest.spyOn(logger, 'info').mockImplementation(() => undefined);
    const progress = new WarmupProgress(8);
    expect(progress.snapshot()).toMatchObject({ ready_sessions: 0, sessions_per_second: null, seconds_left: null });
    progress.finish();
  });
});
