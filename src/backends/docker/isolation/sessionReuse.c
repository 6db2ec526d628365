/*
 * The broker's requests to a session's init (sessionInit.c, included there): reuse of an untouched
 * session in place. A lease that wrote nothing anywhere in its view leaves nothing to remove, so
 * at its release the slot keeps the session's namespaces and root, and its bash `exec`s a fresh
 * bash in place (dockerShell.ts) as without isolation, once this init has said the session is
 * untouched and moved the working directory to the next lease's.
 *
 *   (at its start)  ->  ready
 *   rebind ID  ->  ok | dirty WHY | failed WHY
 *
 * `ok`: nothing of the last lease survives bash's exec, and the view's /tmp/s now holds /tmp/s/ID
 * (the container's, bound in) instead of the last lease's. `dirty`: something does (the broker then
 * ends the session and starts a new one, as it does without this). What is checked, each against
 * the session's state before its first lease and after each rebind:
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
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/signalfd.h>
#include <sys/statfs.h>

#define WORKDIR_ID_MAX 128
#define WALK_DEPTH_MAX 32

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

/* FNV-1a, 64 bits: a fingerprint, not a defence (a session cannot choose what the stage holds without changing it). */
static uint64_t mix(uint64_t h, const void *data, size_t size) {
  const unsigned char *p = data;
  for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

static uint64_t mix_stat(uint64_t h, const struct stat *st) {
  const long long fields[] = {(long long)st->st_ino, st->st_mode, st->st_uid, st->st_gid, (long long)st->st_nlink, (long long)st->st_size, (long long)st->st_rdev,
                              st->st_mtim.tv_sec, st->st_mtim.tv_nsec, st->st_ctim.tv_sec, st->st_ctim.tv_nsec};
  return mix(h, fields, sizeof fields);
}

/* Every inode under `dir` (which it closes), depth first in directory order, on the stage's device only. */
static int walk(int dir, dev_t dev, int depth, uint64_t *h) {
  DIR *d = fdopendir(dir);
  if (!d) return close(dir), -1;
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) { rc = -1; break; }
    *h = mix(*h, e->d_name, strlen(e->d_name) + 1);
    *h = mix_stat(*h, &st);
    if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
      int sub = depth < WALK_DEPTH_MAX ? openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
      rc = sub < 0 ? -1 : walk(sub, dev, depth + 1, h);
    }
  }
  closedir(d);
  return rc;
}

/* The stage's inodes and blocks in use. */
static int disk_counts(struct control *c, unsigned long long *inodes, unsigned long long *blocks) {
  struct statfs fs;
  if (fstatfs(c->stage, &fs) < 0) return -1;
  *inodes = fs.f_files - fs.f_ffree;
  *blocks = fs.f_blocks - fs.f_bfree;
  return 0;
}

/* Every inode of the stage, and the roots of the session's mqueue and devpts (a chmod there survives); 0: cannot tell. */
static uint64_t disk_fingerprint(struct control *c) {
  struct stat st;
  uint64_t h = 14695981039346656037ULL;
  if (fstat(c->stage, &st) < 0) return 0;
  h = mix_stat(h, &st);
  int dir = openat(c->stage, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0 || walk(dir, st.st_dev, 0, &h) < 0) return 0;
  if (fstat(c->mqueue, &st) < 0) return 0;
  h = mix_stat(h, &st);
  if (fstat(c->pts, &st) < 0) return 0;
  h = mix_stat(h, &st);
  if (fstatat(c->pts, "ptmx", &st, AT_SYMLINK_NOFOLLOW) == 0) h = mix_stat(h, &st);
  return h ? h : 1;
}

/* A file of the session's procfs about bash, whole, as a fingerprint; 0 when it cannot be read. */
static uint64_t proc_file(struct control *c, const char *name) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "%d/%s", (int)c->shell, name);
  int fd = openat(c->proc, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  return n < 0 ? 0 : mix(14695981039346656037ULL, buf, (size_t)n) | 1;
}

/* What of bash survives its exec and a process of its session can change from outside it: one fingerprint each, named. */
static const char *const LIMITS[] = {"resource limits", "oom_score_adj", "coredump_filter", "nice value", "scheduling policy", "I/O priority", "CPU affinity"};
#define LIMITS_COUNT (sizeof LIMITS / sizeof LIMITS[0])

