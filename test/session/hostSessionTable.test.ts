/**
 * The mount table of a local isolated session (hostSessionTable.ts), from a host's mountinfo: the
 * root overlaid, kernel filesystems made fresh, near-top directory mounts overlaid, /etc file mounts
 * bound read-only, the rest left out.
 * @backend any
 */
import { hostSessionTable, parseMountinfo } from '../../src/backends/local/hostSessionTable';

const MOUNTINFO = [
  '22 27 0:21 / /proc rw,relatime - proc proc rw',
  '23 27 0:22 / /sys rw,relatime - sysfs sysfs rw',
  '24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw',
  '25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw',
  '27 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
  '28 27 0:25 / /mnt/tools ro - tmpfs tools ro',
  '30 27 0:40 / /tmp rw - tmpfs tmpfs rw',
  '31 27 0:41 / /run rw shared:5 - tmpfs tmpfs rw',
  '32 31 0:42 / /run/lock rw - tmpfs tmpfs rw',
  '33 31 0:4 net:[4026531833] /run/docker/netns/default rw - nsfs nsfs rw',
  '34 27 254:0 /var/lib/docker /var/lib/docker rw - ext4 /dev/vda rw',
  '35 27 254:0 /etc/hosts /etc/hosts rw - ext4 /dev/vda rw',
  '36 27 0:43 / /home/with\\040space rw - ext4 /dev/vdb rw',
  '37 30 0:44 / /tmp/s/abc rw - tmpfs tmpfs rw',
  '38 27 0:45 / /srv rw - fuse.sshfs remote rw',
  '39 30 0:46 / /tmp rw - tmpfs tmpfs rw',
].join('\n');

const KINDS: Record<string, 'dir' | 'file'> = { '/etc/hosts': 'file', '/proc/kcore': 'file', '/proc/sys': 'dir', '/proc/acpi': 'dir' };

describe('hostSessionTable', () => {
  const table = hostSessionTable({ mounts: parseMountinfo(MOUNTINFO), stage: '/S', kindOf: (t) => KINDS[t] ?? (t.startsWith('/proc/') ? null : 'dir') });

  it('overlays the root first, then makes /dev, devpts, mqueue, proc with its masks and a read-only sysfs fresh', () => {
    expect(table.lines.slice(0, 5)).toEqual([
      'bkr-root /S/r overlay lowerdir=/,upperdir=/S/u,workdir=/S/w',
      '/S/d /S/r/dev none bind',
      'devpts /S/r/dev/pts devpts newinstance,ptmxmode=0666,mode=620,gid=5',
      'mqueue /S/r/dev/mqueue mqueue defaults',
      'proc /S/r/proc proc nosuid,nodev,noexec',
    ]);
    expect(table.lines).toEqual(expect.arrayContaining(['/S/r/dev/null /S/r/proc/kcore none bind', 'tmpfs /S/r/proc/acpi tmpfs ro', '/proc/sys /S/r/proc/sys none remount,bind,ro', 'sysfs /S/r/sys sysfs ro,nosuid,nodev,noexec']));
  });

  it('overlays the visible near-top directory mounts, parents first, each with layers of its own; binds /etc files read-only', () => {
    const carried = table.lines.filter((l) => l.startsWith('bkr-carried') || l.startsWith('/etc/'));
    // /tmp was mounted again over the first one: the later mount is the visible one, in its place in the order.
    expect(carried).toEqual([
      'bkr-carried /S/r/run overlay lowerdir=/run,upperdir=/S/u0,workdir=/S/w0',
      'bkr-carried /S/r/tmp overlay lowerdir=/tmp,upperdir=/S/u1,workdir=/S/w1',
      'bkr-carried /S/r/run/lock overlay lowerdir=/run/lock,upperdir=/S/u2,workdir=/S/w2',
      '/etc/hosts /S/r/etc/hosts none bind',
      '/etc/hosts /S/r/etc/hosts none remount,bind,ro',
    ]);
    expect(table.dirs).toEqual(['u0', 'w0', 'u1', 'w1', 'u2', 'w2']);
  });

  it('leaves out kernel filesystems, /mnt, deep mounts, working directories, FUSE, and paths an option cannot carry', () => {
    const text = table.lines.join('\n');
    for (const gone of ['/mnt/tools', '/run/docker/netns', '/var/lib/docker', '/tmp/s/abc', '/srv', 'with\\040space', '/S/r/dev/shm ']) expect(text).not.toContain(gone);
  });
});
