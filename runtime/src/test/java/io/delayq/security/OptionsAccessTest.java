package io.delayq.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The OPTIONS check knows every first path segment of delayq's resources: a resource class added
 * under a new one would otherwise answer an anonymous OPTIONS with its Allow header.
 */
class OptionsAccessTest {

    @Test
    void everyResourceOfDelayqIsCovered() throws IOException, ClassNotFoundException {
        Path classes = Path.of(OptionsAccess.class.getProtectionDomain().getCodeSource().getLocation().getPath());
        List<String> names;
        try (Stream<Path> all = Files.walk(classes.resolve("io/delayq"))) {
            names = all.map(p -> classes.relativize(p).toString()).filter(n -> n.endsWith(".class") && !n.contains("$"))
                    .map(n -> n.substring(0, n.length() - 6).replace('/', '.')).toList();
        }
        int resources = 0;
        for (String name : names) {
            jakarta.ws.rs.Path path = Class.forName(name, false, getClass().getClassLoader())
                    .getAnnotation(jakarta.ws.rs.Path.class);
            if (path != null) {
                resources++;
                assertTrue(OptionsAccess.ROOTS.contains(OptionsAccess.firstSegment(path.value())),
                        name + " (@Path " + path.value() + ") is not in OptionsAccess.ROOTS");
            }
        }
        assertTrue(resources >= 5, "found " + resources + " resource classes under " + classes);
    }

    @Test
    void theFirstSegmentIsWhatTheRouterMatches() {
        assertEquals("jobs", OptionsAccess.firstSegment("/jobs/t/1"));
        assertEquals("jobs", OptionsAccess.firstSegment("//jobs;jsessionid=x/t"));
        assertEquals("delayq", OptionsAccess.firstSegment("/delayq"));
        assertEquals("", OptionsAccess.firstSegment("/"));
    }
}
