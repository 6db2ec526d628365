/*
 * A rewind: the release of a lease that changed its view (files, IPC objects), but left no process
 * and none of bash's limits changed, rolls the view back to the image's in the session's own
 * namespaces, instead of a new session in new ones (sessionReuse.c's `rewind ID`; included by
 * sessionInit.c after it).
 *
 * Why not just empty the overlay's upper layer: overlayfs caches what it looked up, so a layer
 * changed under a mounted overlay shows stale files and refuses writes in directories it copied up
 * (bench/rewind/probe.sh). And a mount over bash's root is never seen by bash: a process's root is
 * a mount, not a path. So the fresh view is a new one, and bash moves into it itself:
 *
 *   rewind ID  ->  rewound
 *     1. The last view's stage (its tmpfs) is moved into that view, so it goes with it.
 *     2. A fresh view is made on a new tmpfs at the stage's path, as at a session's start, with
 *        /tmp/s/ID bound in; the IPC namespace's objects are removed.
 *     3. The fresh view's root is moved into the last view at /dev/.bkr-next, and this program
 *        bound at /dev/.bkr-reroot. The broker's exec line then runs
 *        `/dev/.bkr-reroot reroot /dev/.bkr-next -- BASH...`: chdir, chroot (bash keeps
 *        CAP_SYS_CHROOT), exec: the fresh bash's root is the fresh view.
 *   settle  ->  ok | failed WHY
 *     4. Once bash's root is the fresh view (checked: its /proc/PID/root against the view's root),
 *        the fresh view is moved out of the last one, the last one is detached whole (its tmpfs,
 *        procfs, binds: freed with their last user) and the fresh one moved over `/`, where the
 *        session's extra shells and file routes (which enter the namespace) find it.
 *
 * Kept: the pid, IPC, network and mount namespaces, this init and bash's process. Nothing of the
 * lease is in them: no process of it lives (the check before), its IPC objects are removed, its
 * sockets went with its processes, its network policy was not changed (the broker reuses no shell
 * whose network changed). Any failure fails the rewind, and the broker then ends the session and
 * starts a new one: correctness never depends on this path.
 */
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>

/* Relative to this init's working directory, the root of the view bash is in until it re-roots. */
#define REWIND_OLD_STAGE ".bkr-old-stage"
#define REWIND_NEXT "dev/.bkr-next"
#define REWIND_LAUNCHER "dev/.bkr-reroot"

/* What a session's start was given: a rewind makes its view the same way. NULL: not served (no rewind). */
static const char *rewind_template, *rewind_stage, *rewind_disk_bytes;
/* The fresh view's root while bash has not moved into it yet (-1: no rewind pending). */
static int rewind_root = -1;

static int build_view(const char *template, const char *stage, const char *disk_bytes, const char *workdir_id, struct control *control, int from_snapshot);

/* `failed: WHAT: the error`, in the control's buffer. */
static const char *rewind_failed(struct control *c, const char *what) {
  snprintf(c->why, sizeof c->why, "failed: %s: %s", what, strerror(errno));
  return c->why;
}

/* Every System V object of the session's IPC namespace, and every POSIX queue of its mqueue, removed. */
static void clear_ipc(struct control *c) {
  struct shm_info shm;
  struct seminfo sem;
  struct msginfo msg;
  int max = shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&shm);
  for (int i = 0; i <= max; i++) {
    struct shmid_ds ds;
    int id = shmctl(i, SHM_STAT, &ds);
    if (id >= 0) shmctl(id, IPC_RMID, NULL);
  }
  max = semctl(0, 0, SEM_INFO, (void *)&sem);
  for (int i = 0; i <= max; i++) {
    struct semid_ds ds;
    int id = semctl(i, 0, SEM_STAT, (void *)&ds);
    if (id >= 0) semctl(id, 0, IPC_RMID);
  }
  max = msgctl(0, MSG_INFO, (struct msqid_ds *)(void *)&msg);
  for (int i = 0; i <= max; i++) {
    struct msqid_ds ds;
    int id = msgctl(i, MSG_STAT, &ds);
    if (id >= 0) msgctl(id, IPC_RMID, NULL);
  }
  if (c->mqueue >= 0) snap_empty(c->mqueue);
}

