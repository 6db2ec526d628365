/**
 * Needs no backend:
 * @backend any
 */
import { RetiredLeases } from '../../src/core/pool/retiredLeases';

describe('RetiredLeases', () => {
  it('remembers why a lease ended', () => {
    const r = new RetiredLeases(10);
    r.add('a', 'released');
    r.add('b', 'idle_timeout');
    expect(r.has('a')).toBe(true);
    expect(r.why('a')).toBe('released');
    expect(r.why('b')).toBe('idle_timeout');
    expect(r.has('c')).toBe(false);
    expect(r.why('c')).toBeUndefined();
  });

  it('forgets the oldest beyond its capacity', () => {
    const r = new RetiredLeases(3);
    for (const id of ['a', 'b', 'c', 'd', 'e']) r.add(id, 'released');
    expect(['a', 'b', 'c', 'd', 'e'].map((id) => r.has(id))).toEqual([false, false, true, true, true]);
  });

  it('adding a known id again does not grow it', () => {
    const r = new RetiredLeases(2);
    r.add('a', 'idle_timeout');
    r.add('a', 'released');
    r.add('b', 'released');
    expect(r.has('a')).toBe(true);
    expect(r.why('a')).toBe('released');
    expect(r.has('b')).toBe(true);
  });
});
