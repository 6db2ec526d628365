/**
 * The least relay, forked by the cluster bench (the port comes back over IPC): node:http in front of
 * one upstream, each request sent on by one kept-alive undici Client (pipelining 1) with its headers
 * (less the hop-by-hop ones) and the extra headers given, its body streamed, and the answer written
 * back as it comes. No routing, no metrics, no membership: what any relay on node:http and undici
 * adds here, measured beside the gateway in the same run (the gateway's floor).
 *
 * `node leastProxy.js <upstream URL> <extra headers as JSON> [<TLS files as JSON: ca, cert, key>]`
 * (the files for an https:// node that wants a client certificate, as a gateway presents).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, type Dispatcher } from 'undici';
import { tlsConnect, type TlsFiles } from '../lib/brokerProcess';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function copyHeaders(headers: http.IncomingHttpHeaders, extra: Record<string, string>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return Object.assign(out, extra);
}

const tlsFiles = process.argv[4] ? (JSON.parse(process.argv[4]) as TlsFiles) : null;
const upstream = new Client(process.argv[2], { pipelining: 1, keepAliveTimeout: 30_000, connect: tlsFiles ? tlsConnect(tlsFiles) : undefined });
const extra = JSON.parse(process.argv[3] ?? '{}') as Record<string, string>;

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart: () => undefined,
    onResponseStart: (_c, statusCode, headers) => void res.writeHead(statusCode, copyHeaders(headers, {})),
    onResponseData: (_c, chunk) => void res.write(chunk),
    onResponseEnd: () => void res.end(),
    onResponseError: () => void res.destroy(),
  };
  const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
  upstream.dispatch(
    { method: req.method as Dispatcher.HttpMethod, path: req.url ?? '/', headers: copyHeaders(req.headers, extra), body: hasBody ? req : null, headersTimeout: 0, bodyTimeout: 0 },
    handler,
  );
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
