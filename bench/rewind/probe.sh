#!/bin/sh
# What the kernel allows for a rollback of an isolated session's view in place (bench/results/
# rewind-probe-latest.md): three probes in a container of the test image with the pool containers'
# SYS_ADMIN, each on overlays of `/` with private upper layers on tmpfs, as a session's view is.
#   1. the upper layer emptied under its mounted overlay: does the overlay show the image again?
#   2. a second overlay mounted over a shell's root: does the shell see it?
#   3. a shell without CAP_SYS_ADMIN re-rooted (chdir + chroot) into a fresh view moved into its
#      old one; the fresh view moved out again and the old one detached: does it see the fresh view
#      alone, and do its writes go to the fresh upper layer?
# Usage: bench/rewind/probe.sh
set -eu
docker run --rm --cap-add SYS_ADMIN --memory 256m --entrypoint bash "${BROKER_IMAGE:-bash-broker-test:latest}" -c '
unshare -m --propagation private bash -c "
set -u
view() { mkdir -p /s\$1 && mount -t tmpfs s\$1 /s\$1 && mkdir -p /s\$1/u /s\$1/w /s\$1/r && mount -t overlay o\$1 -o lowerdir=/,upperdir=/s\$1/u,workdir=/s\$1/w /s\$1/r; }
echo \"== 1. upper layer emptied under its mounted overlay\"
view 1
echo lease >/s1/r/etc/lease-file; echo lease >>/s1/r/etc/passwd
rm -rf /s1/u/* /s1/w/*
[ -e /s1/r/etc/lease-file ] && echo \"lease-file still visible: stale (unsafe)\" || echo \"lease-file gone\"
tail -1 /s1/r/etc/passwd | grep -q lease && echo \"passwd still has the lease line: stale (unsafe)\" || echo \"passwd is the image one\"
echo new 2>/dev/null >/s1/r/etc/new-file && echo \"a new file writes\" || echo \"a new file cannot be written under /etc (unsafe)\"
umount -l /s1/r; umount -l /s1
echo \"== 2. a second overlay mounted over the root of a shell\"
view 1; view 2; echo one >/s1/r/etc/mark-one
setpriv --bounding-set -sys_admin -- chroot /s1/r sh -c \"sleep 0.3; [ -e /etc/mark-one ] && echo \\\"the shell still sees its old view\\\" || echo \\\"the shell sees the new view\\\"\" &
sleep 0.1; mount --move /s2/r /s1/r && echo \"new view moved over the root of the shell\"; wait
umount -l /s1/r 2>/dev/null; umount -l /s1/r 2>/dev/null; umount -l /s1 /s2 2>/dev/null
echo \"== 3. re-root into a fresh view moved into the old one\"
view 1; view 2
setpriv --bounding-set -sys_admin -- chroot /s1/r sh -c \"echo lease >/etc/lease-file; sleep 0.4; cd /next && exec chroot . sh -c \\\"[ -e /etc/lease-file ] && echo \\\\\\\"re-rooted shell sees a file of the last lease (unsafe)\\\\\\\" || echo \\\\\\\"re-rooted shell sees the image\\\\\\\"; echo fresh >/etc/fresh-mark; sleep 0.6\\\"\" &
A=\$!
sleep 0.2; mkdir /s1/r/next && mount --move /s2/r /s1/r/next && echo \"fresh view moved into the old one\"
sleep 0.6
mount --move /s1/r/next /s2/r && echo \"fresh view moved out while it is the root of the shell\"
umount -l /s1/r && echo \"old view detached\"
[ \"\$(stat -c %d:%i /proc/\$A/root/)\" = \"\$(stat -c %d:%i /s2/r/)\" ] && echo \"the shell has the fresh view as its root\" || echo \"the shell does not have the fresh view as its root the fresh view\"
[ -e /s2/u/etc/fresh-mark ] && echo \"its write is in the fresh upper layer\" || echo \"its write is not in the fresh upper layer\"
wait
"'
