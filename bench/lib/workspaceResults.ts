/** The workspace figures (phases/workspace.ts): their shape, their targets, and their report section. */
import type { SeqResult, WsFloodRound } from '../protocol';
import { median } from './stats';
import type { TargetResult } from './results';

export const WS_VIEWERS = 50;
export const ECHO_P50_LIMIT_MS = 5;
export const EXECUTE_RATIO_LIMIT = 2;
/** With 50 viewers the terminal keeps at least this fraction of its throughput with one. */
export const VIEWERS_FRACTION = 0.9;

export interface WsFlood {
  viewerKind: 'terminal' | 'events';
  command: string;
  floodBytes: number;
  rounds: WsFloodRound[];
}

export interface WorkspaceFigures {
  /** ptyFloor: `true` typed into a bare bash in a PTY, node-pty or a docker exec TTY (client/ptyFloor.ts). */
  execute: { workspace: SeqResult; pool: SeqResult; ptyFloor?: SeqResult };
  echo: SeqResult;
  floods: WsFlood[];
  memory: {
    workspaces: number;
    brokerRssBeforeBytes: number;
    brokerRssAfterBytes: number;
    /** Broker RSS per idle workspace. */
    brokerPerWorkspaceBytes: number;
    /** The workspaces' own processes (their bash), PSS and RSS per workspace. */
    terminalPssPerWorkspaceBytes: number;
    terminalRssPerWorkspaceBytes: number;
    terminalProcesses: number;
  };
}

export type WorkspaceResults = Partial<Record<'local' | 'docker', WorkspaceFigures>>;

/** Median bytes/s of a flood's rounds with `viewers` viewers. */
export function floodRate(f: WsFlood, viewers: number): number {
  return median(f.rounds.filter((r) => r.viewers === viewers).map((r) => r.bytesPerSec));
}

const ms = (v: number): string => `${v.toFixed(3)} ms`;
const mbs = (v: number): string => `${(v / 1e6).toFixed(1)} MB/s`;
const mb = (v: number): string => `${(v / 1e6).toFixed(2)} MB`;

function viewersTarget(backend: string, f: WsFlood): TargetResult {
  const one = floodRate(f, 1);
  const many = floodRate(f, WS_VIEWERS);
  const manyRounds = f.rounds.filter((r) => r.viewers === WS_VIEWERS);
  const cut = f.rounds.reduce((a, r) => a + r.dropped, 0);
  const stale = f.rounds.reduce((a, r) => a + (r.viewers - r.current), 0);
  const resyncs = manyRounds.reduce((a, r) => a + r.resyncs, 0);
  const fewest = Math.min(...manyRounds.map((r) => (f.viewerKind === 'terminal' ? r.viewerBytesMin : r.viewerMessagesMin)));
  const ratio = many / one;
  const complete = cut === 0 && stale === 0;
  const caughtUp = resyncs > 0 ? `; ${resyncs} catch-ups (${f.viewerKind === 'terminal' ? 'redraws' : 'dropped notices'}), least got ${fewest} ${f.viewerKind === 'terminal' ? 'bytes' : 'messages'}` : '; every viewer got every byte';
  // The goal is the terminal's: its viewers share its bursts. Events viewers are each sent every event
  // (JSON of 1.6x the flood's bytes), so theirs is reported, with what their readers cost.
  const terminal = f.viewerKind === 'terminal';
  const cpu = (viewers: number): number => median(f.rounds.filter((r) => r.viewers === viewers).map((r) => r.brokerCpuMs + r.viewersCpuMs));
  return {
    name: `flood throughput, ${WS_VIEWERS} ${f.viewerKind} viewers (${backend}${terminal ? '' : ', reported'})`,
    rule: `>= ${VIEWERS_FRACTION * 100}% of 1 viewer's, median of the rounds; no viewer cut, every viewer ends on the flood's last line`,
    value: `${mbs(many)} (${ratio.toFixed(2)}x of ${mbs(one)})${complete ? '' : `; ${cut} viewers cut, ${stale} not current`}${caughtUp}; CPU of broker + viewers ${(cpu(WS_VIEWERS) / 1000).toFixed(2)} s against ${(cpu(1) / 1000).toFixed(2)} s`,
    limit: mbs(VIEWERS_FRACTION * one),
    pass: terminal ? ratio >= VIEWERS_FRACTION && complete : null,
  };
}

