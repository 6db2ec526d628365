/**
 * The Docker backend's ledger of containers (containerLedger.ts), as a pure unit: close waits for
 * a start still running, whatever it made and was not removed is left to remove, and a container
 * that comes up after close began is removed at once and its start fails.
 * @backend any
 */
import { ContainerLedger } from '../../src/backends/docker/containers/containerLedger';
import { BackendError } from '../../src/common/errors';

const ref = (id: string): { id: string; name: string } => ({ id, name: `c-${id}` });

describe('ContainerLedger', () => {
  it('lists what was made and not removed', async () => {
    const ledger = new ContainerLedger();
    await ledger.keepOrRemove(ref('a'), 'started', async () => undefined);
    await ledger.keepOrRemove(ref('b'), 'started', async () => undefined);
    ledger.removed('a');
    expect(ledger.left().map((r) => r.id)).toEqual(['b']);
  });

  it('settles once the running start ended, not before', async () => {
    const ledger = new ContainerLedger();
    let finish!: () => void;
    void ledger.track(new Promise<void>((resolve) => (finish = resolve)));
    let settled = false;
    const settling = ledger.settle(60_000).then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    finish();
    await settling;
    expect(settled).toBe(true);
  });

  it('settles within its bound when a start never ends', async () => {
    const ledger = new ContainerLedger();
    void ledger.track(new Promise<void>(() => undefined));
    await ledger.settle(10);
  });

  it.each(['started', 'connected'] as const)('removes a container %s after close began, and fails its caller', async (step) => {
    const ledger = new ContainerLedger();
    await ledger.settle(0);
    const removed: string[] = [];
    await expect(ledger.keepOrRemove(ref('late'), step, async (r) => void removed.push(r.id))).rejects.toThrow(BackendError);
    expect(removed).toEqual(['late']);
  });
});
