package io.delayq.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.dev.RedisProcess;
import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;
import io.delayq.support.Topics;

/**
 * Signed HTTP targets against the receivers docs/standalone-server.md shows, run as the real Node
 * and Python processes (examples/receivers): every call of a 200-job run verifies, with the
 * receiver holding both keys and holding only the new one (the rotation's middle step); no key
 * shows in the replica's log, its metrics or its dashboard; a short key stops the start naming the
 * topic.
 */
class SignedTargetsIT extends OwnRedisTest {
    static final String OLD = "rotating-out-4d1f7a2b9c3e5f60";
    static final String NEW = "rotating-in-8e2c4a6b1d3f5a79";
    static final Path RECEIVERS = Path.of("..", "examples", "receivers");

    /** A receiver process; its stdout ("ok id" / "bad id" per call) goes to a file. */
    record Receiver(Process process, Path out, int port) implements AutoCloseable {
        static Receiver start(String command, String file, String keys) throws IOException {
            int port = RedisProcess.freePort();
            Path out = Files.createTempFile("receiver-", ".out");
            out.toFile().deleteOnExit();
            ProcessBuilder pb = new ProcessBuilder(command, RECEIVERS.resolve(file).toString(), Integer.toString(port))
                    .redirectErrorStream(true).redirectOutput(out.toFile());
            pb.environment().put("DELAYQ_SIGNING_KEYS", keys);
            Process p = pb.start();
            Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
            Receiver r = new Receiver(p, out, port);
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> r.lines().contains("listening"));
            return r;
        }

        List<String> lines() throws IOException {
            return Files.readAllLines(out);
        }

        Set<String> with(String verdict) throws IOException {
            Set<String> ids = new TreeSet<>();
            for (String l : lines()) {
                if (l.startsWith(verdict + " ")) {
                    ids.add(l.substring(verdict.length() + 1));
                }
            }
            return ids;
        }

        String url() {
            return "http://127.0.0.1:" + port + "/jobs";
        }

