/*
 * Processes the broker starts in a session's namespaces besides its own shell (sessionInit.c
 * includes it), with system calls of this program, never a tool of the image: an image needs
 * bash and nothing else (no nsenter, setpriv or script of util-linux's).
 *
 *   session-init join PID -- SHELL...
 *     An extra shell of a session (execd's): SHELL in the IPC, pid, network and mount namespaces of the
 *     container process PID (a session's bash), leading its own process group, with
 *     BROKER_SHELL_PID its pid in the container.
 *   session-init enter PID -- COMMAND...
 *     COMMAND in those namespaces, in this process's group: a `docker exec` terminal's bash stays
 *     its terminal's foreground job. The file routes of a session's view and the terminals through
 *     `docker exec` run so.
 *   session-init terminal PID -- COMMAND...
 *     A workspace's terminal on the broker's pipes (PID 0: in the container's own view). It reads
 *     one line from its standard input, `COLS ROWS TEXT`, opens a pseudo-terminal of the view's
 *     devpts of that size, prints its device alone on a line, and runs COMMAND... TEXT in it as
 *     the terminal's session leader; then it relays the standard input to the terminal and the
 *     terminal to the standard output until COMMAND exits, with its status. On the input, a byte
 *     0xFF (never in UTF-8 text, which the broker's keys are) starts `COLS ROWS\n`: a new window
 *     size, which the kernel signals to the terminal's foreground job.
 *
 * Each of them drops CAP_SYS_ADMIN before COMMAND starts, as a session's bash has it dropped.
 */
#include <sys/ioctl.h>
#include <termios.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define JOIN_OWN_GROUP 1
#define JOIN_PTY 2
/* The terminal's first line holds its environment (the workspace's shell integration, quoted). */
#define TERMINAL_LINE_MAX (1 << 20)
#define TERMINAL_INPUT_MAX 65536

static int terminal_relay(char **command);

/*
 * The namespaces of container process `target` (ipc, pid, net, mnt): this process enters the first
 * three (the network too: an extra shell or a terminal reaches the session's own loopback, under its
 * policy; entering the container's own network again is harmless where the session shares it).
 */
static void enter_namespaces(const char *target, int fds[3]) {
  char path[64];
  static const char *NAMES[] = {"ipc", "pid", "net", "mnt"};
  static const int TYPES[] = {CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWNS};
  int net = -1;
  for (int i = 0; i < 4; i++) {
    format(path, sizeof path, "/proc/%s/ns/%s", target, NAMES[i]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(105, "cannot open", path);
    if (i == 2) net = fd;
    else fds[i < 2 ? i : 2] = fd;
  }
  for (int i = 0; i < 3; i++) {
    if (setns(i == 2 ? net : fds[i], TYPES[i]) < 0) fail(105, "cannot enter", NAMES[i]);
  }
  close(net);
}

/* A child in the namespaces of `target` (`0`: none) runs `command`; this process waits for it and returns its status. */
static int join(const char *target, char **command, int how) {
  int fds[3] = {-1, -1, -1};
  if (strcmp(target, "0") != 0) enter_namespaces(target, fds);
  pid_t child = fork();
  if (child < 0) fail(105, "cannot fork", NULL);
  if (child == 0) {
    if (how & JOIN_OWN_GROUP) {
      setpgid(0, 0);
      export_container_pid();
    }
    /* The mount namespace last: entering it puts this process at the session's root (the kernel follows the mount moved over `/`). */
    if (fds[2] >= 0 && setns(fds[2], CLONE_NEWNS) < 0) fail(105, "cannot enter", "mnt");
    if (fds[2] >= 0) close(fds[2]);
    if (how & JOIN_PTY) _exit(terminal_relay(command));
    exec_shell(command);
  }
  for (int i = 0; i < 3; i++) {
    if (fds[i] >= 0) close(fds[i]);
  }
  return wait_for(child);
}

/* One line of the standard input, read a byte at a time: what follows it is the terminal's keys. */
static char *read_first_line(void) {
  char *line = malloc(TERMINAL_LINE_MAX + 1);
  size_t used = 0;
  if (!line) fail(106, "no memory for the terminal's line", NULL);
  for (;;) {
    char c;
    ssize_t n = read(0, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || used == TERMINAL_LINE_MAX) fail(106, "no terminal line on the standard input", NULL);
    if (c == '\n') break;
    line[used++] = c;
  }
  line[used] = '\0';
  return line;
}

/* No capability left, and not dumpable: the relay needs none, and a process of the session can neither ptrace it nor open its /proc/<pid>/fd. */
static void drop_every_capability(void) {
  prctl(PR_SET_DUMPABLE, 0);
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct caps[2];
  memset(caps, 0, sizeof caps);
  if (syscall(SYS_capset, &header, caps) < 0) fail(106, "cannot drop the relay's capabilities", NULL);
}

static void write_all(int fd, const char *buf, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, buf, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(1); /* the broker is gone */
    buf += n;
    size -= (size_t)n;
  }
}

static void set_window(int master, const char *size) {
  unsigned cols = 0, rows = 0;
  if (sscanf(size, "%u %u", &cols, &rows) != 2 || cols == 0 || rows == 0 || cols > 0xffff || rows > 0xffff) return;
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  ioctl(master, TIOCSWINSZ, &ws);
}

