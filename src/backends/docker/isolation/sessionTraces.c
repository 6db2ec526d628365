/*
 * What a lease may leave in a session, for the init's rebind (sessionReuse.c; both included by
 * sessionInit.c): fingerprints of the stage tmpfs and of what of bash survives its exec, taken
 * before the first lease and after each rebind, and the checks that compare them with now, besides
 * the processes and IPC objects no untouched session has. Each check names what it found.
 */
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/statfs.h>

#define WALK_DEPTH_MAX 32

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

/* What of the last lease lives on in the session's processes (none but bash, its limits), or NULL: a rewind can undo nothing of it. */
static const char *dirty_shell(struct control *c) {
  if (other_processes(c)) return "processes: the lease left one";
  uint64_t limits[LIMITS_COUNT];
  limits_fingerprint(c, limits);
  for (size_t i = 0; i < LIMITS_COUNT; i++) {
    if (!limits[i] || limits[i] != c->limits[i]) return snprintf(c->why, sizeof c->why, "limits: bash's %s changed", LIMITS[i]), c->why;
  }
  return NULL;
}

/* What of the last lease is in the session's view (IPC objects, the disk), or NULL when nothing is: dirty_shell's checks come first. */
static const char *dirty_view(struct control *c) {
  const char *why = NULL;
  if (ipc_objects(c, &why)) return why;
  unsigned long long inodes, blocks;
  if (disk_counts(c, &inodes, &blocks) < 0 || inodes != c->inodes || blocks != c->blocks) return "disk: the lease wrote";
  if (disk_fingerprint(c) != c->disk || !c->disk) return "disk: the lease changed a file, a directory or its attributes";
  return NULL;
}
