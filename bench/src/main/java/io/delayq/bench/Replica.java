package io.delayq.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.eclipse.microprofile.config.ConfigProvider;

/** An extra replica: this benchmark jar started again as a process ({@link ReplicaApp}). */
final class Replica {
    private final Process process;
    private final Path records;
    private final int index;
    private long offset;

    private Replica(Process process, Path records, int index) {
        this.process = process;
        this.records = records;
        this.index = index;
    }

    static Replica start(int index) throws IOException {
        Path records = Files.createTempFile("delayq-bench-replica-" + index + "-", ".txt");
        String javaCmd = ProcessHandle.current().info().command().orElse("java");
        String jar = Path.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator)[0]).toAbsolutePath().toString();
        var config = ConfigProvider.getConfig();
        List<String> cmd = new ArrayList<>(List.of(javaCmd,
                "-Dquarkus.redis.client-type=" + config.getOptionalValue("quarkus.redis.client-type", String.class).orElse("standalone"),
                "-Ddelayq.partitions=" + config.getValue("delayq.partitions", String.class), "-jar", jar, "--replica",
                ConfigProvider.getConfig().getValue("quarkus.redis.hosts", String.class), records.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream()));
        String line;
        while ((line = out.readLine()) != null && !line.contains("replica ready")) {
            // start-up log
        }
        if (line == null) {
            throw new IllegalStateException("replica " + index + " did not start");
        }
        Thread.ofPlatform().daemon().start(() -> {
            try {
                while (out.readLine() != null) {
                    // keep the pipe drained
                }
            } catch (IOException ignored) {
                // process ended
            }
        });
        return new Replica(p, records, index);
    }

    /** Moves the records the replica wrote since the last call into the main recorder (as its index + 1's). */
    void drainInto(Recorder recorder) {
        offset = recorder.readRecords(records, offset, index + 1);
    }

    double cpu() {
        return Stats.cpuSeconds(process.pid());
    }

    void stop() {
        process.destroy();
        try {
            process.waitFor();
            Files.deleteIfExists(records);
        } catch (InterruptedException | IOException e) {
            Thread.currentThread().interrupt();
        }
    }
}
