/*
 * The broker's requests to a session's init (sessionInit.c, included there): reuse of an untouched
 * session in place. A lease that wrote nothing anywhere in its view leaves nothing to remove, so
 * at its release the slot keeps the session's namespaces and root, and its bash `exec`s a fresh
 * bash in place (dockerShell.ts) as without isolation, once this init has said the session is
 * untouched and moved the working directory to the next lease's.
 *
 *   (at its start)  ->  ready
 *   rebind ID  ->  ok | dirty WHY | failed WHY
 *   rewind ID  ->  ok | rewound | dirty WHY | failed WHY
 *     The same, but a lease that changed only its view (files, IPC objects) gets `rewound`: the
 *     view is rolled back to the image's in these namespaces (sessionRewind.c), then `settle`.
 *
 * `ok`: nothing of the last lease survives bash's exec, and the view's /tmp/s now holds /tmp/s/ID
 * (the container's, bound in) instead of the last lease's. `dirty`: something does (the broker then
 * ends the session and starts a new one, as it does without this). What is checked (sessionTraces.c),
 * each against the session's state before its first lease and after each rebind:
 *   - processes: none in the namespace but this init and bash (a zombie is none);
 *   - disk: the stage tmpfs (the overlay's upper layer, /dev with /dev/shm, the empty /tmp/s) has
 *     the same inodes and blocks in use, and every inode on it the same name, number, mode,
 *     owner, links, size, device and modification and change times: any write, copy-up, whiteout,
 *     rename, link, chmod, chown, xattr or a file made and removed again shows there;
 *   - mqueue: no POSIX message queue, and its mount's root as it was; the devpts root and ptmx too;
 *   - ipc: no System V shared memory segment, semaphore set or message queue;
 *   - limits: bash's resource limits, nice value, scheduling policy and priority, I/O priority,
 *     CPU affinity, oom_score_adj, coredump_filter and timer slack, which survive an exec.
 *
 * The pipes are opened by the container's spawner from the broker's directory, which no session
 * sees, and are this init's alone (close-on-exec: bash never has them). The init holds capabilities
 * the session's processes lack and is not dumpable: none of them can ptrace it or open its
 * /proc/1/fd. Any failure answers `failed`: the broker's fallback, a new session, is always safe.
 */
#include <poll.h>
#include <stdint.h>
#include <sys/signalfd.h>

#define WORKDIR_ID_MAX 128
/* How long a rebind waits, at most, for a killed process of the lease to finish exiting. */
#define EXITING_WAIT_MS 50

struct control {
  int in, out;
  /* The stage tmpfs; its h (the session's /tmp/s); the session's /tmp/s (that h bound); the container's /tmp/s. */
  int stage, h, session_tmps, container_tmps;
  /* The session's own procfs, mqueue and devpts. */
  int proc, mqueue, pts;
  char workdir[WORKDIR_ID_MAX];
  char why[96];
  pid_t shell;
  /* At the lease's start: the stage's inodes and blocks in use, its fingerprint, and bash's limits'. */
  unsigned long long inodes, blocks;
  uint64_t disk, limits[7];
};

/* `IN,OUT` into `c`, or NULL for `-`. Both close-on-exec from here on. */
static struct control *control_parse(const char *fds, struct control *c) {
  if (!strcmp(fds, "-")) return NULL;
  memset(c, 0, sizeof *c);
  if (sscanf(fds, "%d,%d", &c->in, &c->out) != 2 || c->in < 3 || c->out < 3) {
    fprintf(stderr, "session-init: bad control descriptors %s\n", fds);
    _exit(2);
  }
  if (fcntl(c->in, F_SETFD, FD_CLOEXEC) < 0 || fcntl(c->out, F_SETFD, FD_CLOEXEC) < 0) fail(106, "no control descriptors", fds);
  c->stage = c->h = c->session_tmps = c->container_tmps = c->proc = c->mqueue = c->pts = -1;
  return c;
}