export function workspaceTargets(ws: WorkspaceResults | undefined): TargetResult[] {
  const out: TargetResult[] = [];
  for (const backend of ['local', 'docker'] as const) {
    const w = ws?.[backend];
    if (!w) continue;
    const exec = w.execute.workspace.latency.p50;
    const pool = w.execute.pool.latency.p50;
    out.push({ name: `/api/execute \`true\` p50 (${backend})`, rule: `<= ${EXECUTE_RATIO_LIMIT} x the pool API's execute \`true\` p50, interleaved`, value: `${ms(exec)} (${(exec / pool).toFixed(2)}x)`, limit: ms(EXECUTE_RATIO_LIMIT * pool), pass: exec <= EXECUTE_RATIO_LIMIT * pool });
    const floor = w.execute.ptyFloor?.latency.p50;
    if (floor !== undefined) {
      const rule = 'beside `true` typed into a bare bash in a PTY (node-pty; on docker a `docker exec` TTY), no broker, no HTTP, interleaved';
      out.push({ name: `/api/execute \`true\` against the PTY floor (${backend}, reported)`, rule, value: `${ms(exec)} (${(exec / floor).toFixed(2)}x)`, limit: `floor ${ms(floor)}`, pass: null });
    }
    const echo = w.echo.latency;
    const echoName = `keystroke echo over /ws/workspace/terminal p50 (${backend}${backend === 'local' ? ', reported' : ''})`;
    out.push({ name: echoName, rule: `<= ${ECHO_P50_LIMIT_MS} ms (p90 / p99 beside it)`, value: `${ms(echo.p50)} (${echo.p90.toFixed(2)} / ${echo.p99.toFixed(2)})`, limit: `${ECHO_P50_LIMIT_MS} ms`, pass: backend === 'docker' ? echo.p50 <= ECHO_P50_LIMIT_MS : null });
    for (const f of w.floods) out.push(viewersTarget(backend, f));
    const m = w.memory;
    out.push({ name: `memory per idle workspace (${backend}, reported)`, rule: `broker RSS and the workspace's processes' PSS, over ${m.workspaces} workspaces`, value: `broker ${mb(m.brokerPerWorkspaceBytes)}, processes ${mb(m.terminalPssPerWorkspaceBytes)}`, limit: '-', pass: null });
  }
  return out;
}

const row = (cells: string[]): string => `| ${cells.join(' | ')} |`;

export function roundText(r: WsFloodRound): string {
  const cpu = `${(r.brokerCpuMs / 1000).toFixed(2)} + ${(r.viewersCpuMs / 1000).toFixed(2)}`;
  return `${r.viewers}: ${(r.bytesPerSec / 1e6).toFixed(1)} (${cpu})${r.resyncs ? ` ${r.resyncs} caught up` : ''}${r.dropped ? ` ${r.dropped} cut` : ''}`;
}

/** The report's section: each backend's figures side by side. */
export function renderWorkspace(ws: WorkspaceResults | undefined): string[] {
  const backends = (['local', 'docker'] as const).filter((b) => ws?.[b]);
  if (!ws || backends.length === 0) return [];
  const lat = (s: SeqResult): string => `${s.latency.p50.toFixed(3)} / ${s.latency.p90.toFixed(3)} / ${s.latency.p99.toFixed(3)}`;
  const out = [
    '## Shared PTY workspaces (both backends)',
    '',
    'ms p50 / p90 / p99 unless marked. Floods: MB/s of the job (its start mark to its end mark, from its exit event), median of the rounds, 1 and 50 viewers alternating.',
    '',
    row(['figure', ...backends]),
    row(['---', ...backends.map(() => '---:')]),
  ];
  const cell = (fn: (w: WorkspaceFigures) => string): string[] => backends.map((b) => fn(ws[b]!));
  out.push(row(['/api/execute `true`', ...cell((w) => lat(w.execute.workspace))]));
  out.push(row(["pool API's execute `true` (interleaved)", ...cell((w) => lat(w.execute.pool))]));
  out.push(row(['PTY floor: `true` typed into a bare bash in a terminal (node-pty; docker exec TTY), no broker (interleaved)', ...cell((w) => (w.execute.ptyFloor ? lat(w.execute.ptyFloor) : '-'))]));
  out.push(row(['keystroke echo round trip', ...cell((w) => lat(w.echo))]));
  for (const kind of ['terminal', 'events'] as const) {
    const flood = (w: WorkspaceFigures): WsFlood | undefined => w.floods.find((f) => f.viewerKind === kind);
    out.push(row([`flood, 1 / ${WS_VIEWERS} ${kind} viewers, MB/s`, ...cell((w) => {
      const f = flood(w);
      return f ? `${(floodRate(f, 1) / 1e6).toFixed(1)} / ${(floodRate(f, WS_VIEWERS) / 1e6).toFixed(1)}` : '-';
    })]));
    out.push(row([`flood rounds, ${kind} viewers (viewers: MB/s, CPU s of the broker + of the viewers' process)`, ...cell((w) => flood(w)?.rounds.map(roundText).join('; ') ?? '-')]));
  }
  out.push(row(['broker RSS per idle workspace', ...cell((w) => mb(w.memory.brokerPerWorkspaceBytes))]));
  out.push(row(["an idle workspace's processes, PSS (RSS)", ...cell((w) => `${mb(w.memory.terminalPssPerWorkspaceBytes)} (${mb(w.memory.terminalRssPerWorkspaceBytes)}), ${w.memory.terminalProcesses / w.memory.workspaces} per workspace`)]));
  const f = ws[backends[0]]!.floods[0];
  if (f) out.push('', `Flood command: \`${f.command}\` (${f.floodBytes / 1e6} MB).`);
  return [...out, ''];
}