static void limits_fingerprint(struct control *c, uint64_t out[LIMITS_COUNT]) {
  /* Not timerslack_ns: another process's can be written only with CAP_SYS_NICE, which a session lacks. */
  static const char *FILES[] = {"limits", "oom_score_adj", "coredump_filter"};
  for (size_t i = 0; i < 3; i++) out[i] = proc_file(c, FILES[i]);
  errno = 0;
  long long nice = getpriority(PRIO_PROCESS, (id_t)c->shell);
  out[3] = errno ? 0 : (uint64_t)(nice + 1000);
  struct sched_param param;
  int policy = sched_getscheduler(c->shell);
  out[4] = policy < 0 || sched_getparam(c->shell, &param) < 0 ? 0 : ((uint64_t)policy << 32 | (uint32_t)param.sched_priority) + 1;
  long io = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, c->shell);
  out[5] = io < 0 ? 0 : (uint64_t)io + 1;
  cpu_set_t cpus;
  out[6] = sched_getaffinity(c->shell, sizeof cpus, &cpus) < 0 ? 0 : mix(14695981039346656037ULL, &cpus, sizeof cpus) | 1;
}

/* The state a later lease must find again: taken before the first lease and after each rebind. */
static void control_baseline(struct control *c) {
  if (disk_counts(c, &c->inodes, &c->blocks) < 0) c->inodes = c->blocks = ~0ULL;
  c->disk = disk_fingerprint(c);
}

/* Whether any process but this init and bash is in the namespace (zombies aside: they hold nothing). */
static int other_processes(struct control *c) {
  int dir = openat(c->proc, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dir < 0 ? NULL : fdopendir(dir);
  if (!d) return dir >= 0 ? close(dir), 1 : 1;
  struct dirent *e;
  int found = 0;
  while (!found && (e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 1 || pid == c->shell) continue;
    char path[64], stat[512];
    snprintf(path, sizeof path, "%ld/stat", pid);
    int fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue; /* gone meanwhile */
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    stat[n > 0 ? n : 0] = '\0';
    const char *state = strrchr(stat, ')');
    found = !(state && state[1] == ' ' && state[2] == 'Z');
  }
  closedir(d);
  return found;
}

/* Whether a System V IPC object or a POSIX message queue exists in the session's IPC namespace (this init's). */
static int ipc_objects(struct control *c, const char **why) {
  struct shm_info shm;
  struct seminfo sem;
  struct msginfo msg;
  if (shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&shm) < 0 || shm.used_ids > 0) return *why = "ipc: a System V shared memory segment", 1;
  if (semctl(0, 0, SEM_INFO, (void *)&sem) < 0 || sem.semusz > 0) return *why = "ipc: a System V semaphore set", 1;
  if (msgctl(0, MSG_INFO, (struct msqid_ds *)(void *)&msg) < 0 || msg.msgpool > 0) return *why = "ipc: a System V message queue", 1;
  int dir = openat(c->mqueue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dir < 0 ? NULL : fdopendir(dir);
  if (!d) return *why = "mqueue: cannot list", 1;
  struct dirent *e;
  int found = 0;
  while (!found && (e = readdir(d))) found = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return found ? (*why = "mqueue: a POSIX message queue", 1) : 0;
}

/* What of the last lease survives bash's exec, or NULL when nothing does. */
static const char *dirty(struct control *c) {
  const char *why = NULL;
  if (other_processes(c)) return "processes: the lease left one";
  if (ipc_objects(c, &why)) return why;
  uint64_t limits[LIMITS_COUNT];
  limits_fingerprint(c, limits);
  for (size_t i = 0; i < LIMITS_COUNT; i++) {
    if (!limits[i] || limits[i] != c->limits[i]) return snprintf(c->why, sizeof c->why, "limits: bash's %s changed", LIMITS[i]), c->why;
  }
  unsigned long long inodes, blocks;
  if (disk_counts(c, &inodes, &blocks) < 0 || inodes != c->inodes || blocks != c->blocks) return "disk: the lease wrote";
  if (disk_fingerprint(c) != c->disk || !c->disk) return "disk: the lease changed a file, a directory or its attributes";
  return NULL;
}

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

static const char *request(struct control *c, char *line) {
  if (strncmp(line, "rebind ", 7) != 0 || !valid_workdir_id(line + 7)) return "failed: unknown request";
  const char *why = dirty(c);
  if (why) return why;
  why = rebind_workdir(c, line + 7);
  if (why) return why;
  control_baseline(c);
  return "ok";
}

static void answer(struct control *c, const char *what) {
  char line[256];
  int n = snprintf(line, sizeof line, "%s%s\n", strncmp(what, "ok", 2) && strncmp(what, "failed", 6) ? "dirty " : "", what);
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
