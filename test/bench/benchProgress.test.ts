/**
 * The bench's and soak's progress line: drawn in place on a terminal, never in CI or into a file.
 * @backend any
 */
import { bar, clock, ProgressLine, progressWanted, warmupText, type ProgressStream } from '../../bench/lib/progress';

function stream(isTTY: boolean): ProgressStream & { written: string[] } {
  const written: string[] = [];
  return { isTTY, columns: 60, written, write: (text: string) => written.push(text) > 0 };
}

describe('bench progress line', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('is wanted on a terminal only, and never under CI', () => {
    expect(progressWanted(stream(true), {})).toBe(true);
    expect(progressWanted(stream(true), { CI: 'false' })).toBe(true);
    expect(progressWanted(stream(true), { CI: 'true' })).toBe(false);
    expect(progressWanted(stream(true), { CI: '1' })).toBe(false);
    expect(progressWanted(stream(false), {})).toBe(false);
  });

  it('on a terminal: redraws in place, keeps log lines above it, erases itself when stopped', () => {
    const out = stream(true);
    const line = new ProgressLine(out, true);
    let n = 0;
    line.set(() => `step ${++n}`);
    jest.advanceTimersByTime(500);
    expect(out.written).toEqual(['\r\x1b[2Kstep 1', '\r\x1b[2Kstep 2', '\r\x1b[2Kstep 3']);
    out.written.length = 0;
    line.log('a log line');
    expect(out.written).toEqual(['\r\x1b[2K', 'a log line\n', '\r\x1b[2Kstep 4']);
    out.written.length = 0;
    line.stop();
    jest.advanceTimersByTime(1000);
    expect(out.written).toEqual(['\r\x1b[2K']);
  });

  it('cuts the line to the terminal width', () => {
    const out = stream(true);
    const line = new ProgressLine(out, true);
    line.set(() => 'x'.repeat(200));
    expect(out.written[0]).toBe('\r\x1b[2K' + 'x'.repeat(59));
    line.stop();
  });

  it('off (CI, a file): log lines only, no carriage return, no redraw', () => {
    const out = stream(false);
    const line = new ProgressLine(out);
    expect(line.enabled).toBe(false);
    line.set(() => 'never shown');
    jest.advanceTimersByTime(5000);
    line.log('a log line');
    line.stop();
    expect(out.written).toEqual(['a log line\n']);
  });

  it('formats a bar, a clock and the broker warm-up', () => {
    expect(bar(0.5, 10)).toBe('[#####-----]');
    expect(bar(7, 4)).toBe('[####]');
    expect(clock(125.4)).toBe('2:05');
    expect(warmupText('broker b', { ready_sessions: 256, target_sessions: 1024, sessions_per_second: 51.2, seconds_left: 15 })).toBe(
      'broker b: warming up [#####---------------] 256 of 1024 sessions, 51/s, 0:15 left',
    );
  });
});
