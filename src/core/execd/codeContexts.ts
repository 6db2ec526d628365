/**
 * The code contexts of one sandbox (`/code/context`, `/code/contexts`, `/code`): `bash` always, a
 * persistent bash; `python` where the sandbox has python3, a persistent interpreter. A run without a
 * context id goes to the language's default context, made on first use.
 */
import type { BashSessionTimings } from '../session/bashSession';
import { BadRequestError, brokerError, SessionBusyError } from '../../common/errors';
import { newSessionId } from '../../common/ids';
import type { ShellBudget } from './shellBudget';
import { PersistentBash } from './persistentBash';
import { PythonContext } from './pythonContext';
import type { EventSink } from './execdEvents';

export const CODE_LANGUAGES = ['bash', 'python'] as const;
export type CodeLanguage = (typeof CODE_LANGUAGES)[number];

export class ContextNotFoundError extends brokerError('not_found', 'context_not_found', (id: string) => `Code context not found: ${id}`) {}

/** The language a request names, or the 400 that lists the supported ones. */
export function codeLanguage(language: unknown): CodeLanguage {
  if (typeof language === 'string' && (CODE_LANGUAGES as readonly string[]).includes(language)) return language as CodeLanguage;
  throw new BadRequestError(`language ${JSON.stringify(language)} is not supported; supported: bash, python (where the sandbox has python3)`);
}

interface Context {
  readonly id: string;
  readonly language: CodeLanguage;
  readonly runtime: PersistentBash | PythonContext;
  runs: number;
}

export class CodeContexts {
  private readonly byId = new Map<string, Context>();
  private readonly defaults = new Map<CodeLanguage, Promise<Context>>();

  constructor(
    private readonly shells: ShellBudget,
    private readonly timings: BashSessionTimings,
    /** Where a new context starts (the sandbox's working directory). */
    private readonly cwd: string,
  ) {}

  async create(language: CodeLanguage): Promise<{ id: string; language: CodeLanguage }> {
    const ctx = await this.open(language);
    return { id: ctx.id, language };
  }

  list(language: CodeLanguage | null): Array<{ id: string; language: CodeLanguage }> {
    return [...this.byId.values()].filter((c) => language === null || c.language === language).map(({ id, language }) => ({ id, language }));
  }

  get(id: string): { id: string; language: CodeLanguage } {
    const ctx = this.require(id);
    return { id: ctx.id, language: ctx.language };
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  async delete(id: string): Promise<void> {
    const ctx = this.require(id);
    this.forget(ctx);
    await ctx.runtime.close();
  }

  async deleteLanguage(language: CodeLanguage): Promise<void> {
    await Promise.all([...this.byId.values()].filter((c) => c.language === language).map((c) => this.delete(c.id)));
  }

  /**
   * The context a run goes to, checked before its stream opens: `id`'s (404 unknown, 400 another
   * language, 409 busy), or the language's default one.
   */
  async target(id: string | null, language: CodeLanguage | null): Promise<Context> {
    let ctx: Context;
    if (id !== null) {
      ctx = this.require(id);
      if (language !== null && language !== ctx.language) throw new BadRequestError(`context ${id} is a ${ctx.language} context, not ${language}`);
    } else {
      ctx = await this.defaultOf(language ?? 'python');
    }
    if (ctx.runtime.busy) throw new SessionBusyError(ctx.id);
    return ctx;
  }

  run(ctx: Context, code: string, sink: EventSink): Promise<void> {
    if (ctx.runtime instanceof PythonContext) return ctx.runtime.run(ctx.id, code, sink);
    return ctx.runtime.run(ctx.id, code, { count: ++ctx.runs }, sink);
  }

  /** Interrupts `id`'s running code; false when it is not a context here. */
  interrupt(id: string): boolean {
    const ctx = this.byId.get(id);
    if (!ctx) return false;
    ctx.runtime.interrupt();
    return true;
  }

  private async defaultOf(language: CodeLanguage): Promise<Context> {
    let made = this.defaults.get(language);
    if (!made) {
      made = this.open(language);
      this.defaults.set(language, made);
      made.catch(() => this.defaults.delete(language));
    }
    const ctx = await made;
    if (this.byId.get(ctx.id) === ctx) return ctx;
    this.defaults.delete(language); // deleted or dead: a new one
    return this.defaultOf(language);
  }

  private async open(language: CodeLanguage): Promise<Context> {
    const companion = await this.shells.openShell();
    const runtime =
      language === 'python' ? await PythonContext.open(companion, this.timings, this.cwd) : await PersistentBash.open(companion, this.timings, this.cwd, 'kept');
    const ctx: Context = { id: newSessionId(), language, runtime, runs: 0 };
    this.byId.set(ctx.id, ctx);
    if (runtime instanceof PythonContext) runtime.onDeath(() => this.forget(ctx));
    return ctx;
  }

  private forget(ctx: Context): void {
    if (this.byId.get(ctx.id) === ctx) this.byId.delete(ctx.id);
  }

  private require(id: string): Context {
    const ctx = this.byId.get(id);
    if (!ctx) throw new ContextNotFoundError(id);
    return ctx;
  }
}
