/** results/<backend>-latest.md: every broker figure beside its floor, with the ratio and the targets. */
import type { EpisodeFloorResult, EpisodeResult, LatencySummary, SeqResult } from '../protocol';
import { EPISODE_FLOOR_FRACTION, episodeCpuMs, episodeFloorRate, type Results } from './results';
import type { ProfileSummary } from './profile';
import { renderWorkspace } from './workspaceResults';

const f = (v: number | undefined, digits = 3): string => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(digits));
const lat = (l: LatencySummary | undefined): string => (l && l.n ? `${f(l.p50)} / ${f(l.p90)} / ${f(l.p99)}` : '-');
const ratio = (a: number | undefined, b: number | undefined): string => (a !== undefined && b ? `${(a / b).toFixed(2)}x` : '-');
const mb = (b: number | undefined): string => (b === undefined ? '-' : `${(b / 1e6).toFixed(1)} MB`);
const row = (cells: string[]): string => `| ${cells.join(' | ')} |`;

const LABELS: Record<string, string> = {
  true: 'execute `true`',
  echo: 'execute `echo hello`',
  out64k: 'execute, 64 KiB output',
  out1m: 'execute, 1 MiB output',
};

function header(r: Results): string[] {
  const m = r.machine;
  const loads = r.phases.map((p) => p.loadAvg1m);
  return [
    r.workspace && !r.commands.true && r.episodes.length === 0
      ? `# Broker benchmark: shared PTY workspaces, ${Object.keys(r.workspace).join(' and ')} backends (${r.mode} run)`
      : `# Broker benchmark: ${r.backend} backend (${r.mode} run)`,
    '',
    `Run ${r.startedAt}, ${r.durationS.toFixed(0)} s${r.image ? `, image \`${r.image}\`` : ''}. Broker: \`node dist/index.js\` at ${m.gitCommit}${m.gitDirty ? ' (src/ had uncommitted changes)' : ''}.`,
    '',
    `Machine: ${m.cpuModel}, ${m.cores} cores, ${m.ramGiB} GiB RAM, ${m.kernel}, Node ${m.node}, Docker ${m.docker}, bash ${m.bash}. ` +
      `1-min load average ${m.loadAvgAtStart[0]} at start, ${Math.min(...loads)}-${Math.max(...loads)} across phases (shared machine: read figures as +-20%).`,
    '',
  ];
}

function targets(r: Results): string[] {
  const out = ['## Targets', '', row(['target', 'rule', 'measured', 'limit', 'result']), row(['---', '---', '---:', '---:', ':---:'])];
  for (const t of r.targets) out.push(row([t.name, t.rule, t.value, t.limit, t.pass === null ? 'n/a' : t.pass ? '**PASS**' : '**FAIL**']));
  return [...out, ''];
}

