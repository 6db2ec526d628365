/*
 * A session's namespaces in one process, without a fork and an exec per step: what the setup
 * script of isolationScript.ts does with unshare, mount, cp, chroot and setpriv (about ten
 * processes), done here with direct system calls. The broker compiles it at its start (static, so
 * it runs in any image) and puts it in each container's pipes directory; the spawner runs it, and
 * falls back to the script where it cannot.
 *
 *   session-init session TEMPLATE STAGE DISK_BYTES WORKDIR_ID -- SHELL...
 *     New mount, pid and IPC namespaces. This process waits in the container's; its child is the
 *     namespaces' init (pid 1): it mounts a tmpfs of DISK_BYTES at STAGE named bkr-session, copies
 *     TEMPLATE into it, makes every mount of the template's table STAGE/fstab, binds the working
 *     directory /tmp/s/WORKDIR_ID (`-`: none), moves STAGE/r over `/`, and starts SHELL chrooted
 *     there, leading its own process group, without CAP_SYS_ADMIN. It exits with SHELL's status;
 *     the kernel then ends what is left in the namespace and drops its mounts.
 *   session-init session TEMPLATE STAGE DISK_BYTES WORKDIR_ID CONTROL -- SHELL...
 *     The same, serving the broker on CONTROL (`IN,OUT`: two descriptors of pipes only the broker
 *     reaches, or `-`): see sessionReuse.c. The shell never gets them.
 *   session-init session TEMPLATE STAGE DISK_BYTES WORKDIR_ID CONTROL NET -- SHELL...
 *     The same, in the network NET names (`shared`, `none`, `full`): see sessionNet.c.
 *   session-init net PID MODE
 *     A live session's network policy changed: see sessionNet.c.
 *   session-init reroot DIR -- COMMAND...
 *     bash's way into its rewound view: see sessionRewind.c.
 *   session-init join|enter|terminal PID -- ...
 *     A process in the namespaces of the container process PID (a session's bash): see sessionEnter.c.
 *
 * SHELL gets BROKER_SHELL_PID, its pid in the container (kills and the pids cgroup use it).
 * Exit statuses of a failed setup: 101 the tmpfs, 102 the template's copy, 103 a mount of the
 * table, 104 the move over `/`, 105 the namespaces, 106 the shell's start, 107 a path too long.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

static void fail(int status, const char *what, const char *path);
__attribute__((format(printf, 3, 4))) static void format(char *buf, size_t size, const char *fmt, ...);
static int shell_status(int st);
static int wait_for(pid_t child);
static void export_container_pid(void);
static void exec_shell(char **shell);
#include "treeCopy.c"
#include "sessionReuse.c"
#include "sessionTraces.c"
#include "sessionEnter.c"
#include "sessionSnapshot.c"
#include "sessionRewind.c"
#include "sessionNet.c"

#define CAP_SYS_ADMIN_BIT 21
#define CAP_NET_ADMIN_BIT 12

/* Built with -DSESSION_INIT_TIMES: each step's end on stderr, in microseconds of CLOCK_MONOTONIC (the cost's measurement). */
#ifdef SESSION_INIT_TIMES
#include <time.h>
#define STEP(name) do { struct timespec t_; clock_gettime(CLOCK_MONOTONIC, &t_); fprintf(stderr, "step %s %ld\n", name, t_.tv_sec * 1000000L + t_.tv_nsec / 1000); } while (0)
#else
#define STEP(name) do { } while (0)
#endif

/* Signals the waiters ignore: the broker's ^C goes to the shell's process group, never to them. */
static const int IGNORED[] = {SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU};

static void dispositions(void (*handler)(int)) {
  for (size_t i = 0; i < sizeof IGNORED / sizeof IGNORED[0]; i++) signal(IGNORED[i], handler);
}

static void fail(int status, const char *what, const char *path) {
  fprintf(stderr, "session-init: %s %s: %s\n", what, path ? path : "", strerror(errno));
  _exit(status);
}

