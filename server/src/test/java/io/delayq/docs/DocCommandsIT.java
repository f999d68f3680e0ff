package io.delayq.docs;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;

/**
 * Runs every shell block of the guides marked {@code <!-- runnable -->} with bash against the
 * packaged server, started fresh on a redis-server of its own, with {@code localhost:8080}
 * replaced by its address. {@code curl} fails on a 4xx or 5xx answer (a function wraps it with
 * {@code --fail-with-body}), so a block whose request the server refuses fails here, not only one
 * whose command is gone. The blocks run in the guides' reading order (README's list) against
 * the one server, so a block may use what an earlier one made: flow control reschedules the job
 * the standalone server's guide enqueues.
 */
class DocCommandsIT extends OwnRedisTest {
    private static final String PRELUDE = """
            set -euo pipefail
            curl() { command curl --fail-with-body -sS --max-time 10 "$@"; }
            """;

    @Test
    void theRunnableBlocksOfTheGuidesRunAgainstAFreshServer() throws Exception {
        List<Docs.Block> runnable = new ArrayList<>();
        for (Path guide : Docs.guides()) {
            Docs.blocks(guide).stream().filter(b -> b.isShell() && "runnable".equals(b.marker())).forEach(runnable::add);
        }
        assertTrue(runnable.size() >= 3, "only " + runnable.size() + " runnable blocks found: is the block parser broken?");
        Path work = Files.createDirectories(Path.of("target", "doc-commands"));
        try (AppProcess server = AppProcess.start("docs", redis.port(), Map.of())) {
            String address = server.baseUrl().substring("http://".length());
            for (Docs.Block b : runnable) {
                String script = PRELUDE + b.body().replace("localhost:8080", address);
                Path output = work.resolve("output.txt");
                Process p = new ProcessBuilder("bash", "-c", script).directory(work.toFile())
                        .redirectErrorStream(true).redirectOutput(output.toFile()).start();
                p.getOutputStream().close();
                boolean done = p.waitFor(60, TimeUnit.SECONDS);
                String out = Files.readString(output);
                if (!done) {
                    p.destroyForcibly();
                    fail(b.where() + ": still running after 60 s\n" + b.body() + "\noutput:\n" + out);
                }
                if (p.exitValue() != 0) {
                    fail(b.where() + ": exit " + p.exitValue() + "\n" + b.body() + "\noutput:\n" + out
                            + "\nserver log (tail):\n" + tail(server.logText()));
                }
                System.out.println("ran " + b.where() + ":\n" + out);
            }
        }
    }

    private static String tail(String log) {
        return log.length() <= 4000 ? log : log.substring(log.length() - 4000);
    }
}
