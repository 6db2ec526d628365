/* Cost of a session's network at its start (bench/netns/run.sh): N children each make it (shared, none or full) and exit; CPU and wall per session. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static void fail(int status, const char *what, const char *path) { fprintf(stderr, "%s %s: %s\n", what, path ? path : "", strerror(errno)); _exit(status); }
static void format(char *buf, size_t size, const char *fmt, ...) { va_list a; va_start(a, fmt); vsnprintf(buf, size, fmt, a); va_end(a); }
#include "../../src/backends/docker/isolation/sessionNet.c"
int main(int argc, char **argv) {
  int n = atoi(argv[2]);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < n; i++) {
    pid_t p = fork();
    if (p == 0) { net_setup(argv[1]); _exit(0); }
    int st; waitpid(p, &st, 0);
    if (st) { fprintf(stderr, "child failed %d\n", st); return 1; }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  struct rusage ru; getrusage(RUSAGE_CHILDREN, &ru);
  double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  double wall = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("%s: %d sessions, CPU %.0f us each (children), wall %.0f us each\n", argv[1], n, cpu / n * 1e6, wall / n * 1e6);
  return 0;
}
