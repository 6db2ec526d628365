/** The task API's inputs checked against their contract (taskContract.ts): all of it before anything is started. */
import { BadRequestError } from '../../common/errors';
import type { CreateTaskInput } from '../../core/tasks/taskService';
import { addDomainCheck, compileCheck } from '../../http/schemaCheck';
import { CREATE_TASK_BODY, PROMPT_BODY } from './taskContract';

addDomainCheck('x-task-fields', (b) => {
  for (const key of Object.keys(b)) if (!['name', 'repo', 'prompt'].includes(key)) throw new BadRequestError(`unknown field '${key}' (known: name, repo, prompt)`);
});
const createCheck = compileCheck(CREATE_TASK_BODY);
const promptCheck = compileCheck(PROMPT_BODY);

export function parseCreateTask(body: unknown): CreateTaskInput {
  const { repo, name, prompt } = createCheck(body);
  const input: CreateTaskInput = { repo };
  if (name !== undefined) input.name = name;
  if (prompt !== undefined) input.prompt = prompt;
  return input;
}

export function parsePromptBody(body: unknown): string {
  return promptCheck(body).message;
}

/** `?cursor=N` wins over Last-Event-ID; neither: 0 (from the start of what is kept). */
export function parseResumeCursor(query: string | null, lastEventId: string | string[] | undefined): number {
  const raw = query ?? (Array.isArray(lastEventId) ? lastEventId[0] : lastEventId) ?? '0';
  if (!/^\d{1,15}$/.test(raw.trim())) throw new BadRequestError(`the cursor must be an integer >= 0, got '${raw}'`);
  return Number(raw.trim());
}