/* snprintf that refuses to cut a path short. */
__attribute__((format(printf, 3, 4))) static void format(char *buf, size_t size, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(buf, size, fmt, args);
  va_end(args);
  if (n < 0 || (size_t)n >= size) {
    errno = ENAMETOOLONG;
    fail(107, "path too long:", fmt);
  }
}

/* The status a shell's `wait` would give: its exit code, or 128 + the signal that ended it. */
static int shell_status(int st) {
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Waits for `child` (reaping any other child met meanwhile, as an init must) and returns its status. */
static int wait_for(pid_t child) {
  for (;;) {
    int st;
    pid_t got = waitpid(-1, &st, 0);
    if (got == child) return shell_status(st);
    if (got < 0 && errno != EINTR) return 127;
  }
}

/* fstab's escapes (\040 for a space and the like) in place. */
static void unescape(char *s) {
  char *out = s;
  for (; *s; s++) {
    if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
      *out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
      s += 3;
    } else {
      *out++ = *s;
    }
  }
  *out = '\0';
}

/* mount(8)'s reading of an options field: the words it makes flags of, the rest the filesystem's data. */
static unsigned long mount_flags(const char *options, char *data, size_t size) {
  static const struct { const char *word; unsigned long flag; } WORDS[] = {
      {"defaults", 0}, {"rw", 0}, {"ro", MS_RDONLY}, {"nosuid", MS_NOSUID}, {"nodev", MS_NODEV},
      {"noexec", MS_NOEXEC}, {"bind", MS_BIND}, {"rbind", MS_BIND | MS_REC}, {"remount", MS_REMOUNT},
      {"relatime", MS_RELATIME}, {"noatime", MS_NOATIME}, {"strictatime", MS_STRICTATIME},
  };
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", options);
  unsigned long flags = 0;
  data[0] = '\0';
  char *save = NULL;
  for (char *word = strtok_r(copy, ",", &save); word; word = strtok_r(NULL, ",", &save)) {
    size_t i = 0;
    for (; i < sizeof WORDS / sizeof WORDS[0]; i++) {
      if (!strcmp(word, WORDS[i].word)) { flags |= WORDS[i].flag; break; }
    }
    if (i == sizeof WORDS / sizeof WORDS[0]) {
      size_t used = strlen(data);
      snprintf(data + used, size - used, "%s%s", used ? "," : "", word);
    }
  }
  return flags;
}

/* Every line of the table, in order, as `mount -a` makes them. */
static void mount_table(const char *table) {
  FILE *f = fopen(table, "re");
  if (!f) fail(103, "cannot read", table);
  char line[8192];
  while (fgets(line, sizeof line, f)) {
    char source[PATH_MAX], target[PATH_MAX], type[64], options[4096], data[4096];
    if (line[0] == '#' || sscanf(line, "%4095s %4095s %63s %4095s", source, target, type, options) != 4) continue;
    unescape(source);
    unescape(target);
    unsigned long flags = mount_flags(options, data, sizeof data);
    if (!strcmp(type, "overlay")) snap_layer_options(data, sizeof data);
    if (mount(source, target, strcmp(type, "none") ? type : NULL, flags, data[0] ? data : NULL) < 0) fail(103, "cannot mount", target);
  }
  fclose(f);
}

/*
 * CAP_SYS_ADMIN and CAP_NET_ADMIN out of the bounding set (and of the inheritable and ambient
 * sets): nothing the shell starts can have them. Without CAP_NET_ADMIN a session cannot change its
 * addresses, routes or links (take a neighbour's address, or its container's routes where it
 * shares its container's network); the container holds it only for the session init.
 */
