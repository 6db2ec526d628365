/**
 * The observer reports milliseconds; the Prometheus histograms hold seconds.
 * @backend any
 */
import { BrokerMetrics } from '../../src/metrics/metrics';
import { PoolExhaustedError } from '../../src/common/errors';
import { metricValue } from '../helpers/broker';

describe('metrics units', () => {
  it('turns the milliseconds it is given into the seconds of its histograms', async () => {
    const m = new BrokerMetrics();
    m.acquireWaited(250, 'ok');
    m.executed(1500, 'success');
    m.executed(20, 'timeout');
    m.cleaned(40, true);
    const text = await m.registry.metrics();
    expect(metricValue(text, 'broker_acquire_wait_seconds_sum', { outcome: 'ok' })).toBeCloseTo(0.25);
    expect(metricValue(text, 'broker_execute_duration_seconds_sum', { outcome: 'success' })).toBeCloseTo(1.5);
    expect(metricValue(text, 'broker_execute_duration_seconds_bucket', { outcome: 'timeout', le: '0.025' })).toBe(1);
    expect(metricValue(text, 'broker_cleanup_duration_seconds_sum')).toBeCloseTo(0.04);
    expect(metricValue(text, 'broker_execute_timeouts_total')).toBe(1);
  });

  it('tells sub-millisecond executes apart, and counts replaced containers', async () => {
    const m = new BrokerMetrics();
    m.executed(0.08, 'success');
    m.executed(0.2, 'success');
    m.executed(0.4, 'success');
    m.containerReplaced();
    const text = await m.registry.metrics();
    const under = (le: string): number => metricValue(text, 'broker_execute_duration_seconds_bucket', { outcome: 'success', le });
    expect([under('0.0001'), under('0.00025'), under('0.0005')]).toEqual([1, 2, 3]);
    expect(metricValue(text, 'broker_containers_replaced_total')).toBe(1);
  });

  it('says the pool API\'s message in seconds for a timeout given in milliseconds', () => {
    expect(new PoolExhaustedError(120_000).message).toBe('No session available within 120 seconds');
    expect(new PoolExhaustedError(2_500).message).toBe('No session available within 2.5 seconds');
  });
});
