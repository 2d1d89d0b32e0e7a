"""A gRPC server that lblab did not write: grpcio (gRPC C-core) with server reflection.

lblab's tests start it to check that `lblab loadgen --call` works against someone else's
implementation of gRPC, over plaintext, TLS and mutual TLS. It prints `listening on HOST:PORT`
once it serves, and on SIGTERM/SIGINT (or when its stdin closes) it stops and prints how many
calls it answered as `served N`.

    python greeter_server.py --port 0 [--delay-ms 5] [--tls-cert C --tls-key K [--client-ca CA]]

With --fail-message TEXT (Python escapes such as \\x1b and \\r\\n are decoded) or
--fail-message-bytes N (N times "x") every SayHello fails with INTERNAL and that message: the hostile
or oversized server text that lblab must print safely.
"""

import argparse
import os
import signal
import sys
import threading
import time
from concurrent import futures

import grpc
from grpc_reflection.v1alpha import reflection

import greeter_pb2
import greeter_pb2_grpc


class Greeter(greeter_pb2_grpc.GreeterServicer):
    def __init__(self, name, delay_ms, fail_message=None):
        self.name = name
        self.delay_s = delay_ms / 1000.0
        self.fail_message = fail_message
        self.served = 0
        self.lock = threading.Lock()

    def SayHello(self, request, context):
        delay = self.delay_s + request.extra_delay_ms / 1000.0
        if delay > 0:
            time.sleep(delay)
        with self.lock:
            self.served += 1
        if self.fail_message is not None:
            context.abort(grpc.StatusCode.INTERNAL, self.fail_message)
        return greeter_pb2.HelloReply(message="hello " + request.name, served_by=self.name)

    def Chat(self, request, context):
        yield greeter_pb2.HelloReply(message="hello " + request.name, served_by=self.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--name", default="")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--client-ca", help="require client certificates signed by this CA")
    ap.add_argument("--no-reflection", action="store_true")
    ap.add_argument("--fail-message", help="fail every SayHello with INTERNAL and this text")
    ap.add_argument("--fail-message-bytes", type=int, help="... with a message of this many bytes")
    args = ap.parse_args()
    fail_message = None
    if args.fail_message is not None:
        fail_message = args.fail_message.encode("latin-1", "backslashreplace").decode(
            "unicode_escape"
        )
    elif args.fail_message_bytes is not None:
        fail_message = "x" * args.fail_message_bytes

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=args.workers))
    greeter = Greeter(args.name or f"{args.host}:{args.port}", args.delay_ms, fail_message)
    greeter_pb2_grpc.add_GreeterServicer_to_server(greeter, server)
    if not args.no_reflection:
        names = (
            greeter_pb2.DESCRIPTOR.services_by_name["Greeter"].full_name,
            reflection.SERVICE_NAME,
        )
        reflection.enable_server_reflection(names, server)
    address = f"{args.host}:{args.port}"
    if args.tls_cert:
        with open(args.tls_cert, "rb") as f:
            cert = f.read()
        with open(args.tls_key, "rb") as f:
            key = f.read()
        ca = None
        if args.client_ca:
            with open(args.client_ca, "rb") as f:
                ca = f.read()
        creds = grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=ca, require_client_auth=ca is not None
        )
        port = server.add_secure_port(address, creds)
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        print(f"cannot listen on {address}", file=sys.stderr, flush=True)
        sys.exit(2)
    server.start()
    greeter.name = args.name or f"{args.host}:{port}"
    print(f"listening on {args.host}:{port}", flush=True)

    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())

    def watch_stdin():
        # The test holds our stdin: when it goes away, so do we.
        try:
            while os.read(0, 1024):
                pass
        except OSError:
            pass
        done.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    done.wait()
    server.stop(grace=0.5).wait()
    print(f"served {greeter.served}", flush=True)


if __name__ == "__main__":
    main()
