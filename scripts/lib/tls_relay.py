"""A TLS-terminating relay to a Purse server, with a throwaway CA: what a development MyCHIPs
provider behind its own CA looks like to a client. It makes the CA and a certificate for
127.0.0.1 and localhost (with openssl), writes the CA to CA_FILE, and forwards every TLS
connection on LISTEN_PORT as plain TCP to TARGET_PORT. Bounded: exits after `seconds`.

    python3 tls_relay.py LISTEN_PORT TARGET_PORT CA_FILE [SECONDS]"""
import asyncio, os, ssl, subprocess, sys, tempfile

from relay_server import serve_for

listen_port, target_port, ca_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lifetime = float(sys.argv[4]) if len(sys.argv) > 4 else 120
work = tempfile.mkdtemp(prefix="purse-tls-")


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


key, csr, cert, ext = (os.path.join(work, name) for name in ("server.key", "server.csr", "server.pem", "ext.cnf"))
ca_key = os.path.join(work, "ca.key")
openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", ca_key, "-out", ca_file,
        "-days", "2", "-subj", "/CN=Purse development CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
open(ext, "w").write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
openssl("x509", "-req", "-in", csr, "-CA", ca_file, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext)

context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.minimum_version = ssl.TLSVersion.TLSv1_2
context.load_cert_chain(cert, key)


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError, ssl.SSLError):
        pass
    finally:
        writer.close()


async def handle(client_reader, client_writer):
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))


serve_for(handle, listen_port, lifetime, ssl=context, ready="ready")