        @Override
        public void close() {
            process.destroyForcibly();
        }
    }

    static String batch(String topic, int n) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < n; i++) {
            b.append(i == 0 ? "" : ",").append("{\"topic\":\"").append(topic).append("\",\"id\":\"j").append(i)
                    .append("\",\"payload\":{\"n\":").append(i).append(",\"text\":\"naïve ").append(i).append("\"}}");
        }
        return b.append(']').toString();
    }

    @Test
    void nodeAndPythonReceiversVerifyEveryCallWithBothKeysOrOnlyTheNewOne() throws Exception {
        String[] topics = { Topics.fresh("signed-node"), Topics.fresh("signed-py"), Topics.fresh("signed-node-new"),
                Topics.fresh("signed-py-new") };
        try (Receiver nodeBoth = Receiver.start("node", "receiver.js", OLD + "," + NEW);
                Receiver pyBoth = Receiver.start("python3", "receiver.py", OLD + "," + NEW);
                Receiver nodeNew = Receiver.start("node", "receiver.js", NEW);
                Receiver pyNew = Receiver.start("python3", "receiver.py", NEW)) {
            Receiver[] receivers = { nodeBoth, pyBoth, nodeNew, pyNew };
            Map<String, String> settings = new HashMap<>();
            for (int i = 0; i < topics.length; i++) {
                settings.put("delayq.topics." + topics[i] + ".http.url", receivers[i].url());
                settings.put("delayq.topics." + topics[i] + ".http.signing-keys", OLD + "," + NEW);
                settings.put("delayq.topics." + topics[i] + ".max-attempts", "1"); // a rejected call would die: seen
            }
            try (AppProcess app = AppProcess.start("signer", redis.port(), settings)) {
                for (String topic : topics) {
                    HttpResponse<String> r = app.post("/jobs/batch", batch(topic, 200));
                    assertEquals(200, r.statusCode(), r.body());
                }
                for (int i = 0; i < topics.length; i++) {
                    Receiver r = receivers[i];
                    Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> r.with("ok").size() + r.with("bad").size() >= 200);
                    assertEquals(Set.of(), r.with("bad"), topics[i] + ": calls that did not verify");
                    assertEquals(200, r.with("ok").size(), topics[i]);
                }
                String metrics = app.get("/q/metrics");
                for (String topic : topics) {
                    assertFalse(metrics.contains("delayq_jobs_dead_total{topic=\"" + topic + "\"} 1"), topic);
                }
                String pages = app.get("/delayq") + app.get("/delayq/topics") + app.get("/delayq/topics/" + topics[0])
                        + app.get("/delayq/job?topic=" + topics[0] + "&id=j1") + app.get("/topics") + app.get("/q/openapi");
                for (String key : List.of(OLD, NEW)) {
                    assertFalse(app.logText().contains(key), "key in the log");
                    assertFalse(metrics.contains(key), "key in /q/metrics");
                    assertFalse(pages.contains(key), "key on the dashboard or the API");
                }
                assertTrue(pages.contains(topics[0]), "the pages searched are the topic's");
            }
        }
    }

    @Test
    void receiversHoldingAnotherKeyRejectEveryCall() throws Exception {
        String[] topics = { Topics.fresh("wrong-key-node"), Topics.fresh("wrong-key-py") };
        try (Receiver node = Receiver.start("node", "receiver.js", "some-other-key-0123456789");
                Receiver py = Receiver.start("python3", "receiver.py", "some-other-key-0123456789")) {
            Receiver[] receivers = { node, py };
            Map<String, String> settings = new HashMap<>();
            for (int i = 0; i < topics.length; i++) {
                settings.put("delayq.topics." + topics[i] + ".http.url", receivers[i].url());
                settings.put("delayq.topics." + topics[i] + ".http.signing-keys", OLD + "," + NEW);
                settings.put("delayq.topics." + topics[i] + ".max-attempts", "1");
            }
            try (AppProcess app = AppProcess.start("wrong-key", redis.port(), settings)) {
                for (String topic : topics) {
                    assertEquals(200, app.post("/jobs/batch", batch(topic, 20)).statusCode());
                }
                for (Receiver r : receivers) {
                    Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> r.with("bad").size() == 20);
                    assertEquals(Set.of(), r.with("ok"));
                }
            }
        }
    }

    @Test
    void aShortKeyStopsTheStartNamingTheTopicNotTheKey() {
        String topic = Topics.fresh("short-key");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> AppProcess.start("short-key", redis.port(),
                Map.of("delayq.topics." + topic + ".http.url", "http://127.0.0.1:9/x",
                        "delayq.topics." + topic + ".http.signing-keys", NEW + ",tooShort123")));
        assertTrue(e.getMessage().contains("delayq.topics." + topic + ".http.signing-keys"), e.getMessage());
        assertFalse(e.getMessage().contains("tooShort123") || e.getMessage().contains(NEW), "a key in the output");
    }

    @Test
    void aKeyPropertySetButEmptyStopsTheStartInsteadOfSendingUnsigned() {
        String topic = Topics.fresh("empty-key");
        for (String value : List.of("", "${DELAYQ_TEST_KEYS_NOBODY_SETS:}")) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> AppProcess.start("empty-key",
                    redis.port(), Map.of("delayq.topics." + topic + ".http.url", "http://127.0.0.1:9/x",
                            "delayq.topics." + topic + ".http.signing-keys", value)), "signing-keys=" + value);
            assertTrue(e.getMessage().contains("delayq.topics." + topic + ".http.signing-keys is set"), e.getMessage());
        }
        // The README's spelling for a topic with '-': the name quoted.
        String quoted = "delayq.topics.\"" + topic + "\".http.signing-keys";
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> AppProcess.start("empty-key",
                redis.port(), Map.of("delayq.topics.\"" + topic + "\".http.url", "http://127.0.0.1:9/x", quoted,
                        "${DELAYQ_TEST_KEYS_NOBODY_SETS:}")), quoted);
        assertTrue(e.getMessage().contains(quoted + " is set"), e.getMessage());
    }

    @Test
    void theGuideShowsTheVerifiersTheseTestsRun() throws IOException {
        Path guide = Path.of("..", "docs", "standalone-server.md");
        String doc = Files.readString(guide);
        for (String file : List.of("receiver.js", "receiver.py")) {
            String source = Files.readString(RECEIVERS.resolve(file));
            String marker = file.endsWith(".js") ? "// --- " : "# --- ";
            int from = source.indexOf(marker + "verify");
            int to = source.indexOf(marker + "end");
            String verify = source.substring(source.indexOf('\n', from) + 1, to).strip();
            assertTrue(doc.contains(verify), guide + " lacks the verify part of " + file + " as it is:\n" + verify);
        }
    }
}