static void drop_sys_admin(void) {
  if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN_BIT, 0, 0, 0) < 0) fail(106, "cannot drop CAP_SYS_ADMIN", NULL);
  /* A container without CAP_NET_ADMIN (network isolation off) has none to drop: EINVAL is never returned for a valid bit. */
  if (prctl(PR_CAPBSET_DROP, CAP_NET_ADMIN_BIT, 0, 0, 0) < 0) fail(106, "cannot drop CAP_NET_ADMIN", NULL);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_SYS_ADMIN_BIT, 0, 0);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_NET_ADMIN_BIT, 0, 0);
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct caps[2];
  if (syscall(SYS_capget, &header, caps) < 0) fail(106, "cannot read capabilities", NULL);
  caps[0].inheritable &= ~((1u << CAP_SYS_ADMIN_BIT) | (1u << CAP_NET_ADMIN_BIT));
  if (syscall(SYS_capset, &header, caps) < 0) fail(106, "cannot set capabilities", NULL);
}

/* This process's pid in the container: the container's procfs is still at /proc (before the chroot or setns). */
static void export_container_pid(void) {
  char self[32];
  ssize_t n = readlink("/proc/self", self, sizeof self - 1);
  if (n <= 0) fail(106, "cannot read", "/proc/self");
  self[n] = '\0';
  setenv("BROKER_SHELL_PID", self, 1);
}

static void exec_shell(char **shell) {
  dispositions(SIG_DFL);
  drop_sys_admin();
  STEP("exec");
  execvp(shell[0], shell);
  fail(106, "cannot start", shell[0]);
}

/*
 * The session's view on a new tmpfs at STAGE: the template copied in, its table mounted (the overlay
 * at STAGE/r and the rest under it), the working directory /tmp/s/WORKDIR_ID bound in, and, for a
 * served session, the control's descriptors opened on it. At a session's start, and at a rewind
 * (sessionRewind.c), where the last view's stage was moved away first. Returns the stage's
 * descriptor, or fails the process with the step's status (a rewind's failure ends its session).
 */
