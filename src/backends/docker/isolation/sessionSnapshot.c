/*
 * Snapshots of a session's view (docs/snapshots.md), done by the session init (included by
 * sessionInit.c after sessionReuse.c). The store is SNAP_ROOT, a directory of the engine's host
 * that the broker binds into each container of the pool (no session sees it: a session's root is
 * an overlay of the container's root filesystem alone, never of the mounts on it).
 *
 *   snap ID  ->  ok BYTES | failed WHY
 *     Copies the overlay's upper layer (the session's own writes, and nothing of the image: files,
 *     whiteouts, opaque directories, with their modes, owners, times and extended attributes) to
 *     SNAP_ROOT/ID/u, and the lease's working directory (bound in from the container, so never in
 *     that layer) to SNAP_ROOT/ID/w. BYTES: the blocks the copy holds. The broker asks only while
 *     bash is at its prompt (no command of the lease runs); a background process that writes
 *     meanwhile may or may not be in it.
 *
 * A session started from a snapshot: SNAP_ROOT/at/WORKDIR_ID (written by the broker before the
 * spawn) holds, line 1, the overlay's extra lower layers, newest first, `:`-separated; line 2, the
 * directory whose copy fills the working directory (emptied first). Such a session is never reused
 * in place (sessionReuse.c): its view is not the image's.
 */
#define SNAP_ROOT "/.bkr-snap"

static char snap_lowers[3072];
static int snap_layered;

/* Everything in the directory `fd` removed (the directory itself stays). */
static int snap_empty(int fd) {
  int dup_fd = dup(fd);
  DIR *dir = dup_fd < 0 ? NULL : fdopendir(dup_fd);
  if (!dir) return -1;
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(dir))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (unlinkat(fd, e->d_name, 0) == 0) continue;
    if (errno != EISDIR && errno != EPERM) { rc = -1; break; }
    int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    rc = sub < 0 ? -1 : snap_empty(sub);
    if (sub >= 0) close(sub);
    if (rc == 0 && unlinkat(fd, e->d_name, AT_REMOVEDIR) < 0) rc = -1;
  }
  closedir(dir);
  return rc;
}

/* `snap ID`: the upper layer and the working directory into SNAP_ROOT/ID (removed again on a failure). */
static const char *snap_take(struct control *c, const char *id) {
  static char answer_line[64];
  if (!valid_workdir_id(id) || c->stage < 0) return "failed: no such snapshot id or no stage";
  int root = open(SNAP_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return "failed: no snapshot store in this container";
  const char *why = NULL;
  unsigned long long bytes = 0;
  int snap = -1, to = -1, from = -1;
  if (mkdirat(root, id, 0700) < 0) why = "failed: cannot make the snapshot's directory";
  else if ((snap = openat(root, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 || mkdirat(snap, "u", 0755) < 0 || mkdirat(snap, "w", 0755) < 0) why = "failed: cannot make the snapshot's layers";
  else if ((from = openat(c->stage, "u", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 || (to = openat(snap, "u", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || copy_tree(from, to, &(struct tree_copy){.exact = 1, .bytes = &bytes}) < 0) why = "failed: cannot copy the session's layer";
  if (from >= 0) close(from);
  if (to >= 0) close(to);
  from = to = -1;
  if (!why && c->workdir[0] && c->container_tmps >= 0) {
    if ((from = openat(c->container_tmps, c->workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 || (to = openat(snap, "w", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || copy_tree(from, to, &(struct tree_copy){.exact = 1, .bytes = &bytes}) < 0) why = "failed: cannot copy the working directory";
    if (from >= 0) close(from);
    if (to >= 0) close(to);
  }
  if (snap >= 0) close(snap);
  if (why) {
    int gone = openat(root, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (gone >= 0) { snap_empty(gone); close(gone); unlinkat(root, id, AT_REMOVEDIR); }
  }
  close(root);
  if (why) return why;
  snprintf(answer_line, sizeof answer_line, "ok %llu", bytes);
  return answer_line;
}

/*
 * At a session's start (before its table is mounted): the snapshots it starts from, if the broker
 * named any for its working directory. The working directory is filled from the snapshot's copy
 * here, before it is bound into the view. Any failure fails the session's setup: a session that
 * should start from a snapshot never starts from the image alone.
 */
static void snap_start(const char *workdir_id) {
  char path[PATH_MAX], line2[PATH_MAX];
  if (!strcmp(workdir_id, "-")) return;
  format(path, sizeof path, "%s/at/%s", SNAP_ROOT, workdir_id);
  FILE *f = fopen(path, "re");
  if (!f) return;
  int ok = fgets(snap_lowers, sizeof snap_lowers, f) && fgets(line2, sizeof line2, f);
  fclose(f);
  snap_lowers[strcspn(snap_lowers, "\n")] = '\0';
  line2[strcspn(line2, "\n")] = '\0';
  if (!ok || !snap_lowers[0] || line2[0] != '/') fail(102, "a bad snapshot start", path);
  snap_layered = 1;
  format(path, sizeof path, "/tmp/s/%s", workdir_id);
  int to = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int from = open(line2, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  unsigned long long bytes = 0;
  if (to < 0 || from < 0 || snap_empty(to) < 0 || copy_tree(from, to, &(struct tree_copy){.exact = 1, .bytes = &bytes}) < 0) fail(102, "cannot fill the working directory from", line2);
  close(to);
  close(from);
}

/* The overlay's options with the snapshot's layers above the image's root: `lowerdir=/,...` -> `lowerdir=L1:L2:/,...`. */
static void snap_layer_options(char *data, size_t size) {
  static const char LOWER[] = "lowerdir=/,";
  if (!snap_lowers[0] || strncmp(data, LOWER, sizeof LOWER - 1) != 0) return;
  char rest[4096];
  snprintf(rest, sizeof rest, "%s", data + sizeof LOWER - 2);
  format(data, size, "lowerdir=%s:/%s", snap_lowers, rest);
}
