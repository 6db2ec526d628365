/**
 * How a sandbox reaches its database attachments: the broker serves each one on a unix socket in a
 * host directory bind-mounted (read-only) into that sandbox's container alone, and this script, the
 * container's main process, forwards 127.0.0.1:<port> inside the container (its own loopback, there
 * even with no network) to that socket, so a plain HTTP client (urllib, curl) reaches it at
 * `<NAME>_URL`.
 *
 * Why sockets and not a network: a sandbox reaches exactly what is mounted into it, which is its
 * attachments and nothing else; no sandbox without an attachment can reach the database, and no
 * per-group Docker network is needed (this engine's bridge driver has deadlocked under container
 * churn, hanging every start).
 */

export const FORWARDER_FILE = 'forward.py';
/** Where the sockets appear inside the container. */
export const SOCKET_DIR_IN_CONTAINER = '/run/sandbox-db';

export const FORWARDER_PY = `import asyncio, json, sys

async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, asyncio.CancelledError):
        pass

async def serve(port, path):
    async def handle(reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(path)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        up_writer.close()
        writer.close()
    return await asyncio.start_server(handle, "127.0.0.1", port)

async def main():
    servers = [await serve(port, path) for port, path in json.loads(sys.argv[1])]
    print("forwarding", len(servers), flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
`;
