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
