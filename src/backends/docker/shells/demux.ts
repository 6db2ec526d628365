/**
 * Demultiplexer for Docker's attach/exec stream framing (Tty false): each frame is an 8-byte header
 * [stream, 0, 0, 0, size32be] then `size` bytes. Written here instead of dockerode's demuxStream,
 * which ignores backpressure and buffers without limit (a slow consumer of a flood grows the
 * broker's memory by the flood's size). Pausing the raw socket instead blocks the producer inside
 * the container: real backpressure.
 */
export type DemuxSink = (stream: 'stdout' | 'stderr', chunk: Buffer) => void;

export class DockerDemuxer {
  private pending: Buffer | null = null;
  private frameStream: 'stdout' | 'stderr' = 'stdout';
  private frameLeft = 0;

  constructor(private readonly sink: DemuxSink) {}

  push(chunk: Buffer): void {
    let data = chunk;
    while (data.length > 0) {
      if (this.frameLeft > 0) {
        const take = Math.min(this.frameLeft, data.length);
        this.sink(this.frameStream, data.subarray(0, take));
        this.frameLeft -= take;
        data = data.subarray(take);
        continue;
      }
      if (this.pending) {
        data = Buffer.concat([this.pending, data]);
        this.pending = null;
      }
      if (data.length < 8) {
        this.pending = Buffer.from(data);
        return;
      }
      // 0 = stdin (echo, unused), 1 = stdout, 2 = stderr.
      this.frameStream = data[0] === 2 ? 'stderr' : 'stdout';
      this.frameLeft = data.readUInt32BE(4);
      data = data.subarray(8);
    }
  }
}
