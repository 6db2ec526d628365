/**
 * DockerWorkdirs.prepare with files: when they go on the fs lane (only an idle one), and which lane
 * failures fall back to an archive upload. A write that
 * never ran (the pids limit, a request that expired in the queue) is uploaded instead; one that
 * started and overran is not, since it may still land after the upload, over what the lease wrote
 * since. A pure unit: the control shell and the engine are stand-ins that record what they are asked.
 * @backend any
 */
import type Dockerode from 'dockerode';
import { DockerWorkdirs } from '../../src/backends/docker/files/workdirs';
import { LaneDeadlineError } from '../../src/backends/docker/control/controlLane';
import { PidsLimitError, type ControlShell } from '../../src/backends/docker/control/controlShell';
import { BackendError } from '../../src/common/errors';

const ref = { id: 'c0ffee', name: 'pool-0' };
const files = [{ path: 'in/seed.txt', content: Buffer.from('seed\n') }];

function setUp(writeFiles: () => Promise<void>, fsLaneIdle = true): { workdirs: DockerWorkdirs; uploads: string[]; writes: string[] } {
  const uploads: string[] = [];
  const writes: string[] = [];
  const docker = { getContainer: (id: string) => ({ putArchive: async () => void uploads.push(id) }) } as unknown as Dockerode;
  const control = {
    alive: true,
    fsLaneIdle,
    writeFiles: async (command: string) => {
      writes.push(command);
      await writeFiles();
    },
  } as unknown as ControlShell;
  return { workdirs: new DockerWorkdirs(docker, () => control), uploads, writes };
}

describe('DockerWorkdirs: files on the fs lane, and when they go up as a tarball', () => {
  it('writes on the lane, and uploads nothing when the lane answers', async () => {
    const { workdirs, uploads, writes } = setUp(async () => undefined);
    await workdirs.prepare(ref, '/tmp/s/ab12', files);
    expect(writes).toHaveLength(1);
    expect(writes[0]).toContain("'/tmp/s/ab12/in/seed.txt'");
    expect(uploads).toEqual([]);
  });

  it('uploads at once, writing nothing on the lane, when the lane is busy', async () => {
    const { workdirs, uploads, writes } = setUp(async () => undefined, false);
    await workdirs.prepare(ref, '/tmp/s/ab12', files);
    expect(writes).toEqual([]);
    expect(uploads).toEqual(['c0ffee']);
  });

  it.each([
    ['the pids limit (nothing tried)', () => new PidsLimitError('c0ffee', 'writing 1 files')],
    ['a deadline passed in the queue (never ran)', () => new LaneDeadlineError('fs lane: no answer (queued)', false)],
    ['a lane that could not be opened', () => new BackendError('fs lane could not be opened')],
  ])('uploads instead after %s', async (_what, error) => {
    const { workdirs, uploads } = setUp(async () => Promise.reject(error()));
    await workdirs.prepare(ref, '/tmp/s/ab12', files);
    expect(uploads).toEqual(['c0ffee']);
  });

  it('gives the slot up, with no upload, after a write that started and overran', async () => {
    const { workdirs, uploads } = setUp(async () => Promise.reject(new LaneDeadlineError('fs lane: no answer (running)', true)));
    await expect(workdirs.prepare(ref, '/tmp/s/ab12', files)).rejects.toThrow(/could not write files into pool-0 in time/);
    expect(uploads).toEqual([]);
  });
});
