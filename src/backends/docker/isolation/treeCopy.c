/*
 * One tree copy for the session init (included by sessionInit.c before the files that copy): a
 * session's template into its stage, and a snapshot's layers in and out (sessionSnapshot.c). As
 * `cp -a from/. to/`: modes, owners, device nodes (a whiteout is a character device 0/0) and links.
 * `exact` also keeps extended attributes (an opaque directory's trusted.overlay.opaque among them)
 * and times, which a snapshot's layer needs and a fresh stage does not; `bytes`, if set, adds up the
 * blocks of every entry copied (a snapshot's size).
 */
#include <sys/xattr.h>

struct tree_copy {
  int exact;
  unsigned long long *bytes;
};

/* Extended attributes of `from_dir/name` onto `to_dir/name` (a filesystem without them has none to copy). */
static int copy_xattrs(int from_dir, int to_dir, const char *name) {
  char from[PATH_MAX], to[PATH_MAX], names[8192], value[65536];
  snprintf(from, sizeof from, "/proc/self/fd/%d/%s", from_dir, name);
  snprintf(to, sizeof to, "/proc/self/fd/%d/%s", to_dir, name);
  ssize_t n = llistxattr(from, names, sizeof names);
  if (n < 0) return errno == ENOTSUP ? 0 : -1;
  for (char *key = names; key < names + n; key += strlen(key) + 1) {
    ssize_t size = lgetxattr(from, key, value, sizeof value);
    if (size < 0 || lsetxattr(to, key, value, (size_t)size, 0) < 0) return -1;
  }
  return 0;
}

/* Owner and mode of `name` (a link has no mode of its own); exact: its attributes and times too, the times last (the rest changes ctime only). */
static int copy_meta(int from_dir, int to_dir, const char *name, const struct stat *st, int exact) {
  if (fchownat(to_dir, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0) return -1;
  if (!S_ISLNK(st->st_mode) && fchmodat(to_dir, name, st->st_mode & 07777, 0) < 0) return -1;
  if (!exact) return 0;
  if (copy_xattrs(from_dir, to_dir, name) < 0) return -1;
  struct timespec times[2] = {st->st_atim, st->st_mtim};
  return utimensat(to_dir, name, times, AT_SYMLINK_NOFOLLOW);
}

/* A regular file's bytes, into a new file `name` of `to_dir`. */
static int copy_file(int from_dir, int to_dir, const char *name) {
  static char buf[1 << 16];
  int in = openat(from_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  int out = in < 0 ? -1 : openat(to_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ssize_t n = 0;
  while (out >= 0 && (n = read(in, buf, sizeof buf)) > 0) {
    if (write(out, buf, (size_t)n) != n) { n = -1; break; }
  }
  int rc = (in < 0 || out < 0 || n < 0) ? -1 : 0;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  return rc;
}

/* `from`'s entries into the existing directory `to`; both descriptors stay the caller's. */
static int copy_tree(int from, int to, const struct tree_copy *how) {
  int dup_from = dup(from);
  DIR *dir = dup_from < 0 ? NULL : fdopendir(dup_from);
  if (!dir) {
    if (dup_from >= 0) close(dup_from);
    return -1;
  }
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(dir))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    struct stat st;
    if (fstatat(from, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) { rc = -1; break; }
    if (how->bytes) *how->bytes += (unsigned long long)st.st_blocks * 512;
    if (S_ISDIR(st.st_mode)) {
      if (mkdirat(to, e->d_name, 0700) < 0 && errno != EEXIST) { rc = -1; break; }
      int sub_from = openat(from, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      int sub_to = openat(to, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      rc = (sub_from < 0 || sub_to < 0) ? -1 : copy_tree(sub_from, sub_to, how);
      if (sub_from >= 0) close(sub_from);
      if (sub_to >= 0) close(sub_to);
    } else if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = readlinkat(from, e->d_name, target, sizeof target - 1);
      if (n < 0) { rc = -1; break; }
      target[n] = '\0';
      if (symlinkat(target, to, e->d_name) < 0) rc = -1;
    } else if (S_ISREG(st.st_mode)) {
      rc = copy_file(from, to, e->d_name);
    } else if (mknodat(to, e->d_name, st.st_mode, st.st_rdev) < 0) {
      rc = -1;
    }
    if (rc == 0) rc = copy_meta(from, to, e->d_name, &st, how->exact);
  }
  closedir(dir);
  return rc;
}
