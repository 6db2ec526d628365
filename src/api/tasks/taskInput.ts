/** Validation of the task API's inputs: all of it before anything is started. */
import { BadRequestError } from '../../common/errors';
import type { CreateTaskInput } from '../../core/tasks/taskService';

const REPO = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\/[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;
const MAX_PROMPT_CHARS = 100_000;
const MAX_NAME_CHARS = 100;

function object(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError('Request body must be a JSON object');
  return body as Record<string, unknown>;
}

function text(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string' || value.trim() === '') throw new BadRequestError(`'${field}' must be a non-empty string`);
  if (value.length > max) throw new BadRequestError(`'${field}' is over ${max} characters`);
  return value;
}

export function parseCreateTask(body: unknown): CreateTaskInput {
  const b = object(body);
  for (const key of Object.keys(b)) if (!['name', 'repo', 'prompt'].includes(key)) throw new BadRequestError(`unknown field '${key}' (known: name, repo, prompt)`);
  if (typeof b.repo !== 'string' || !REPO.test(b.repo) || b.repo.includes('..')) {
    throw new BadRequestError(`'repo' must be "org/name" (letters, digits, '_', '.', '-'), got ${JSON.stringify(b.repo ?? null)}`);
  }
  const input: CreateTaskInput = { repo: b.repo };
  if (b.name !== undefined) input.name = text(b.name, 'name', MAX_NAME_CHARS);
  if (b.prompt !== undefined) input.prompt = text(b.prompt, 'prompt', MAX_PROMPT_CHARS);
  return input;
}

export function parsePromptBody(body: unknown): string {
  return text(object(body).message, 'message', MAX_PROMPT_CHARS);
}

/** `?cursor=N` wins over Last-Event-ID; neither: 0 (from the start of what is kept). */
export function parseResumeCursor(query: string | null, lastEventId: string | string[] | undefined): number {
  const raw = query ?? (Array.isArray(lastEventId) ? lastEventId[0] : lastEventId) ?? '0';
  if (!/^\d{1,15}$/.test(raw.trim())) throw new BadRequestError(`the cursor must be an integer >= 0, got '${raw}'`);
  return Number(raw.trim());
}