static int build_view(const char *template, const char *stage, const char *disk_bytes, const char *workdir_id, struct control *control, int from_snapshot) {
  char path[PATH_MAX], options[128], root[PATH_MAX];
  format(root, sizeof root, "%s/r", stage);
  format(options, sizeof options, "size=%s,mode=0755", disk_bytes);
  if (mount("bkr-session", stage, "tmpfs", 0, options) < 0) fail(101, "cannot mount the session's tmpfs on", stage);
  STEP("tmpfs");
  int from = open(template, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int to = open(stage, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (from < 0 || to < 0 || copy_tree(from, to, &(struct tree_copy){.exact = 0, .bytes = NULL}) < 0) fail(102, "cannot copy", template);
  close(from);
  STEP("copy");
  if (from_snapshot) snap_start(workdir_id);
  format(path, sizeof path, "%s/fstab", stage);
  mount_table(path);
  STEP("table");
  if (strcmp(workdir_id, "-") != 0) {
    /* An empty /tmp/s over the container's, and in it only this lease's working directory. */
    char empty[PATH_MAX], mine[PATH_MAX], workdir[PATH_MAX];
    format(empty, sizeof empty, "%s/h/%s", stage, workdir_id);
    if (mkdir(empty, 0755) < 0) fail(102, "cannot make", empty);
    format(empty, sizeof empty, "%s/h", stage);
    format(path, sizeof path, "%s/tmp/s", root);
    if (mount(empty, path, NULL, MS_BIND, NULL) < 0) fail(103, "cannot mount", path);
    format(workdir, sizeof workdir, "/tmp/s/%s", workdir_id);
    format(mine, sizeof mine, "%s/tmp/s/%s", root, workdir_id);
    if (mount(workdir, mine, NULL, MS_BIND, NULL) < 0) fail(103, "cannot mount", mine);
  }
  if (control) control_open(control, stage, root, workdir_id);
  return to;
}

/* The namespaces' pid 1: the setup, then the shell, then its status. */
static int session_init(const char *template, const char *stage, const char *disk_bytes, const char *workdir_id, struct control *control, char **shell) {
  char root[PATH_MAX];
  format(root, sizeof root, "%s/r", stage);
  STEP("init");
  int to = build_view(template, stage, disk_bytes, workdir_id, control, 1);
  /* `to` stays open as the stage's descriptor when the broker is served. */
  if (control) control->stage = to;
  else close(to);
  if (control) rewind_template = template, rewind_stage = stage, rewind_disk_bytes = disk_bytes;
  if (chdir(root) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0) fail(104, "cannot move over /", root);
  STEP("move");
  sigset_t before;
  /* SIGCHLD held from before the fork: the broker's requests and the shell's end are served by one poll. */
  if (control) control_hold_sigchld(&before);
  pid_t child = fork();
  if (child < 0) fail(106, "cannot fork", NULL);
  if (child == 0) {
    if (control) sigprocmask(SIG_SETMASK, &before, NULL);
    setpgid(0, 0);
    export_container_pid();
    /* pivot_root is refused by the engine's seccomp profile: chroot into the mount moved over `/`. */
    if (chroot(".") < 0 || chdir("/") < 0) fail(104, "cannot chroot into", root);
    exec_shell(shell);
  }
  int status = control ? control_serve(control, child) : wait_for(child);
  STEP("shell-exited");
  return status;
}

static int session(const char *template, const char *stage, const char *disk_bytes, const char *workdir_id, const char *control_fds, const char *net, char **shell) {
  struct control control_state, *control = control_parse(control_fds, &control_state);
  STEP("start");
  if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) < 0) fail(105, "cannot unshare", NULL);
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) fail(105, "cannot make / private", NULL);
  /* Before the fork: the init, and everything the session starts, is born in it. */
  net_setup(net);
  STEP("net");
  pid_t init = fork();
  if (init < 0) fail(105, "cannot fork", NULL);
  if (init == 0) {
    /* Were this waiter killed, the init goes too, and with it the whole namespace. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    _exit(session_init(template, stage, disk_bytes, workdir_id, control, shell));
  }
  /* The broker's pipes are the init's alone. */
  if (control) control_close(control);
  STEP("unshared");
  int status = wait_for(init);
  STEP("namespace-gone");
  return status;
}

int main(int argc, char **argv) {
  /* Before any disposition changes: bash's own pass to the fresh bash as an exec would pass them. */
  if (argc >= 5 && !strcmp(argv[1], "reroot") && !strcmp(argv[3], "--")) return reroot(argv[2], argv + 4);
  dispositions(SIG_IGN);
  if (argc == 4 && !strcmp(argv[1], "net")) return net_change(argv[2], argv[3]);
  int dashes = 1;
  while (dashes < argc && strcmp(argv[dashes], "--") != 0) dashes++;
  if (dashes + 1 >= argc) {
    fprintf(stderr, "usage: session-init session TEMPLATE STAGE DISK_BYTES WORKDIR_ID [CONTROL [NET]] -- SHELL... | join|enter|terminal PID -- COMMAND... | net PID MODE\n");
    return 2;
  }
  char **shell = argv + dashes + 1;
  if (dashes == 6 && !strcmp(argv[1], "session")) return session(argv[2], argv[3], argv[4], argv[5], "-", "shared", shell);
  if (dashes == 7 && !strcmp(argv[1], "session")) return session(argv[2], argv[3], argv[4], argv[5], argv[6], "shared", shell);
  if (dashes == 8 && !strcmp(argv[1], "session")) return session(argv[2], argv[3], argv[4], argv[5], argv[6], argv[7], shell);
  if (dashes == 3 && !strcmp(argv[1], "join")) return join(argv[2], shell, JOIN_OWN_GROUP);
  if (dashes == 3 && !strcmp(argv[1], "enter")) return join(argv[2], shell, 0);
  if (dashes == 3 && !strcmp(argv[1], "terminal")) return join(argv[2], shell, JOIN_PTY);
  fprintf(stderr, "session-init: unknown request\n");
  return 2;
}