function single(r: Results): string[] {
  const t = r.commands.true;
  const noop = t?.noop?.seq?.latency;
  const raw = r.backend === 'docker' ? 'DockerShell over named pipes into the container (its default transport)' : 'LocalShell (pipes)';
  const out = [
    '## Single operations',
    '',
    'Latency: one operation after another on one session, the paths interleaved operation by operation (ms, p50 / p90 / p99).',
    `Throughput: 8 sessions at once, closed loop, one path after the other. Raw floor: the broker's own BashSession over its own ${raw}, in the client process, no HTTP.`,
    '',
    row(['figure', 'broker', 'raw floor', 'p50 ratio', 'broker - raw p50', 'broker /s', 'raw /s', '/s ratio']),
    row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
  ];
  for (const [name, c] of Object.entries(r.commands)) {
    const b = c.broker.seq?.latency;
    const w = c.raw.seq?.latency;
    out.push(row([LABELS[name] ?? name, lat(b), lat(w), ratio(b?.p50, w?.p50), f(b && w ? b.p50 - w.p50 : undefined), f(c.broker.conc?.opsPerSec, 0), f(c.raw.conc?.opsPerSec, 0), ratio(c.broker.conc?.opsPerSec, c.raw.conc?.opsPerSec)]));
  }
  if (r.acquire) {
    const floor = noop && t?.raw.seq ? noop.p50 + t.raw.seq.latency.p50 : undefined;
    out.push(row(['acquire (free sessions)', lat(r.acquire.latency), `${f(floor)} (no-op + raw \`true\`)`, ratio(r.acquire.latency.p50, floor), f(floor === undefined ? undefined : r.acquire.latency.p50 - floor), f(r.acquire.opsPerSec, 0) + ' (seq)', '-', '-']));
  }
  out.push('', ...execFloor(r));
  if (!t?.noop) return out;
  const overhead = t.broker.seq && t.raw.seq ? t.broker.seq.latency.p50 - t.raw.seq.latency.p50 : undefined;
  out.push(
    'HTTP floors for execute `true` (same client, same interleaving): the broker adds ' +
      `${f(overhead)} ms to the raw round trip at p50; the target allows 1.5 x no-op = ${f(noop && 1.5 * noop.p50)} ms.`,
    '',
    row(['path', 'ms p50 / p90 / p99', 'vs no-op p50', '/s with 8 connections', 'vs no-op /s']),
    row(['---', '---:', '---:', '---:', '---:']),
  );
  const paths: [string, PathFiguresLike | undefined][] = [
    ['no-op HTTP (bare node:http answering `{}`)', t.noop],
    ['broker app over a stub pool (request seam, body reader, validation, metrics; no pool, no shell)', t.app],
    ['broker (app + pool + shell)', t.broker],
  ];
  for (const [label, p] of paths) {
    out.push(row([label, lat(p?.seq?.latency), ratio(p?.seq?.latency.p50, noop?.p50), f(p?.conc?.opsPerSec, 0), ratio(p?.conc?.opsPerSec, t.noop.conc?.opsPerSec)]));
  }
  const rf = r.relayFloor;
  if (rf) {
    const hop = rf.relay.latency.p50 - rf.noop.latency.p50;
    out.push(
      '',
      'The second hop, with no work in it: a node:http server that writes a line to `cat` over a pipe per request and answers `{}` when it comes back ' +
        '(client -> server -> cat -> server -> client, the broker\'s shape), interleaved with the no-op as a pair of their own: ' +
        `p50 ${f(rf.relay.latency.p50)} against ${f(rf.noop.latency.p50)} ms: the hop and cat's echo cost ${f(hop)} ms = ${ratio(hop, rf.noop.latency.p50)} the no-op.`,
    );
  }
  const rx = r.rolloutExtras;
  if (rx) {
    out.push(
      '',
      'The rollout extras (a request_id on every execute, `facts: true`, a lease with a lease_ttl) against a plain execute `true`, interleaved as a pair of their own: ' +
        `p50 ${f(rx.extras.latency.p50)} against ${f(rx.plain.latency.p50)} ms = ${ratio(rx.extras.latency.p50, rx.plain.latency.p50)} (target: at most 1.05 x).`,
    );
  }
  out.push(...leastServer(r));
  return [...out, ''];
}

/**
 * The least server over the broker's sessions in the broker's place: what any HTTP server over this
 * session layer pays here, and what is left for the broker's own code.
 */
function leastServer(r: Results): string[] {
  const s = r.shellFloor;
  const t = r.commands.true;
  if (!s) return [];
  const p50 = (x: SeqResult): number => x.latency.p50;
  const serverAdds = p50(s.shell) - p50(s.raw);
  const brokerAdds = t?.broker.seq && t.raw.seq ? t.broker.seq.latency.p50 - t.raw.seq.latency.p50 : undefined;
  const noop = t?.noop?.seq?.latency.p50;
  return [
    '',
    'The least server over the same sessions: node:http around one BashSession on this backend, with the broker\'s body reader and answer ' +
      '(no routing, validation, pool, leases or metrics; bench/shellServer.ts), measured in the broker\'s place in an interleaving of its own ' +
      `with the same paths as the broker's: p50 ${f(p50(s.shell))} ms (raw ${f(p50(s.raw))}, no-op ${f(p50(s.noop))}, stub app ${f(p50(s.app))}). ` +
      `It adds ${f(serverAdds)} ms to its raw round trip = ${ratio(serverAdds, p50(s.noop))} its no-op; ` +
      `the broker adds ${f(brokerAdds)} ms = ${ratio(brokerAdds, noop)} its no-op. ` +
      `Broker minus least server, each over its own raw: ${f(brokerAdds === undefined ? undefined : brokerAdds - serverAdds)} ms.`,
  ];
}

