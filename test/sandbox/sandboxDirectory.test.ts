/**
 * The directory of live sandboxes (core/sandbox/sandboxDirectory.ts): a sandbox registered when it is
 * claimed resolves to its handle, leaves when its end signal aborts (or when its kind unregisters
 * it), and an id it does not hold is explained by the kinds that knew it, in order, else refused as
 * unknown.
 * @backend any
 */
import { SandboxDirectory, UnknownSandboxError } from '../../src/core/sandbox/sandboxDirectory';
import { OWN_API_ONLY, SHELL_AND_FILES, type Sandbox, type SandboxKind } from '../../src/core/sandbox/sandbox';
import type { SandboxHandle } from '../../src/core/sandbox/sandboxHandle';
import type { SessionBackend } from '../../src/core/ports/backend';
import { BrokerError, SessionNotFoundError } from '../../src/common/errors';

/** A sandbox of `kind` whose handle names it, with the controller of its end signal. */
function sandbox(id: string, kind: SandboxKind = 'pool', capabilities = SHELL_AND_FILES): { sandbox: Sandbox; end: AbortController } {
  const end = new AbortController();
  const handle = (): SandboxHandle => ({ id, slotId: `slot-${id}`, container: { id: 'c1', name: 'c1' }, root: `/tmp/s/${id}/`, confined: true, ended: end.signal, backend: {} as SessionBackend });
  return { sandbox: { id, kind, capabilities, ended: end.signal, handle }, end };
}

describe('SandboxDirectory', () => {
  it('resolves a registered sandbox to its handle, and finds and lists it by kind', () => {
    const directory = new SandboxDirectory();
    const lease = sandbox('s1');
    const workspace = sandbox('ws1', 'workspace');
    directory.register(lease.sandbox);
    directory.register(workspace.sandbox);
    expect(directory.resolve('s1')).toMatchObject({ id: 's1', root: '/tmp/s/s1/' });
    expect(directory.resolve('ws1').id).toBe('ws1');
    expect(directory.find('ws1')?.kind).toBe('workspace');
    expect(directory.list('workspace').map((s) => s.id)).toEqual(['ws1']);
    expect(directory.list().map((s) => s.id)).toEqual(['s1', 'ws1']);
  });

  it('lets a sandbox go when its end signal aborts, and refuses one that has ended already', () => {
    const directory = new SandboxDirectory();
    const lease = sandbox('s1', 'lifecycle');
    directory.register(lease.sandbox);
    lease.end.abort();
    expect(directory.find('s1')).toBeUndefined();
    expect(() => directory.resolve('s1')).toThrow(UnknownSandboxError);
    const ended = sandbox('s2', 'lifecycle');
    ended.end.abort();
    directory.register(ended.sandbox);
    expect(directory.find('s2')).toBeUndefined();
  });

  it('keeps a sandbox registered without watching its end until its kind unregisters it', () => {
    const directory = new SandboxDirectory();
    const lease = sandbox('s1');
    directory.register(lease.sandbox, false);
    lease.end.abort();
    expect(directory.resolve('s1').id).toBe('s1');
    directory.unregister('s1');
    expect(directory.find('s1')).toBeUndefined();
    directory.unregister('s1');
  });

  it('refuses a second live sandbox of the same id, and an old one leaving keeps the new one', () => {
    const directory = new SandboxDirectory();
    const first = sandbox('same', 'lifecycle');
    directory.register(first.sandbox);
    expect(() => directory.register(sandbox('same', 'workspace').sandbox)).toThrow(/live lifecycle sandbox has the id same/);
    first.end.abort();
    const second = sandbox('same', 'workspace');
    directory.register(second.sandbox);
    directory.unregister(first.sandbox);
    expect(directory.find('same')?.kind).toBe('workspace');
  });

  it('refuses an unknown id as unknown (404 sandbox_not_found) when no kind explains it', () => {
    const err = (() => {
      try {
        new SandboxDirectory().resolve('nobody');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(UnknownSandboxError);
    expect(err).toMatchObject({ kind: 'not_found', code: 'sandbox_not_found', message: 'Sandbox not found: nobody' });
  });

  it('explains a missing id by the first kind that knew it, in the order they were added', () => {
    const directory = new SandboxDirectory();
    const asked: string[] = [];
    directory.explainMisses((id) => {
      asked.push(`lifecycle ${id}`);
      return id === 'ended' ? new BrokerError('not_found', 'sandbox_terminated', `Sandbox ${id} is terminated`) : null;
    });
    directory.explainMisses((id) => {
      asked.push(`pools ${id}`);
      return new SessionNotFoundError(id);
    });
    expect(() => directory.resolve('ended')).toThrow(/Sandbox ended is terminated/);
    expect(() => directory.resolve('never')).toThrow(SessionNotFoundError);
    expect(asked).toEqual(['lifecycle ended', 'lifecycle never', 'pools never']);
  });

  it('does not hand a sandbox without a shell to the per-sandbox APIs: its id is explained as a missing one', () => {
    const directory = new SandboxDirectory();
    directory.register(sandbox('task-1', 'task', OWN_API_ONLY).sandbox);
    expect(directory.find('task-1')?.kind).toBe('task');
    expect(() => directory.resolve('task-1')).toThrow(UnknownSandboxError);
  });

  it('passes on the error a sandbox gives for where it is now (a paused one)', () => {
    const directory = new SandboxDirectory();
    const paused = sandbox('p1', 'lifecycle').sandbox;
    directory.register({ ...paused, handle: () => { throw new BrokerError('busy', 'sandbox_state', 'Sandbox p1 is Paused'); } });
    expect(() => directory.resolve('p1')).toThrow(/Sandbox p1 is Paused/);
  });
});
