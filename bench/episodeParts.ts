/**
 * What an episode's session work costs the container, part by part: one shell in one
 * container, N sequential episodes per variant, the container's CPU (cpuacct) and this process's per
 * episode. Variants, each adding one thing of the broker's to the episode floor's:
 *   floor    exec -c a fresh bash with the floor's rc (`PS1=;PS2=`), 5 x `true;builtin echo __tN`
 *   rc       the same exec line with the broker's rc (exports, tag, umask, the framing's init)
 *   framed   that, and the 5 commands as BashSession runs them (`echo $i`, framed)
 *   recycle  DockerShell.recycle (the host-side kill check, then the same line) + framed commands
 *
 *   node -r ts-node/register/transpile-only bench/episodeParts.ts [--n 200] [--rounds 3]
 *
 * The variants run interleaved, one episode each in turn; per variant, the median of its episodes.
 */
import fs from 'node:fs';
import { BashSession } from '../src/core/session/bashSession';
import type { ShellProcess } from '../src/core/ports/backend';
import { SHELL_INIT_SCRIPT } from '../src/core/session/framing';
import { FRESH_ANSWER, recycleExecLine } from '../src/backends/shellRecycle';
import { makeBackend } from './client/raw';
import { EPISODE_FLOOR_DEPLOYMENT } from './protocol';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}

/** A line written, a pattern awaited on stdout (the shell's listener is ours while no BashSession holds it). */
function roundTrip(shell: ShellProcess, line: string, marker: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`no ${String(marker)}`)), 10_000);
    shell.setListener({
      onData: (stream, chunk) => {
        if (stream !== 'stdout') return;
        buf += chunk.toString('latin1');
        if (marker.test(buf)) {
          clearTimeout(timer);
          resolve();
        }
      },
      onExit: (e) => reject(new Error(e.reason)),
    });
    shell.write(line);
  });
}

async function main(): Promise<void> {
  const n = Number(arg('n', '200'));
  const rounds = Number(arg('rounds', '3'));
  const { backend } = await makeBackend('docker', 'default', 'bash-broker-sandbox:latest', EPISODE_FLOOR_DEPLOYMENT);
  const ref = await backend.containers.start({ kind: 'pool', index: 0 });
  try {
    await backend.connectContainer?.(ref);
    const cpuFile = `/sys/fs/cgroup/cpuacct/docker/${ref.id}/cpuacct.usage`;
    const containerMs = (): number => Number(fs.readFileSync(cpuFile, 'latin1').trim()) / 1e6;
    const shell = await backend.openShell(ref, { slotId: 'parts' });
    const internals = shell as unknown as { bashPath: string; exportsScript: string; options: { tag: string } };
    await roundTrip(shell, "PS1=;PS2=;builtin echo __ok\n", /__ok\n/);
    const dir = '/tmp/s/0123456789abcdef0123456789abcdef/';
    await backend.prepareWorkdir(ref, dir, []);
    const brokerRc = `${internals.exportsScript}\nbuiltin export ${internals.options.tag.split('=')[0]}=x;builtin umask 0022\n${SHELL_INIT_SCRIPT}`;
    const plainCommands = async (): Promise<void> => {
      for (let i = 1; i <= 5; i++) await roundTrip(shell, `true;builtin echo __t${i}\n`, new RegExp(`__t${i}\\n`));
    };
    const framedCommands = async (): Promise<void> => {
      const session = new BashSession(shell);
      for (let i = 1; i <= 5; i++) await session.execute(`echo ${i}`, { timeoutMs: 10_000, maxOutputBytes: 4096 });
    };
    const variants: Record<string, () => Promise<void>> = {
      floor: async () => {
        await roundTrip(shell, recycleExecLine(`'${dir}'`, internals.bashPath, 'PS1=;PS2='), FRESH_ANSWER);
        await plainCommands();
      },
      rc: async () => {
        await roundTrip(shell, recycleExecLine(`'${dir}'`, internals.bashPath, brokerRc), FRESH_ANSWER);
        await plainCommands();
      },
      framed: async () => {
        await roundTrip(shell, recycleExecLine(`'${dir}'`, internals.bashPath, brokerRc), FRESH_ANSWER);
        await framedCommands();
      },
      recycle: async () => {
        if (!(await shell.recycle!(dir))) throw new Error('recycle failed');
        await framedCommands();
      },
    };
    // Interleaved episode by episode, each variant's container CPU per episode read around it: a
    // noisy neighbour hits every variant alike, and the medians drop the episodes it hit hardest.
    const names = Object.keys(variants);
    for (const name of names) for (let i = 0; i < 20; i++) await variants[name](); // warm
    for (let r = 1; r <= rounds; r++) {
      const container: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
      const client: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
      for (let i = 0; i < n; i++) {
        for (const name of names) {
          const c0 = containerMs();
          const p0 = process.cpuUsage();
          await variants[name]();
          const p = process.cpuUsage(p0);
          container[name].push(containerMs() - c0);
          client[name].push((p.user + p.system) / 1000);
        }
      }
      const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
      const out = names.map((k) => `${k}: container ${med(container[k]).toFixed(3)} (mean ${mean(container[k]).toFixed(3)}) ms, client ${med(client[k]).toFixed(3)} ms`);
      console.log(`round ${r} (load ${fs.readFileSync('/proc/loadavg', 'latin1').split(' ')[0]}), medians of ${n} episodes each: ${out.join(' | ')}`);
    }
    await shell.close();
  } finally {
    await backend.removeContainer(ref);
    await backend.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