static void control_close(struct control *c) {
  int *fds[] = {&c->in, &c->out, &c->stage, &c->h, &c->session_tmps, &c->container_tmps, &c->proc, &c->mqueue, &c->pts};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
    if (*fds[i] >= 0) close(*fds[i]);
    *fds[i] = -1;
  }
}

/* What a rebind needs, held before the move over `/` (none of it is reachable from the session's root). */
static void control_open(struct control *c, const char *stage, const char *root, const char *workdir_id) {
  char path[PATH_MAX];
  snprintf(c->workdir, sizeof c->workdir, "%s", strcmp(workdir_id, "-") ? workdir_id : "");
  format(path, sizeof path, "%s/h", stage);
  c->h = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  format(path, sizeof path, "%s/tmp/s", root);
  if (c->workdir[0]) c->session_tmps = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  c->container_tmps = open("/tmp/s", O_PATH | O_DIRECTORY | O_CLOEXEC);
  format(path, sizeof path, "%s/proc", root);
  c->proc = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  format(path, sizeof path, "%s/dev/mqueue", root);
  c->mqueue = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  format(path, sizeof path, "%s/dev/pts", root);
  c->pts = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void control_hold_sigchld(sigset_t *before) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, before);
}

/* What the lease left (sessionTraces.c, included after this file). */
static void limits_fingerprint(struct control *c, uint64_t out[7]);
static void control_baseline(struct control *c);
static const char *dirty_shell(struct control *c);
static const char *dirty_view(struct control *c);

static int valid_workdir_id(const char *id) {
  size_t n = strlen(id);
  if (n == 0 || n >= WORKDIR_ID_MAX || !((id[0] >= '0' && id[0] <= '9') || (id[0] >= 'a' && id[0] <= 'z'))) return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = id[i];
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || ch == '.' || ch == '-')) return 0;
  }
  return 1;
}

/*
 * The view's /tmp/s/OLD (the container's, bound in) replaced by /tmp/s/ID: the old bind detached,
 * its mountpoint on the stage removed, the new one made and the container's directory bound there.
 * In the session's mount namespace (this init's), through descriptors held since the setup.
 */
static const char *rebind_workdir(struct control *c, const char *id) {
  char from[PATH_MAX], to[PATH_MAX];
  if (!c->workdir[0] || c->session_tmps < 0 || c->container_tmps < 0 || c->h < 0) return "failed: no working directory to move";
  snprintf(to, sizeof to, "/proc/self/fd/%d/%s", c->session_tmps, c->workdir);
  if (umount2(to, MNT_DETACH) < 0) return "failed: cannot unmount the last working directory";
  if (unlinkat(c->h, c->workdir, AT_REMOVEDIR) < 0 && errno != ENOENT) return "failed: cannot remove the last working directory's mountpoint";
  c->workdir[0] = '\0';
  if (mkdirat(c->h, id, 0755) < 0) return "failed: cannot make the working directory's mountpoint";
  snprintf(from, sizeof from, "/proc/self/fd/%d/%s", c->container_tmps, id);
  snprintf(to, sizeof to, "/proc/self/fd/%d/%s", c->session_tmps, id);
  if (mount(from, to, NULL, MS_BIND, NULL) < 0) return "failed: cannot bind the working directory";
  memcpy(c->workdir, id, strlen(id) + 1); /* valid_workdir_id: shorter than the buffer */
  return NULL;
}

/* Snapshots (sessionSnapshot.c, included after this file). */
static const char *snap_take(struct control *c, const char *id);
static int snap_layered;

/* Rewinds (sessionRewind.c, included after this file). */
static const char *rewind_view(struct control *c, const char *id);
static const char *rewind_settle(struct control *c);
static int rewind_root;