type PathFiguresLike = { seq?: SeqResult; conc?: { opsPerSec: number } };

/** Docker only: the same raw BashSession over a `docker exec` attach stream, the docker backend's floor for the execute target. */
function execFloor(r: Results): string[] {
  const named = Object.entries(r.commands).filter(([, c]) => c.rawExec?.seq);
  if (!named.length) return [];
  const out = [
    "Docker's own stream: the same raw BashSession over a `docker exec` attach stream through the engine (the docker backend's floor for the execute target; the broker's pipes bypass it).",
    '',
    row(['figure', 'raw docker exec', 'raw pipes p50', 'exec / pipes p50', 'broker p50', 'broker - exec p50', 'raw docker exec /s']),
    row(['---', '---:', '---:', '---:', '---:', '---:', '---:']),
  ];
  for (const [name, c] of named) {
    const e = c.rawExec?.seq?.latency;
    const b = c.broker.seq?.latency.p50;
    const p = c.raw.seq?.latency.p50;
    out.push(row([LABELS[name] ?? name, lat(e), f(p), ratio(e?.p50, p), f(b), f(b !== undefined && e ? b - e.p50 : undefined), f(c.rawExec?.conc?.opsPerSec, 0)]));
  }
  return [...out, ''];
}

function episodes(r: Results): string[] {
  if (!r.episodes.length) return [];
  const noop = r.commands.true?.noop?.seq?.latency.p50;
  const raw = r.commands.true?.raw;
  // One episode is 7 HTTP requests and 6 shell round trips (acquire's cd, 5 echos) when nothing waits.
  const latFloor = noop !== undefined && raw?.seq ? 7 * noop + 6 * raw.seq.latency.p50 : undefined;
  const out = [
    '## Episodes (acquire, 5 x `echo $i`, release), pool = ceil(C / 8) containers x 8 sessions',
    '',
    `Latency floor: 7 no-op HTTP requests + 6 raw round trips = ${f(latFloor)} ms. Throughput floor: raw \`true\` throughput with min(C, 64) sessions (1 session: 1 / raw p50).`,
    '',
    row(['C', 'pool', 'episodes/s', 'executes/s', 'raw floor /s', 'executes ratio', 'episode ms p50 / p90 / p99', 'p50 vs floor', 'acquire ms p50 / p99', 'execute ms p50 / p99', 'cleanup ms p50 / p99', 'connect s / listen overflows', 'event-loop delay ms p99 / max', 'errors']),
    row(['---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
  ];
  for (const e of r.episodes) {
    const x = e.result;
    const floor = e.concurrency === 1 ? (raw?.seq ? 1000 / raw.seq.latency.p50 : undefined) : e.concurrency <= 8 ? raw?.conc?.opsPerSec : r.rawAt64?.opsPerSec;
    out.push(row([String(e.concurrency), `${e.containers}x8`, f(x.opsPerSec, 1), f(x.executesPerSec, 0), f(floor, 0), ratio(x.executesPerSec, floor), lat(x.latency), ratio(x.latency.p50, latFloor), `${f(x.acquire.p50, 2)} / ${f(x.acquire.p99, 2)}`, `${f(x.execute.p50, 2)} / ${f(x.execute.p99, 2)}`, `${f(e.cleanup.p50Ms, 1)} / ${f(e.cleanup.p99Ms, 1)}`, `${f(x.connectMs / 1000, 2)} / ${e.listenOverflows}`, `${f(e.eventLoopLagMs.p99, 0)} / ${f(e.eventLoopLagMs.max, 0)}`, String(x.errors)]));
  }
  return [...out, '', '![episodes](' + `${r.backend}-${r.mode === 'quick' ? 'quick' : 'latest'}.svg)`, ''];
}

/** Whole episodes beside the episode floor, processes per episode, acquire in an open loop. */
function episodeFloor(r: Results): string[] {
  const rows = r.episodes.filter((e) => e.floor || e.openLoop || e.result.forks);
  if (!rows.length) return [];
  const forks = (v: number | undefined): string => f(v, 2);
  const out = [
    '## Episodes against the episode floor; processes per episode; acquire in an open loop',
    '',
    'Episode floor: C raw shells on the backend\'s own transport (local: pipes to a spawned bash; docker: the broker\'s named pipes into the container), ' +
      'each episode `exec -c` of a fresh bash in place with the broker\'s recycle line, then 5 x `true`, one round trip each; no HTTP, no pool, no kill, no workdir. ' +
      'At the floor\'s levels, measured in rounds with the broker\'s episodes (the table below): this row is the round with the median ratio. Sessions\' CPU: their cgroups (docker: the containers\'; local: the instance\'s), per episode. Processes: machine-wide forks during the window (/proc/stat), net of the rate measured idle just before, per episode. ' +
      'Open loop: episodes arriving at a fraction of the closed loop\'s rate on the same broker, acquire timed from arrival.',
    '',
    row(['C', 'floor episodes/s (before / after)', 'broker episodes/s', 'broker / floor', 'floor fresh bash ms p50 / p99', 'floor `true` ms p50', 'processes / episode: broker / floor', 'sessions\' CPU ms / episode: broker / floor', 'open loop: rate /s, arrivals, dropped', 'open-loop acquire ms p50 / p99', 'open-loop episode ms p50 / p99', 'errors (floor / open)']),
    row(['---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
  ];
  for (const e of rows) {
    const fl = e.floor;
    const o = e.openLoop;
    const rate = episodeFloorRate(e);
    out.push(
      row([
        String(e.concurrency),
        `${f(rate, 1)} (${f(fl?.opsPerSec, 1)} / ${f(e.floorAfter?.opsPerSec, 1)})`,
        f(e.result.opsPerSec, 1),
        ratio(e.result.opsPerSec, rate),
        fl ? `${f(fl.exec.p50, 1)} / ${f(fl.exec.p99, 1)}` : '-',
        f(fl?.command.p50, 2),
        `${forks(e.result.forks?.perEpisode)} / ${forks(fl?.forks?.perEpisode)}`,
        `${forks(e.result.sessionCpu?.msPerEpisode)} / ${forks(fl?.sessionCpu?.msPerEpisode)}`,
        o ? `${f(o.ratePerSec, 1)} (${o.arrivals}), ${o.started}, ${o.dropped}` : '-',
        o ? `${f(o.acquire.p50, 1)} / ${f(o.acquire.p99, 1)}` : '-',
        o ? `${f(o.episode.p50, 1)} / ${f(o.episode.p99, 1)}` : '-',
        `${fl ? fl.errors : '-'} / ${o ? o.errors : '-'}`,
      ]),
    );
  }
  return [...out, ''];
}

/** What one episode costs the machine, per process, in each run's own window. */
function episodeCpu(r: Results): string[] {
  const rows = r.episodes.filter((e) => e.floor);
  if (!rows.length) return [];
  const out = [
    '### Episodes against the floor, round by round; CPU per episode by process (ms)',
    '',
    "Each round: a floor window, then the broker's episodes (7 requests), then the same in 5 requests, seconds apart; both the floor's shells and the broker stay up throughout. " +
      "CPU in each run's measured window: the broker's and the client's own (utime + stime from /proc, their children not included) and the sessions' cgroups, per completed episode; " +
      "the floor has no broker (its client drives the raw shells). Ratios against the same round's floor; the targets take the median of the rounds. " +
      `Episodes/s swing with the machine's other work; CPU per episode is the steadier figure (target >= ${EPISODE_FLOOR_FRACTION}).`,
    '',
    row(['C', 'round', 'run', 'requests / episode', 'episodes/s', 'vs floor', 'broker', 'client', 'sessions', 'CPU total', 'floor / run']),
    row(['---:', '---:', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
  ];
  for (const e of rows) {
    const rounds = e.rounds ?? [{ floor: e.floor!, plain: e.result, fewer: e.fewer }];
    rounds.forEach((rd, i) => {
      const floorCpu = episodeCpuMs(rd.floor)?.total;
      const runs: [string, EpisodeResult | EpisodeFloorResult | undefined][] = [
        ['floor', rd.floor],
        ['broker', rd.plain],
        ['broker, fewer requests', rd.fewer],
      ];
      for (const [name, run] of runs) {
        if (!run) continue;
        const cpu = episodeCpuMs(run);
        const isFloor = !('requestsPerEpisode' in run);
        out.push(
          row([
            String(e.concurrency),
            String(i + 1),
            name,
            isFloor ? '-' : String(run.requestsPerEpisode),
            f(run.opsPerSec, 1),
            isFloor ? '-' : ratio(run.opsPerSec, rd.floor.opsPerSec),
            isFloor ? '-' : f(cpu?.broker, 2),
            f(cpu?.client, 2),
            f(cpu?.sessions, 2),
            f(cpu?.total, 2),
            isFloor ? '-' : ratio(floorCpu, cpu?.total),
          ]),
        );
      }
    });
    if (!e.rounds && e.floorAfter) out.push(row([String(e.concurrency), '-', 'floor, after the broker', '-', f(e.floorAfter.opsPerSec, 1), '-', '-', f(episodeCpuMs(e.floorAfter)?.client, 2), f(episodeCpuMs(e.floorAfter)?.sessions, 2), f(episodeCpuMs(e.floorAfter)?.total, 2), '-']));
  }
  return [...out, ''];
}

function lifecycle(r: Results): string[] {
  const out = ['## Session lifecycle and memory', '', row(['figure', 'broker', 'floor', 'ratio']), row(['---', '---:', '---:', '---:'])];
  const rel = r.release;
  const resp: SeqResult | undefined = r.rawRespawn;
  if (rel) {
    out.push(row(['release-to-AVAILABLE, client (acquire right after release on a 1x1 pool), ms p50 / p90 / p99', lat(rel.client.latency), `${lat(resp?.latency)} (raw respawn)`, ratio(rel.client.latency.p50, resp?.latency.p50)]));
    out.push(row(['broker_cleanup_duration_seconds (release to AVAILABLE, in the broker), ms p50 / mean', `${f(rel.cleanup.p50Ms, 2)} / ${f(rel.cleanup.meanMs, 2)} (n=${rel.cleanup.count})`, '-', '-']));
  }
  const w = r.warmup;
  if (w) {
    const floor = w.floorMs === undefined ? 'none (local)' : `${f(w.floorMs / 1000, 1)} s (${w.floor})`;
    const median = w.rounds.length > 1 ? `, median of ${w.rounds.length} rounds` : '';
    const rounds = w.rounds.length > 1 ? ` (rounds: ${w.rounds.map((x) => `${f(x.brokerMs / 1000, 1)} / ${f((x.floorMs ?? NaN) / 1000, 1)} s`).join(', ')})` : '';
    const r2 = w.ratio === undefined ? '-' : `${f(w.ratio, 2)}x`;
    out.push(row([`warm-up of ${w.sessions} sessions over ${w.containers} containers (spawn to all AVAILABLE${median})${rounds}`, `${f(w.brokerMs / 1000, 1)} s`, floor, r2]));
  }
  const { at8, at1024, perSessionBytes, flood, singleFloodDefaultCap: one } = r.rss;
  out.push(row(['broker RSS, 8 idle sessions / 1024 idle sessions', `${mb(at8)} / ${mb(at1024)}`, '-', '-']));
  if (perSessionBytes !== undefined) out.push(row(['broker RSS per session ((RSS@1024 - RSS@8) / 1016)', `${f(perSessionBytes / 1024, 1)} KiB`, '-', '-']));
  if (flood) {
    const what = `${flood.sessions} sessions x ${flood.bytesPerSession / 1e6} MB at once (cap ${flood.capBytes} B), ${f(flood.streamedMBps, 0)} MB/s`;
    out.push(row([`broker RSS during an output flood: ${what}`, `${mb(flood.rssBeforeBytes)} -> peak ${mb(flood.rssPeakBytes)} -> ${mb(flood.rssAfterBytes)}`, '-', `+${mb(flood.rssPeakBytes - flood.rssBeforeBytes)}`]));
  }
  if (one) out.push(row([`one 50 MB flood at the default cap (${one.capBytes / 1048576} MiB)`, `peak +${mb(one.peakDeltaBytes)}`, '-', '-']));
  return [...out, ''];
}

function cpu(r: Results): string[] {
  const runs = Object.entries(r.cpu);
  if (!runs.length) return [];
  const cats = ['broker', 'client', 'no-op servers', 'sessions (bash, commands)', 'dockerd', 'containerd, shims, runc', 'rest', 'total'];
  const out = [
    '## Where the CPU went',
    '',
    'Cores used during each job (2.0 = both busy), from /proc; "rest" is everyone else on the machine plus processes that exited unreaped.',
    'Per operation (microseconds of CPU): "serving process" is the broker, or the no-op server, or for raw runs the client',
    '(which then drives bash directly); "stack" is everything but rest. These hold better than ops/s when the machine is shared.',
    '',
    row(['run', ...cats, 'ops/s', 'serving process us / op', 'stack us / op']),
    row(['---', ...cats.map(() => '---:'), '---:', '---:', '---:']),
  ];
  for (const [label, b] of runs) {
    const ops = b['ops/s'];
    const serving = Math.max(b.broker ?? 0, b['no-op servers'] ?? 0);
    const own = serving >= 0.05 ? serving : b.client;
    const perOp = (cores: number | undefined): number | undefined => (ops && cores !== undefined ? (cores * 1e6) / ops : undefined);
    out.push(row([label, ...cats.map((c) => f(b[c], 2)), f(ops, 0), f(perOp(own), 0), f(perOp(b.total - (b.rest ?? 0)), 0)]));
  }
  return [...out, ''];
}

function profile(p: ProfileSummary | undefined, during: string): string[] {
  if (!p) return [];
  const areas = Object.entries(p.areas)
    .sort((a, b) => b[1] - a[1])
    .map(([a, pct]) => `${a} ${f(pct, 1)}%`);
  const out = [
    `## Broker CPU profile during ${during} (node --cpu-prof)`,
    '',
    `${f(p.busyMs / 1000, 1)} s busy, ${f(p.idleMs / 1000, 1)} s idle (\`${p.file}\`). Self time by layer: ${areas.join(', ')}.`,
    '',
    row(['self %', 'self ms', 'function', 'where']),
    row(['---:', '---:', '---', '---']),
  ];
  for (const e of p.top) out.push(row([f(e.pct, 1), f(e.selfMs, 0), `\`${e.fn}\``, e.where || '(native)']));
  return [...out, ''];
}

export function renderMarkdown(r: Results): string {
  const notes = r.notes.length ? ['## Notes', '', ...r.notes.map((n) => `- ${n}`), ''] : [];
  return [...header(r), ...targets(r), ...renderWorkspace(r.workspace), ...single(r), ...episodes(r), ...episodeFloor(r), ...episodeCpu(r), ...lifecycle(r), ...cpu(r), ...profile(r.profile, 'execute `true`'), ...profile(r.profileEpisodes, 'episodes at 64'), ...notes].join('\n');
}
