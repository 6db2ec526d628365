/** The sized run's part of the report: the capacity steps, the load's occupancy, the overload apart. */
import { MIX_TARGETS, mixShares } from './capacity';
import { countTable, f1, type SoakResults } from './report';
import { LOAD_SHARE, OVERLOAD_SHARE } from './sized';

const s1 = (ms: number | undefined): string => (ms === undefined ? '-' : (ms / 1000).toFixed(1));

export function sizedSection(r: SoakResults): string[] {
  const s = r.sized;
  if (!s) return [];
  const kinds = ['pool', 'sandbox', 'workspace', 'group', 'task'] as const;
  const steps = [...s.capacity.steps, s.recovery].map(
    (x, i) =>
      `| ${i === s.capacity.steps.length ? 'recovery ' : ''}${x.rateHz.toFixed(2)} | ${x.arrivals} | ${kinds.map((k) => s1(x.holdMs[k])).join(' | ')} | ${f1(x.occupancy)} | ${x.met ? 'met' : `missed: ${x.missed.join('; ').replace(/\|/g, '\\|')}`} |`,
  );
  const o = s.overload;
  const targets = MIX_TARGETS.map((t) => `${t.op} ${t.at} <= ${t.maxMs} ms`).join(', ');
  return [
    '## Capacity',
    '',
    `Open-loop Poisson arrivals of the mix itself (${mixShares()}), each step ${r.plan.capacityStepS} s, stepped up by 1.5x from 0.5/s until a step missed, then one step between. ` +
      `A step meets the targets when every answer is exact and ${targets}. ` +
      `Capacity: **${s.capacity.rateHz.toFixed(2)} arrivals/s of the mix**; the load ran at ${s.loadRateHz.toFixed(2)}/s (${Math.round(LOAD_SHARE * 100)}%), ${s.arrivals} arrivals, ` +
      `holding ${f1(s.loadOccupancy)} sessions and containers at once on average (Little's law: each kind's arrival rate x its mean hold time) of a pool of ${r.plan.containers * r.plan.perContainer} sessions.`,
    '',
    '| rate /s | arrivals | hold s: pool | sandbox | workspace | group | task | occupancy | targets |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...steps,
    '',
    `## Overload (${Math.round(OVERLOAD_SHARE * 100)}%, reported apart)`,
    '',
    `${o.arrivals} arrivals at ${o.rateHz.toFixed(2)}/s for ${o.seconds.toFixed(0)} s with its drain; ${o.tally.errorCount} deviations that are not clear ones. ` +
      `Recovery after it at ${s.recovery.rateHz.toFixed(2)}/s: ${s.recovery.met ? 'every target met' : s.recovery.missed.join('; ')}.`,
    '',
    ...countTable('overload outcome', o.tally.outcomes),
    '',
    ...countTable('overload deviation that is not clear', Object.fromEntries(Object.entries(o.tally.errors).map(([k, v]) => [k, v.count]))),
    ...Object.entries(o.tally.errors).flatMap(([k, v]) => v.examples.map((e) => `- ${k}: \`${e.replace(/`/g, "'")}\``)),
    '',
  ];
}
