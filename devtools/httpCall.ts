/** One HTTP call with undici, its whole answer read, and parsed as JSON when it is JSON. */
import { request, type Dispatcher } from 'undici';

/** An HTTP answer read whole: its status, headers, text, and JSON when it is JSON. */
export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export async function httpCall(dispatcher: Dispatcher, url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  const res = await request(url, {
    method: method as 'GET',
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    dispatcher,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  return answerOf(res);
}

/** An undici answer read whole: its text, and its JSON when it is JSON. */
export async function answerOf(res: Dispatcher.ResponseData): Promise<HttpResult> {
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}
