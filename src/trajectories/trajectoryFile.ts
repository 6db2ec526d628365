/**
 * Trajectories on disk: each ended lease's journal (core/pool/leaseJournal.ts) as one JSON line appended
 * to `<dir>/trajectories.jsonl`, rotated at `fileBytes` to `.1`, `.2`, ... with `keepFiles` rotated
 * files kept (the oldest removed), so the directory holds at most (keepFiles + 1) x fileBytes (plus
 * one line, a line being bounded by the journal's limits).
 *
 * Writes never hold up a release: lines are queued and appended by one writer, a batch at a time,
 * as soon as the previous append is done. What a broker crash loses: the lines queued and not yet
 * appended (those of leases ended during the append in flight, milliseconds' worth), and the
 * journals of leases still held; without fsync, a machine crash also loses what the OS had not yet
 * written. If the disk cannot keep up, lines beyond MAX_QUEUED_BYTES are dropped and counted.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TrajectoryRecord } from '../core/pool/leaseJournal';
import { logger } from '../common/logger';
import { errorMessage } from '../common/errors';

export const TRAJECTORY_FILE = 'trajectories.jsonl';
/** Lines waiting for the writer, at most (a disk that stalls must not grow the broker's memory). */
const MAX_QUEUED_BYTES = 64 * 1024 * 1024;

export class TrajectoryFile {
  private queue: string[] = [];
  private queuedBytes = 0;
  private writing: Promise<void> | null = null;
  private sizeBytes: number;
  private droppedLines = 0;
  private readonly file: string;

  constructor(
    private readonly dir: string,
    private readonly fileBytes: number,
    private readonly keepFiles: number,
  ) {
    fs.mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, TRAJECTORY_FILE);
    this.sizeBytes = fs.existsSync(this.file) ? fs.statSync(this.file).size : 0;
  }

  /** Lines dropped because the writer could not keep up, or failed. */
  get dropped(): number {
    return this.droppedLines;
  }

  append(record: TrajectoryRecord): void {
    const line = JSON.stringify(record) + '\n';
    if (this.queuedBytes + line.length > MAX_QUEUED_BYTES) {
      this.droppedLines++;
      return;
    }
    this.queue.push(line);
    this.queuedBytes += line.length;
    this.writing ??= this.drain();
  }

  /** Resolves once every line queued so far is appended. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        this.queuedBytes = 0;
        await this.write(batch).catch((err: unknown) => {
          this.droppedLines += batch.length;
          logger.warn({ dir: this.dir, lines: batch.length, err: errorMessage(err) }, 'trajectory lines could not be written');
        });
      }
    } finally {
      this.writing = null;
    }
  }

  /** Appends `lines`, rotating first whenever the next line would take the file past its size. */
  private async write(lines: string[]): Promise<void> {
    let chunk = '';
    for (const line of lines) {
      const bytes = Buffer.byteLength(line);
      if (this.sizeBytes > 0 && this.sizeBytes + Buffer.byteLength(chunk) + bytes > this.fileBytes) {
        if (chunk) await fs.promises.appendFile(this.file, chunk);
        chunk = '';
        await this.rotate();
      }
      chunk += line;
    }
    if (chunk) {
      await fs.promises.appendFile(this.file, chunk);
      this.sizeBytes += Buffer.byteLength(chunk);
    }
  }

  /** trajectories.jsonl -> .1 -> .2 ... ; the file beyond `keepFiles` is removed. */
  private async rotate(): Promise<void> {
    const name = (k: number): string => (k === 0 ? this.file : `${this.file}.${k}`);
    await fs.promises.rm(name(this.keepFiles), { force: true });
    for (let k = this.keepFiles - 1; k >= 0; k--) await fs.promises.rename(name(k), name(k + 1)).catch(() => undefined);
    this.sizeBytes = 0;
  }
}
