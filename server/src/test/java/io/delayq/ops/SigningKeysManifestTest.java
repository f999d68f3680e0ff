package io.delayq.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

/**
 * The server's Deployment takes every topic's signing keys from a Secret (secretKeyRef), never as
 * a literal value, and each Secret key it names exists.
 */
class SigningKeysManifestTest {
    static final Path K8S = Path.of("..", "k8s");

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> docs(String file) throws IOException {
        List<Map<String, Object>> out = new ArrayList<>();
        try (Reader in = Files.newBufferedReader(K8S.resolve(file))) {
            for (Object doc : new Yaml().loadAll(in)) {
                if (doc != null) {
                    out.add((Map<String, Object>) doc);
                }
            }
        }
        return out;
    }

    @Test
    @SuppressWarnings("unchecked")
    void signingKeysComeFromASecretNeverALiteral() throws IOException {
        Map<String, Object> spec = (Map<String, Object>) ((Map<String, Object>) ((Map<String, Object>) docs("deployment.yaml")
                .get(0).get("spec")).get("template")).get("spec");
        Map<String, Object> container = ((List<Map<String, Object>>) spec.get("containers")).get(0);
        List<Map<String, Object>> env = (List<Map<String, Object>>) container.get("env");
        assertNotNull(env, "the delayq container has no env");
        int signing = 0;
        for (Map<String, Object> e : env) {
            String name = (String) e.get("name");
            if (!name.matches("DELAYQ_TOPICS_[A-Z0-9_]+_HTTP_SIGNING_KEYS")) {
                continue;
            }
            signing++;
            assertFalse(e.containsKey("value"), name + " is a literal");
            Map<String, Object> ref = (Map<String, Object>) ((Map<String, Object>) e.get("valueFrom")).get("secretKeyRef");
            assertNotNull(ref, name + " is not from a Secret");
            Map<String, Object> secret = docs("secret.yaml").stream()
                    .filter(d -> "Secret".equals(d.get("kind"))
                            && ref.get("name").equals(((Map<String, Object>) d.get("metadata")).get("name")))
                    .findFirst().orElseThrow(() -> new AssertionError("no Secret " + ref.get("name") + " in secret.yaml"));
            assertTrue(((Map<String, Object>) secret.get("stringData")).containsKey(ref.get("key")),
                    "Secret " + ref.get("name") + " has no key " + ref.get("key"));
        }
        assertEquals(1, signing, "one signed topic in the example");
    }
}
