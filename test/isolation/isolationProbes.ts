/**
 * What the isolation suites' leases write, each command on its own: every place a later lease or a
 * sibling could find it (the image is bash-broker-test: /etc/passwd and /etc/group are files it
 * ships, /usr/local/bin a directory it ships empty, /bin one it ships with content).
 */
export const IMAGE_WRITES = [
  'echo mine >/tmp/x',
  'echo mine >$HOME/x',
  'echo mine >/etc/x',
  'echo mine >/usr/local/bin/x',
  'mkdir -p /opt && echo mine >/opt/x',
  'echo mine >/dev/shm/x',
  'echo mine >/var/tmp/x',
  'echo mine >/bin/x',
  'echo "intruder:x:0:0::/:/bin/sh" >>/etc/passwd',
  'cp /etc/group /etc/group.bak && rm /etc/group',
];

/** The files those commands leave, looked for by the next lease. */
export const IMAGE_WRITES_LEAVE = '/tmp/x $HOME/x /etc/x /usr/local/bin/x /opt/x /dev/shm/x /var/tmp/x /bin/x /etc/group.bak';

/**
 * Ways out of a session's view, each printing a word only when it got somewhere; the last line
 * prints `checked`, so the whole run's stdout is `checked\n` when every one failed. `/root/victim-only`
 * is a file only a sibling session has.
 */
export const ESCAPE_ATTEMPTS = [
  'umount /proc 2>/dev/null && echo umount-proc',
  'umount -l / 2>/dev/null && echo umount-root',
  'mount -t tmpfs x /mnt 2>/dev/null && echo mounted',
  'mount --bind / /mnt 2>/dev/null && echo bound',
  'mount -o remount,rw /sys 2>/dev/null && echo remounted',
  // The container's own /dev holds the isolation's template: a root that shows it is the container's.
  'cd / && chroot .. /bin/sh -c "[ -e /dev/.bkr-iso ] && echo chroot-escaped"',
  'cd / && chroot .. /bin/sh -c "cd ../../..; [ -e /dev/.bkr-iso ] && echo climbed"',
  'nsenter -t 1 -m true 2>/dev/null && echo nsenter-init',
  'nsenter -t 1 -m -p true 2>/dev/null && echo nsenter-pid',
  '[ -e /proc/1/root/dev/.bkr-iso ] && echo init-root',
  'echo x >/proc/1/root/tmp/pwned 2>/dev/null && echo wrote-init-root',
  'for p in $(seq 1 2000); do [ -e /proc/$p/root/root/victim-only ] && echo "victim-root $p"; echo x >/proc/$p/root/tmp/pwned 2>/dev/null; done; true',
  'echo 1 >/proc/sysrq-trigger 2>/dev/null && echo sysrq',
  // The session init's control pipes: in the broker's directory (not in the view), and in its fds (not reachable).
  'for f in /.bkr/* /dev/.bkr*; do [ -e "$f" ] && echo "broker-dir $f"; done; true',
  'readlink /proc/1/fd/0 >/dev/null 2>&1 && echo init-fd-link',
  'for n in 3 4 5 6 7 8 9 10; do echo "rebind x" 2>/dev/null >/proc/1/fd/$n && echo "init-fd $n"; done; true',
  'grep -q "^CapBnd:.*" /proc/self/status && echo checked',
];

/** The processes a session's /proc shows, counted by bash alone (no fork to race the count): 2 when only its init and bash run. */
export const COUNT_PROCESSES = 'n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo $n';
