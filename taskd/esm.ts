/**
 * Pi's packages are ES modules only (their `exports` offer no `require`), and this project compiles
 * to CommonJS, where TypeScript turns `import()` into `require()`. A Function-made `import()` is left
 * alone by the compiler and loads them as the ES modules they are.
 */
import type * as CodingAgent from '@mariozechner/pi-coding-agent';
import type * as PiAi from '@mariozechner/pi-ai';

const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

export interface PiModules {
  agent: typeof CodingAgent;
  ai: typeof PiAi;
}

let loaded: Promise<PiModules> | null = null;

export function loadPi(): Promise<PiModules> {
  loaded ??= Promise.all([importModule('@mariozechner/pi-coding-agent'), importModule('@mariozechner/pi-ai')]).then(([agent, ai]) => ({
    agent: agent as typeof CodingAgent,
    ai: ai as typeof PiAi,
  }));
  return loaded;
}
