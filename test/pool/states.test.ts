/**
 * Needs no backend:
 * @backend any
 */
import { IllegalTransitionError, SessionState, SessionStates, type Stateful } from '../../src/core/pool/states';

interface FakeSlot extends Stateful {
  slotId: string;
  state: SessionState;
}

const ALL = [SessionState.AVAILABLE, SessionState.IN_USE, SessionState.CLEANING, SessionState.BROKEN];

/** The pool API's session lifecycle, written out independently of the implementation. */
const LEGAL = new Set([
  'available->in_use',
  'available->broken',
  'in_use->cleaning',
  'in_use->broken',
  'cleaning->available',
  'cleaning->broken',
  'broken->available',
]);

const slot = (id: string): FakeSlot => ({ slotId: id, state: SessionState.AVAILABLE });

/** Shortest legal path from AVAILABLE to each state, to put a slot where a test needs it. */
const PATH_TO: Record<SessionState, SessionState[]> = {
  [SessionState.AVAILABLE]: [],
  [SessionState.IN_USE]: [SessionState.IN_USE],
  [SessionState.CLEANING]: [SessionState.IN_USE, SessionState.CLEANING],
  [SessionState.BROKEN]: [SessionState.BROKEN],
};

function expectConsistent(states: SessionStates<FakeSlot>, slots: FakeSlot[]): void {
  const snap = states.snapshot();
  expect(snap.available + snap.in_use + snap.cleaning + snap.broken).toBe(snap.total);
  for (const s of ALL) {
    expect(states.count(s)).toBe(slots.filter((x) => states.has(x) && x.state === s).length);
    expect(snap[s]).toBe(states.count(s));
  }
}

const pairs = ALL.flatMap((from) => ALL.map((to) => [from, to] as const));

describe('SessionStates', () => {
  it('the table allows exactly the session lifecycle of the pool API', () => {
    for (const [from, to] of pairs) expect(SessionStates.canMove(from, to)).toBe(LEGAL.has(`${from}->${to}`));
  });

  it.each(pairs.filter(([f, t]) => LEGAL.has(`${f}->${t}`)))('moves %s -> %s', (from, to) => {
    const changes: string[] = [];
    const states = new SessionStates<FakeSlot>((s, f, t) => changes.push(`${s.slotId}:${f ?? 'new'}->${t}`));
    const others = [slot('o1'), slot('o2')];
    for (const o of others) states.add(o, SessionState.AVAILABLE);
    states.move(others[1], SessionState.BROKEN);
    const s = slot('s');
    states.add(s, SessionState.AVAILABLE);
    for (const step of PATH_TO[from]) states.move(s, step);
    expect(s.state).toBe(from);
    const before = states.snapshot();
    states.move(s, to);
    expect(s.state).toBe(to);
    const after = states.snapshot();
    expect(after[from]).toBe(before[from] - 1);
    expect(after[to]).toBe(before[to] + 1);
    expect(after.total).toBe(before.total);
    expect(changes[changes.length - 1]).toBe(`s:${from}->${to}`);
    expectConsistent(states, [...others, s]);
  });

  it.each(pairs.filter(([f, t]) => !LEGAL.has(`${f}->${t}`)))('refuses %s -> %s and changes nothing', (from, to) => {
    const changes: string[] = [];
    const states = new SessionStates<FakeSlot>((s, f, t) => changes.push(`${s.slotId}:${f}->${t}`));
    const s = slot('s');
    states.add(s, SessionState.AVAILABLE);
    for (const step of PATH_TO[from]) states.move(s, step);
    const before = states.snapshot();
    const changesBefore = changes.length;
    expect(() => states.move(s, to)).toThrow(IllegalTransitionError);
    expect(() => states.move(s, to)).toThrow(`illegal session transition for s: ${from} -> ${to}`);
    expect(s.state).toBe(from);
    expect(states.snapshot()).toEqual(before);
    expect(changes.length).toBe(changesBefore);
    expectConsistent(states, [s]);
  });

  it('add starts AVAILABLE or BROKEN, refuses a second add, and remove forgets the slot', () => {
    const states = new SessionStates<FakeSlot>();
    const a = slot('a');
    const b = slot('b');
    states.add(a, SessionState.AVAILABLE);
    states.add(b, SessionState.BROKEN);
    expect(states.snapshot()).toEqual({ available: 1, in_use: 0, cleaning: 0, broken: 1, total: 2 });
    expect(() => states.add(a, SessionState.AVAILABLE)).toThrow('registered twice');
    expect(states.snapshot().total).toBe(2);
    states.move(a, SessionState.IN_USE);
    states.remove(a);
    expect(states.has(a)).toBe(false);
    expect(states.snapshot()).toEqual({ available: 0, in_use: 0, cleaning: 0, broken: 1, total: 1 });
    states.remove(a); // twice: no effect
    expect(states.snapshot().total).toBe(1);
    expect(() => states.move(a, SessionState.CLEANING)).toThrow('not registered');
    expectConsistent(states, [a, b]);
  });

  it('counts always sum to the total over a long random walk', () => {
    const states = new SessionStates<FakeSlot>();
    const slots = Array.from({ length: 20 }, (_, i) => slot(`s${i}`));
    let seed = 12345;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * n); // high bits: an LCG's low bits cycle
    };
    let legal = 0;
    let illegal = 0;
    for (let step = 0; step < 5000; step++) {
      const s = slots[next(slots.length)];
      const op = next(10);
      if (!states.has(s)) {
        states.add(s, next(2) === 0 ? SessionState.AVAILABLE : SessionState.BROKEN);
      } else if (op === 0) {
        states.remove(s);
      } else {
        const to = ALL[next(ALL.length)];
        const ok = SessionStates.canMove(s.state, to);
        const before = states.snapshot();
        try {
          states.move(s, to);
          legal++;
          expect(ok).toBe(true);
        } catch (err) {
          illegal++;
          expect(err).toBeInstanceOf(IllegalTransitionError);
          expect(ok).toBe(false);
          expect(states.snapshot()).toEqual(before);
        }
      }
      const snap = states.snapshot();
      if (snap.available + snap.in_use + snap.cleaning + snap.broken !== snap.total) throw new Error(`counts drifted at step ${step}`);
    }
    expect(legal).toBeGreaterThan(100);
    expect(illegal).toBeGreaterThan(100);
    expectConsistent(states, slots);
  });
});
