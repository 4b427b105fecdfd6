"""A TCP relay to a Purse server that loses the provider's answer to the first MyCHIPs chit
insert: it forwards the client's insert, stops forwarding what the server sends, and a second
later closes both ends (the provider has stored the chit; the client never hears so). Every other
connection, and everything after, passes through unchanged. Bounded: exits after `seconds`.

    python3 lose_answer_relay.py LISTEN_PORT TARGET_PORT COUNT_FILE [SECONDS]

COUNT_FILE receives the number of answers lost, so a test can tell the loss happened."""
import asyncio, struct, sys

from relay_server import serve_for

listen_port, target_port, count_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lifetime = float(sys.argv[4]) if len(sys.argv) > 4 else 120
state = {"left": 1, "lost": 0}


def frames(buf):
    """Complete websocket frames at the head of buf: [(opcode, payload)], bytes consumed."""
    found, i = [], 0
    while len(buf) - i >= 2:
        b1 = buf[i + 1]
        n, j = b1 & 0x7F, i + 2
        if n == 126:
            if len(buf) < j + 2: break
            n, j = struct.unpack(">H", buf[j:j + 2])[0], j + 2
        elif n == 127:
            if len(buf) < j + 8: break
            n, j = struct.unpack(">Q", buf[j:j + 8])[0], j + 8
        mask = b""
        if b1 & 0x80:
            if len(buf) < j + 4: break
            mask, j = buf[j:j + 4], j + 4
        if len(buf) < j + n: break
        payload = buf[j:j + n]
        if mask: payload = bytes(b ^ mask[k % 4] for k, b in enumerate(payload))
        found.append((buf[i] & 0x0F, payload))
        i = j + n
    return found, i


async def handle(client_reader, client_writer):
    server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
    cut = asyncio.Event()

    async def downstream():
        try:
            while True:
                data = await server_reader.read(65536)
                if not data or cut.is_set(): break
                client_writer.write(data)
                await client_writer.drain()
        except (ConnectionError, OSError):
            pass

    async def upstream():
        head, buf, websocket = b"", b"", None
        try:
            while True:
                data = await client_reader.read(65536)
                if not data: break
                if websocket is None:
                    head += data
                    if b"\r\n\r\n" in head:
                        websocket = b"upgrade: websocket" in head.lower()
                        buf = head.split(b"\r\n\r\n", 1)[1] if websocket else b""
                elif websocket:
                    buf += data
                lose = False
                if websocket:
                    found, used = frames(buf)
                    buf = buf[used:]
                    for opcode, payload in found:
                        if opcode == 1 and b"mychips.chits_v_me" in payload and b'"insert"' in payload and state["left"] > 0:
                            state["left"] -= 1
                            lose = True
                if lose:
                    cut.set()
                server_writer.write(data)
                await server_writer.drain()
                if lose:
                    await asyncio.sleep(1.0)
                    state["lost"] += 1
                    with open(count_file, "w") as f: f.write(str(state["lost"]))
                    break
        except (ConnectionError, OSError):
            pass
        for writer in (client_writer, server_writer):
            writer.close()

    await asyncio.gather(downstream(), upstream())


serve_for(handle, listen_port, lifetime)
