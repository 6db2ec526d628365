/**
 * The soak's reading of the broker's counters (bench/soak): totals over labelled series.
 * @backend any
 */
import { countersByLabel } from '../../bench/soak/report';
import { counterTotal, reclaimCheck } from '../../bench/soak/verdicts';

const METRICS = [
  '# TYPE broker_sessions_reclaimed_total counter',
  'broker_sessions_reclaimed_total{reason="idle_timeout"} 41',
  'broker_sessions_reclaimed_total{reason="lease_ttl"} 1',
  'broker_sessions_reclaimed_total{reason="operator"} 0',
  'broker_sessions_broken_total 7',
].join('\n');

describe('soak counters', () => {
  it('totals a counter split by label, takes an unlabelled one as it is, and is NaN for one /metrics lacks', () => {
    expect(counterTotal(countersByLabel(METRICS, 'broker_sessions_reclaimed_total'))).toBe(42);
    expect(counterTotal(countersByLabel(METRICS, 'broker_sessions_broken_total'))).toBe(7);
    expect(counterTotal(countersByLabel(METRICS, 'broker_nothing_total'))).toBeNaN();
  });

  it('judges the reclaims by the total of every reason', () => {
    const total = counterTotal(countersByLabel(METRICS, 'broker_sessions_reclaimed_total'));
    expect(reclaimCheck({ abandoned: 40, verified: 40 } as Parameters<typeof reclaimCheck>[0], total, 5).pass).toBe(true);
    expect(reclaimCheck({ abandoned: 45, verified: 45 } as Parameters<typeof reclaimCheck>[0], total, 5).pass).toBe(false);
  });
});
