/**
 * A stand-in for the one part of the outside world tests cannot reach: an LLM provider. It speaks
 * both APIs Pi's providers stream from, tool calls included, so Pi's real providers (and the SDKs
 * under them) parse it unchanged:
 *   - Anthropic's Messages API (`POST /v1/messages`, `stream: true`): SSE events message_start,
 *     content_block_start/delta/stop with text_delta and input_json_delta, message_delta with the
 *     stop reason, message_stop;
 *   - OpenAI's Responses API (`POST /v1/responses`), which Pi's `openai` models use: see
 *     stubOpenaiResponses.ts.
 *
 * Each request is recorded (headers and JSON body) and answered by the test's `reply` function.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { lastResponsesInputText, streamOpenaiResponse, type ResponsesInputItem } from './stubOpenaiResponses';
import type { StubReply } from './stubReply';

export interface RecordedRequest {
  /** Which provider's API the request came in on. */
  api: 'anthropic' | 'openai';
  path: string;
  headers: http.IncomingHttpHeaders;
  body: {
    model: string;
    /** Anthropic's conversation. */
    messages: Array<{ role: string; content: string | Array<{ type: string; text?: string; content?: unknown; tool_use_id?: string }> }>;
    /** OpenAI Responses' conversation (the request's `input`). */
    input?: ResponsesInputItem[];
    tools?: Array<{ name: string }>;
    stream?: boolean;
  };
  /** Set when the client went away before the answer ended (an abort). */
  closedEarly: boolean;
}

export class StubLlm {
  readonly requests: RecordedRequest[] = [];
  private server: http.Server;
  private address: AddressInfo | null = null;
  reply: (request: RecordedRequest) => StubReply = () => ({ text: ['Hello from the stub.'] });

  constructor() {
    this.server = http.createServer((req, res) => void this.serve(req, res));
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.address = this.server.address() as AddressInfo;
    return this.url;
  }

  get url(): string {
    if (!this.address) throw new Error('the stub is not started');
    return `http://127.0.0.1:${this.address.port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const api = req.method !== 'POST' ? null : req.url?.endsWith('/v1/messages') ? 'anthropic' : req.url?.endsWith('/v1/responses') ? 'openai' : null;
    if (!api || !req.url) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: `no route ${req.method} ${req.url}` } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RecordedRequest['body'];
    const recorded: RecordedRequest = { api, path: req.url, headers: req.headers, body: { ...body, messages: body.messages ?? [] }, closedEarly: false };
    this.requests.push(recorded);
    res.on('close', () => {
      if (!res.writableEnded) recorded.closedEarly = true;
    });
    const reply = this.reply(recorded);
    if (api === 'openai') return streamOpenaiResponse(res, recorded.body.model, reply, this.requests.length);
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'request-id': `req_${this.requests.length}` });
    const send = (event: string, data: object): void => {
      if (!res.writableEnded && !res.destroyed) res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
    };
    send('message_start', {
      message: { id: `msg_${this.requests.length}`, type: 'message', role: 'assistant', content: [], model: recorded.body.model, stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } },
    });
    send('ping', {});
    let index = 0;
    const text = reply.text ?? [];
    if (text.length > 0 || reply.hold) {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      const [first, ...rest] = text.length > 0 ? text : [''];
      send('content_block_delta', { index, delta: { type: 'text_delta', text: first } });
      if (reply.hold) await reply.hold;
      for (const piece of rest) {
        if (reply.chunkDelayMs) await new Promise((r) => setTimeout(r, reply.chunkDelayMs));
        send('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
      }
      send('content_block_stop', { index });
      index++;
    }
    for (const call of reply.toolCalls ?? []) {
      send('content_block_start', { index, content_block: { type: 'tool_use', id: `toolu_${this.requests.length}_${index}`, name: call.name, input: {} } });
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.input) } });
      send('content_block_stop', { index });
      index++;
    }
    const stop = reply.toolCalls?.length ? 'tool_use' : 'end_turn';
    send('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 20 } });
    send('message_stop', {});
    res.end();
  }
}

/** The text of the last user message of a request (a string or its text blocks), or of its last tool result. */
export function lastUserText(request: RecordedRequest): string {
  if (request.api === 'openai') return lastResponsesInputText(request.body.input ?? []);
  const users = request.body.messages.filter((m) => m.role === 'user');
  const last = users[users.length - 1];
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return last.content.map((b) => b.text ?? (typeof b.content === 'string' ? b.content : JSON.stringify(b.content ?? ''))).join('\n');
}

/** Whether the request's last message is a tool result (the agent answering a tool call). */
export function endsWithToolResult(request: RecordedRequest): boolean {
  if (request.api === 'openai') return request.body.input?.[request.body.input.length - 1]?.type === 'function_call_output';
  const last = request.body.messages[request.body.messages.length - 1];
  return Array.isArray(last?.content) && last.content.some((b) => b.type === 'tool_result');
}