/* A pseudo-terminal of the view's own devpts (the mount at /dev/pts, which no session can replace): its master, its number in `number`. */
static int open_pty(unsigned *number) {
  int master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  int unlock = 0;
  if (master < 0 || fstat(master, &st) < 0 || !S_ISCHR(st.st_mode)) fail(106, "cannot open", "/dev/pts/ptmx");
  if (ioctl(master, TIOCSPTLCK, &unlock) < 0 || ioctl(master, TIOCGPTN, number) < 0) fail(106, "cannot unlock a terminal of", "/dev/pts/ptmx");
  return master;
}

/* The terminal's session leader: the terminal as its controlling terminal and its standard streams, then COMMAND. */
static void start_in_terminal(int master, unsigned number, char **command) {
  setsid();
  int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
  if (slave < 0) {
    char path[64];
    format(path, sizeof path, "/dev/pts/%u", number);
    slave = open(path, O_RDWR | O_NOCTTY);
  }
  if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) < 0) fail(106, "cannot take the terminal", NULL);
  if (dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0) fail(106, "cannot take the terminal", NULL);
  if (slave > 2) close(slave);
  unsetenv("BROKER_SHELL_PID");
  exec_shell(command);
}

/* Keys from the broker into `in` (at most `room` bytes), a window size taken out on the way. */
static size_t take_keys(int master, const char *buf, size_t n, char *in, char *control, size_t *control_used) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)buf[i];
    if (*control_used > 0) {
      if (c == '\n') {
        control[*control_used] = '\0';
        set_window(master, control + 1);
        *control_used = 0;
      } else if (*control_used < 31) {
        control[(*control_used)++] = (char)c;
      }
    } else if (c == 0xFF) {
      control[0] = (char)c;
      *control_used = 1;
    } else {
      in[kept++] = (char)c;
    }
  }
  return kept;
}

/* Reads what the terminal has until none is left (or `limit` bytes); false once no process holds its other side. */
static int drain(int master, size_t limit) {
  char buf[16384];
  for (size_t done = 0; done < limit;) {
    ssize_t n = read(master, buf, sizeof buf);
    if (n > 0) {
      write_all(1, buf, (size_t)n);
      done += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
  return 1;
}

static int terminal_relay(char **command) {
  char *line = read_first_line();
  unsigned cols = 0, rows = 0, number = 0;
  int consumed = 0;
  if (sscanf(line, "%u %u %n", &cols, &rows, &consumed) != 2 || consumed == 0) fail(106, "the terminal's line has no size", NULL);
  int count = 0;
  while (command[count]) count++;
  char **argv = calloc((size_t)count + 2, sizeof *argv);
  if (!argv) fail(106, "no memory", NULL);
  memcpy(argv, command, (size_t)count * sizeof *argv);
  argv[count] = line + consumed;
  int master = open_pty(&number);
  char size[32];
  format(size, sizeof size, "%u %u", cols, rows);
  set_window(master, size);
  char device[64];
  format(device, sizeof device, "/dev/pts/%u\n", number);
  write_all(1, device, strlen(device));
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  pid_t shell = fork();
  if (shell < 0) fail(106, "cannot fork", NULL);
  if (shell == 0) {
    sigprocmask(SIG_UNBLOCK, &chld, NULL);
    start_in_terminal(master, number, argv);
  }
  drop_every_capability();
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) fail(106, "no signalfd", NULL);
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  char in[TERMINAL_INPUT_MAX], buf[16384], control[32];
  size_t in_used = 0, control_used = 0;
  int input_open = 1, held = 1;
  for (;;) {
    int st;
    if (waitpid(shell, &st, WNOHANG) == shell) {
      /* What the shell wrote last; a job it left that writes on and on cannot hold its end. */
      drain(master, 1 << 20);
      return shell_status(st);
    }
    struct pollfd fds[3] = {{sfd, POLLIN, 0}, {input_open && in_used < sizeof in ? 0 : -1, POLLIN, 0}, {held ? master : -1, POLLIN | (in_used ? POLLOUT : 0), 0}};
    if (poll(fds, 3, -1) < 0 && errno != EINTR) return wait_for(shell);
    if (fds[0].revents) {
      struct signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) > 0) {}
    }
    if (fds[1].revents) {
      ssize_t n = read(0, buf, sizeof in - in_used < sizeof buf ? sizeof in - in_used : sizeof buf);
      if (n > 0) in_used += take_keys(master, buf, (size_t)n, in + in_used, control, &control_used);
      /* The broker closed its side: the terminal hangs up, as a closed window's would. */
      else if (n == 0 || errno != EAGAIN) input_open = 0, kill(shell, SIGHUP);
    }
    if (held && (fds[2].revents & POLLOUT) && in_used) {
      ssize_t n = write(master, in, in_used);
      if (n > 0) memmove(in, in + n, in_used -= (size_t)n);
    }
    /* No process holds the terminal's other side (EIO): only the shell's exit is left to wait for. */
    if (held && (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) && !drain(master, 1 << 20)) held = 0;
  }
}
