/**
 * Tiny static x86-64 programs for the isolation suites (no libc: a few hundred bytes, sent as an
 * acquire's `files`), each making one System V IPC object in its IPC namespace and exiting, leaving
 * it there: the image has no ipcmk. Run from the working directory, they write nothing in the view.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const IPC_MAKERS: Record<string, string> = {
  shm: 'sc(29 /* shmget */, 0, 4096, 01000 | 0600)',
  sem: 'sc(64 /* semget */, 0, 1, 01000 | 0600)',
  msg: 'sc(68 /* msgget */, 0, 01000 | 0600, 0)',
};

/** The makers, named `mk-shm`, `mk-sem`, `mk-msg`, base64 (an acquire's `files`). */
export function buildIpcMakers(): Record<string, string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipc-makers-'));
  const built: Record<string, string> = {};
  try {
    for (const [kind, call] of Object.entries(IPC_MAKERS)) {
      const source = path.join(dir, `${kind}.c`);
      fs.writeFileSync(
        source,
        `static long sc(long n, long a, long b, long c) { long r; __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory"); return r; }
void _start(void) { long r = ${call}; sc(60 /* exit */, r < 0 ? 1 : 0, 0, 0); for (;;) {} }
`,
      );
      const out = path.join(dir, kind);
      execFileSync(process.env.CC || 'cc', ['-static', '-nostdlib', '-Os', '-s', '-o', out, source]);
      built[`mk-${kind}`] = fs.readFileSync(out).toString('base64');
    }
    return built;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
