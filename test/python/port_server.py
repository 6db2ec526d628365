"""A service a sandbox runs on one of its ports, for the broker's port proxy test: HTTP that echoes
what it got (method, path, query, body, whether a broker token header reached it) and a WebSocket
that echoes each message. Usage: port_server.py PORT"""
import json
import sys

from aiohttp import WSMsgType, web

TOKEN_HEADERS = ("Authorization", "OPEN-SANDBOX-API-KEY", "X-EXECD-ACCESS-TOKEN")


async def echo(request: web.Request) -> web.Response:
    body = await request.text()
    seen = {
        "method": request.method,
        "path": request.path,
        "query": request.query_string,
        "body": body,
        "token_headers": [h for h in TOKEN_HEADERS if h in request.headers],
    }
    return web.Response(text=json.dumps(seen), content_type="application/json")


async def ws(request: web.Request) -> web.WebSocketResponse:
    sock = web.WebSocketResponse()
    await sock.prepare(request)
    async for msg in sock:
        if msg.type == WSMsgType.TEXT:
            await sock.send_str("echo:" + msg.data)
        elif msg.type == WSMsgType.BINARY:
            await sock.send_bytes(msg.data[::-1])
    return sock


app = web.Application()
app.router.add_get("/ws", ws)
app.router.add_route("*", "/{tail:.*}", echo)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
