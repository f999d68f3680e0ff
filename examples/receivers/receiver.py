# A delayq HTTP target in Python that checks X-Delayq-Signature (docs/standalone-server.md, "Signed HTTP targets").
# Usage: DELAYQ_SIGNING_KEYS=key1[,key2] python3 receiver.py PORT
# Answers 204 to a genuine call and 401 to any other; prints "ok <id>" or "bad <id>" per call.
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# --- verify (shown in docs/standalone-server.md)
import hashlib, hmac, os, time

KEYS = [k.strip().encode() for k in os.environ["DELAYQ_SIGNING_KEYS"].split(",")]

def verify(headers, body):  # body: the raw request body, bytes
    parts = [p.strip() for p in headers.get("X-Delayq-Signature", "").split(",")]
    t = next((p[2:] for p in parts if p.startswith("t=")), "")
    if not (t.isascii() and t.isdigit()) or abs(time.time() * 1000 - int(t)) > 5 * 60 * 1000:
        return False
    signed = f"{t}.{headers['X-Delayq-Topic']}.{headers['X-Delayq-Job-Id']}.{headers['X-Delayq-Attempt']}.".encode() + body
    return any(hmac.compare_digest(hmac.new(k, signed, hashlib.sha256).hexdigest().encode(), p[3:].encode())
               for k in KEYS for p in parts if p.startswith("v1="))
# --- end


OUT = threading.Lock()  # one line per call, whole, from the server's threads


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        ok = verify(self.headers, body)
        with OUT:
            print(("ok " if ok else "bad ") + str(self.headers.get("X-Delayq-Job-Id")), flush=True)
        self.send_response(204 if ok else 401)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("listening", flush=True)
server.serve_forever()
