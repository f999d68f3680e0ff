// A delayq HTTP target in Node that checks X-Delayq-Signature (docs/standalone-server.md, "Signed HTTP targets").
// Usage: DELAYQ_SIGNING_KEYS=key1[,key2] node receiver.js PORT
// Answers 204 to a genuine call and 401 to any other; prints "ok <id>" or "bad <id>" per call.
const http = require('http');
const crypto = require('crypto');

// --- verify (shown in docs/standalone-server.md)
const keys = process.env.DELAYQ_SIGNING_KEYS.split(',').map((k) => k.trim());

function verify(headers, body) { // body: the raw request body, a Buffer
  const parts = (headers['x-delayq-signature'] || '').split(',').map((p) => p.trim());
  const t = (parts.find((p) => p.startsWith('t=')) || '').slice(2);
  if (!/^\d+$/.test(t) || Math.abs(Date.now() - Number(t)) > 5 * 60 * 1000) return false;
  const signed = Buffer.concat([Buffer.from(`${t}.${headers['x-delayq-topic']}.${headers['x-delayq-job-id']}.`
    + `${headers['x-delayq-attempt']}.`), body]);
  const given = parts.filter((p) => p.startsWith('v1=')).map((p) => Buffer.from(p.slice(3), 'hex'));
  return keys.some((k) => {
    const mac = crypto.createHmac('sha256', k).update(signed).digest();
    return given.some((g) => g.length === mac.length && crypto.timingSafeEqual(g, mac));
  });
}
// --- end

http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const ok = verify(req.headers, Buffer.concat(chunks));
    console.log(`${ok ? 'ok' : 'bad'} ${req.headers['x-delayq-job-id']}`);
    res.writeHead(ok ? 204 : 401).end();
  });
}).listen(Number(process.argv[2]), '127.0.0.1', () => console.log('listening'));