static const char *request(struct control *c, char *line) {
  /* Between a rewind and its settle, bash is on its way into the fresh view: nothing else is done. */
  if (rewind_root >= 0) return strcmp(line, "settle") ? "failed: a rewind is pending" : rewind_settle(c);
  if (!strncmp(line, "snap ", 5)) return snap_take(c, line + 5);
  /* A session started from a snapshot has more than the image beneath its view: never reused. */
  if (snap_layered) return "started from a snapshot";
  int may_rewind = !strncmp(line, "rewind ", 7);
  if ((!may_rewind && strncmp(line, "rebind ", 7) != 0) || !valid_workdir_id(line + 7)) return "failed: unknown request";
  const char *why = dirty_shell(c);
  /*
   * The broker killed every process of the lease before asking, but one may still be exiting (its
   * files, sockets among them, not yet closed): waited for a little (a zombie counts as gone: it
   * holds nothing; the serve loop reaps it), never counted as gone while it is not.
   */
  for (int i = 0; why && !strncmp(why, "processes", 9) && i < EXITING_WAIT_MS; i++) {
    usleep(1000);
    why = dirty_shell(c);
  }
  if (why) return why;
  why = dirty_view(c);
  if (why) return may_rewind ? rewind_view(c, line + 7) : why;
  why = rebind_workdir(c, line + 7);
  if (why) return why;
  control_baseline(c);
  return "ok";
}

static void answer(struct control *c, const char *what) {
  char line[256];
  int n = snprintf(line, sizeof line, "%s%s\n", strncmp(what, "ok", 2) && strncmp(what, "failed", 6) && strcmp(what, "rewound") ? "dirty " : "", what);
  if (n > 0 && write(c->out, line, (size_t)n) < 0) { /* the broker went away: it closes the shell */ }
}

/*
 * The init's wait for its shell, serving the broker's requests meanwhile: the shell's end (SIGCHLD,
 * held since before its fork, read from a signalfd) and a request on the broker's pipe, in one poll.
 * Other children (orphans of the session) are reaped as they end. When the broker closes its pipe,
 * the init just waits.
 */
static int control_serve(struct control *c, pid_t shell) {
  c->shell = shell;
  /* Not dumpable: nothing of the session may ptrace it or open its /proc/1/fd (it lacks the capabilities anyway). */
  prctl(PR_SET_DUMPABLE, 0);
  /* A broker gone while an answer is written: EPIPE, not this init's end (the shell's own disposition is its own: set after its fork). */
  signal(SIGPIPE, SIG_IGN);
  limits_fingerprint(c, c->limits);
  control_baseline(c);
  if (write(c->out, "ready\n", 6) < 0) { /* the broker went away: it closes the shell */ }
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  char buf[512];
  size_t used = 0;
  for (;;) {
    int st;
    pid_t got;
    while ((got = waitpid(-1, &st, WNOHANG)) > 0) {
      if (got == shell) return shell_status(st);
    }
    if (sfd < 0) return wait_for(shell);
    struct pollfd fds[2] = {{sfd, POLLIN, 0}, {c->in, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return wait_for(shell);
    }
    if (fds[0].revents) {
      struct signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) > 0) {}
    }
    if (c->in < 0 || !(fds[1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = read(c->in, buf + used, sizeof buf - 1 - used);
    if (n <= 0) {
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      close(c->in); /* the broker closed its side: poll skips a negative descriptor */
      c->in = -1;
      continue;
    }
    used += (size_t)n;
    buf[used] = '\0';
    char *nl;
    while ((nl = strchr(buf, '\n'))) {
      *nl = '\0';
      /* Orphans that ended meanwhile are reaped before the count of processes. */
      while ((got = waitpid(-1, &st, WNOHANG)) > 0) {
        if (got == shell) return shell_status(st);
      }
      answer(c, request(c, buf));
      used -= (size_t)(nl + 1 - buf);
      memmove(buf, nl + 1, used + 1);
    }
    if (used == sizeof buf - 1) used = 0; /* no request is this long */
  }
}
