/**
 * execd's code routes for every sandbox, under `/sandboxes/{id}/execd`: code contexts (`bash`
 * always; `python` where the sandbox has python3) and `/code` as SSE, with its interrupt.
 */
import type { SandboxDirectory } from '../../core/sandbox/sandboxDirectory';
import type { ExecdService } from '../../core/execd/execdService';
import { codeLanguage } from '../../core/execd/codeContexts';
import { sendJson } from '../../http/httpJson';
import type { Router } from '../../http/router';
import { parseCreateContext, parseRunCode, queryParam, requiredQuery, type ExecdInputLimits } from './execdInput';
import { sendDone, streamRun } from './execdStream';
import { execdTarget } from './execdCommandRoutes';
import { apiErrors, served } from '../../http/contract';
import { EXECD_PROCESS_CONTRACT } from './execdContract';

const R = EXECD_PROCESS_CONTRACT.routes;

export function execdCodeRouter(execd: ExecdService, directory: SandboxDirectory, limits: ExecdInputLimits): Router {
  const target = (id: string): ReturnType<typeof execdTarget> => execdTarget(execd, directory, id);
  return {
    name: 'execd-code',
    ...apiErrors(EXECD_PROCESS_CONTRACT),
    routes: [
      served(R.createContext, async ({ params, body, res }) => {
        const language = parseCreateContext(body);
        sendJson(res, 200, await target(params.sandboxId).execd.contexts.create(language));
      }),
      served(R.listContexts, ({ params, query, res }) => {
        const language = queryParam(query, 'language');
        sendJson(res, 200, target(params.sandboxId).execd.contexts.list(language ? codeLanguage(language) : null));
      }),
      served(R.deleteContexts, async ({ params, query, res }) => {
        const language = codeLanguage(requiredQuery(query, 'language'));
        await target(params.sandboxId).execd.contexts.deleteLanguage(language);
        sendDone(res);
      }),
      served(R.getContext, ({ params, res }) => {
        sendJson(res, 200, target(params.sandboxId).execd.contexts.get(params.contextId));
      }),
      served(R.deleteContext, async ({ params, res }) => {
        await target(params.sandboxId).execd.contexts.delete(params.contextId);
        sendDone(res);
      }),
      served(R.runCode, async ({ params, body, res }) => {
        const t = target(params.sandboxId);
        const { code, contextId, language } = parseRunCode(body, limits);
        await streamRun(res, await t.execd.code(code, contextId, language), t.touch);
      }),
      served(R.interruptCode, ({ params, query, res }) => {
        target(params.sandboxId).execd.interrupt(requiredQuery(query, 'id'));
        sendDone(res);
      }),
    ],
  };
}