/* The descriptors control_open took on the last view, closed: a rewind opens them on the fresh one. */
static void close_view_fds(struct control *c) {
  int *fds[] = {&c->stage, &c->h, &c->session_tmps, &c->container_tmps, &c->proc, &c->mqueue, &c->pts};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
    if (*fds[i] >= 0) close(*fds[i]);
    *fds[i] = -1;
  }
}

/* Steps 1 to 3 (above); `id` is the next lease's working directory id (valid_workdir_id). */
static const char *rewind_view(struct control *c, const char *id) {
  char root[PATH_MAX];
  if (!rewind_template || rewind_root >= 0) return "failed: no rewind here";
  format(root, sizeof root, "%s/r", rewind_stage);
  clear_ipc(c);
  const char *why = NULL;
  if (ipc_objects(c, &why)) return why;
  if (mkdir(REWIND_OLD_STAGE, 0700) < 0 && errno != EEXIST) return rewind_failed(c, "cannot make the last stage's mountpoint");
  if (mount(rewind_stage, REWIND_OLD_STAGE, NULL, MS_MOVE, NULL) < 0) return rewind_failed(c, "cannot move the last stage");
  close_view_fds(c);
  /* A failure here ends this init, and with it the session: the broker starts a new one. */
  c->stage = build_view(rewind_template, rewind_stage, rewind_disk_bytes, id, c, 0);
  rewind_root = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  /* By its path: /proc/self/exe names the file in the container's mount namespace (it ran before the unshare), which a bind here refuses. */
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';
  int launcher = open(REWIND_LAUNCHER, O_WRONLY | O_CREAT | O_CLOEXEC, 0500);
  if (launcher >= 0) close(launcher);
  if (rewind_root < 0 || launcher < 0 || n <= 0 || mount(self, REWIND_LAUNCHER, NULL, MS_BIND, NULL) < 0) return rewind_failed(c, "cannot bind the launcher");
  if (mkdir(REWIND_NEXT, 0700) < 0 || mount(root, REWIND_NEXT, NULL, MS_MOVE, NULL) < 0) return rewind_failed(c, "cannot move the fresh view in");
  return "rewound";
}

/* Step 4 (above). */
static const char *rewind_settle(struct control *c) {
  char root[PATH_MAX], path[64];
  if (rewind_root < 0) return "failed: no rewind pending";
  format(root, sizeof root, "%s/r", rewind_stage);
  struct stat shell_root, fresh;
  snprintf(path, sizeof path, "%d/root", (int)c->shell);
  int moved = fstatat(c->proc, path, &shell_root, 0) == 0 && fstat(rewind_root, &fresh) == 0 && shell_root.st_dev == fresh.st_dev && shell_root.st_ino == fresh.st_ino;
  close(rewind_root);
  rewind_root = -1;
  if (!moved) return "failed: the shell is not in the fresh view";
  if (mount(REWIND_NEXT, root, NULL, MS_MOVE, NULL) < 0) return rewind_failed(c, "cannot move the fresh view out");
  /* This init's working directory is the last view's root: detached whole, freed with its last user. */
  if (umount2(".", MNT_DETACH) < 0) return rewind_failed(c, "cannot detach the last view");
  if (chdir(root) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0) return rewind_failed(c, "cannot move the fresh view over /");
  control_baseline(c);
  return "ok";
}

/*
 * `session-init reroot DIR -- COMMAND...`: run by bash's exec line after a rewind (in bash's
 * process, with bash's capabilities): its root and working directory become DIR, then COMMAND.
 * On a failure it exits: the broker sees its shell end and starts a new session.
 */
static int reroot(const char *dir, char **command) {
  if (chdir(dir) < 0 || chroot(".") < 0 || chdir("/") < 0) {
    fprintf(stderr, "session-init: cannot move into %s: %s\n", dir, strerror(errno));
    return 106;
  }
  execvp(command[0], command);
  fprintf(stderr, "session-init: cannot start %s: %s\n", command[0], strerror(errno));
  return 106;
}
