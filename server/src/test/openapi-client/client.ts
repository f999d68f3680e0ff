// A client as a service in another language would write it: generated from the server's OpenAPI
// document (openapi-typescript -> schema.d.ts), called through openapi-fetch. tsc type-checks it
// against the generated types, so a body or path the document gets wrong fails to compile.
// Usage: node out/client.js BASE_URL TOKEN TOPIC DYING_TOPIC; prints one JSON object of what it saw.
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

// Node's own types would be one more package to install; this is all the client needs of them.
declare const process: { argv: string[] };

const [baseUrl, token, topic, dyingTopic] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
const anonymous = createClient<paths>({ baseUrl });
const seen: Record<string, unknown> = {};
const id = `client-${Date.now()}`;

// enqueueJob, getJob, cancelJob
const enqueued = await client.POST("/jobs", { body: { topic, id, delayMs: 3_600_000, payload: { order: 42 } } });
seen.enqueue = { status: enqueued.response.status, state: enqueued.data?.state, id: enqueued.data?.id };
const got = await client.GET("/jobs/{topic}/{id}", { params: { path: { topic, id } } });
seen.get = { status: got.response.status, state: got.data?.state, runAt: got.data?.runAt };
const cancelled = await client.DELETE("/jobs/{topic}/{id}", { params: { path: { topic, id } } });
seen.cancel = { status: cancelled.response.status };

// A 4xx read back as its problem body: the job is gone, and a broken field is named.
const gone = await client.GET("/jobs/{topic}/{id}", { params: { path: { topic, id } } });
seen.notFound = { status: gone.response.status, type: gone.response.headers.get("content-type"), problem: gone.error };
const bad = await client.POST("/jobs", { body: { topic, delayMs: -1 } });
seen.invalid = { status: bad.response.status, problem: bad.error };
const refused = await anonymous.GET("/topics");
seen.unauthorized = { status: refused.response.status, problem: refused.error };

// listDeadJobs and requeueDeadJob: a job of a topic whose target is down dies on its only attempt.
const deadId = `dies-${Date.now()}`;
await client.POST("/jobs", { body: { topic: dyingTopic, id: deadId, maxAttempts: 1 } });
let dead: { id?: string; lastError?: string }[] = [];
for (let i = 0; i < 100 && !dead.some((d) => d.id === deadId); i++) {
  await new Promise((r) => setTimeout(r, 200));
  const listed = await client.GET("/topics/{topic}/dead", { params: { path: { topic: dyingTopic }, query: { limit: "10" } } });
  dead = listed.data ?? [];
}
seen.dead = dead.filter((d) => d.id === deadId);
const requeued = await client.POST("/topics/{topic}/dead/{id}/requeue", { params: { path: { topic: dyingTopic, id: deadId } } });
seen.requeue = { status: requeued.response.status, state: requeued.data?.state, id: requeued.data?.id };

const topics = await client.GET("/topics");
seen.topics = (topics.data ?? []).map((t) => t.topic);
console.log(JSON.stringify(seen));
