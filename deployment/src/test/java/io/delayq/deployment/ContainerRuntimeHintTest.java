package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** When the Dev Service silences Testcontainers' Docker probe: only where nothing points to a container runtime. */
class ContainerRuntimeHintTest {
    @TempDir
    Path home;

    @Test
    void aConfiguredOrPresentRuntimeKeepsTheProbesErrorsAndNothingSilencesThem() throws IOException {
        assertTrue(DevServicesDelayqProcessor.containerRuntimeHinted(Map.of("DOCKER_HOST", "tcp://10.0.0.1:2375"), home.toString()));
        Path runtimeDir = Files.createDirectories(home.resolve("run"));
        Files.createFile(runtimeDir.resolve("docker.sock"));
        assertTrue(DevServicesDelayqProcessor.containerRuntimeHinted(Map.of("XDG_RUNTIME_DIR", runtimeDir.toString()),
                home.toString()), "a rootless docker socket");
        Files.writeString(home.resolve(".testcontainers.properties"), "docker.host=unix\\:///tmp/x.sock\n");
        assertTrue(DevServicesDelayqProcessor.containerRuntimeHinted(Map.of(), home.toString()), "docker.host configured");
    }

    @Test
    void nothingAtAllIsNoRuntimeEvenWithTheFileQuarkusWrites() throws IOException {
        Assumptions.assumeFalse(Files.exists(Path.of("/var/run/docker.sock")) || Files.exists(Path.of("/run/podman/podman.sock")),
                "this machine has a container runtime socket");
        assertFalse(DevServicesDelayqProcessor.containerRuntimeHinted(Map.of(), home.toString()));
        Files.writeString(home.resolve(".testcontainers.properties"), "#Modified by Testcontainers\ntestcontainers.reuse.enable=false\n");
        assertFalse(DevServicesDelayqProcessor.containerRuntimeHinted(Map.of("DOCKER_HOST", " "), home.toString()));
    }
}
