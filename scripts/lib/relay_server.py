"""Serves a relay's connection handler on 127.0.0.1 for at most `lifetime` seconds: every relay
the scripts start is bounded in time. `ready`, when given, is printed once it listens."""
import asyncio


def serve_for(handle, port, lifetime, ssl=None, ready=None):
    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port, ssl=ssl)
        if ready:
            print(ready, flush=True)
        async with server:
            try:
                await asyncio.wait_for(server.serve_forever(), lifetime)
            except asyncio.TimeoutError:
                pass

    asyncio.run(main())
