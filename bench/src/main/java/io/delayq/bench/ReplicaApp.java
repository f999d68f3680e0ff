package io.delayq.bench;

import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import jakarta.inject.Inject;

import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.QuarkusApplication;

/**
 * An extra replica of the replicas scenario: the same application and observers; what they
 * record is appended to a file ({@code index epoch-ms} per line) that the main process reads.
 */
public class ReplicaApp implements QuarkusApplication {
    @Inject
    Recorder recorder;

    @Override
    public int run(String... args) throws Exception {
        recorder.replica = true;
        Path file = Path.of(System.getProperty("bench.replica.records"));
        Thread writer = Thread.ofPlatform().daemon().start(() -> {
            try (BufferedWriter out = Files.newBufferedWriter(file, StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
                while (true) {
                    long[] r;
                    boolean wrote = false;
                    while ((r = recorder.outbox.poll()) != null) {
                        out.write(r[0] + " " + r[1] + "\n");
                        wrote = true;
                    }
                    if (wrote) {
                        out.flush();
                    }
                    Thread.sleep(50);
                }
            } catch (Exception e) {
                // process ends
            }
        });
        System.out.println("replica ready");
        Quarkus.waitForExit();
        writer.interrupt();
        return 0;
    }
}
