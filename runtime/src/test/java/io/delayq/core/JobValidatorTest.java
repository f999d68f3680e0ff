package io.delayq.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * The topic and id checks are char loops (less for a fresh replica's JIT than java.util.regex):
 * they must accept exactly what the patterns {@link JobValidator#TOPIC} and {@link JobValidator#ID}
 * (the documented rules, quoted in the 400 messages) accept.
 */
class JobValidatorTest {
    static final String ALPHABET = "azAZ09._:-/ \u00e9\u0130\u212a\u0000\n~";

    @Test
    void topicsAsThePattern() {
        for (String t : List.of("a", "0", "orders", "a.b_c-d", "9lives", "a".repeat(64))) {
            assertTrue(JobValidator.isTopic(t), t);
            assertTrue(JobValidator.TOPIC.matcher(t).matches(), t);
        }
        for (String t : List.of("", "A", "Orders", ".a", "_a", "-a", "a:b", "a b", "a/b", "a".repeat(65), "caf\u00e9",
                "\u212a", "a\n")) {
            assertFalse(JobValidator.isTopic(t), t);
            assertFalse(JobValidator.TOPIC.matcher(t).matches(), t);
        }
        assertFalse(JobValidator.isTopic(null));
    }

    @Test
    void idsAsThePattern() {
        for (String id : List.of("a", "Z", "0", ".", "..", "-", "order:42", "A.b_C-d:9", "x".repeat(128))) {
            assertTrue(JobValidator.isId(id), id);
            assertTrue(JobValidator.ID.matcher(id).matches(), id);
        }
        for (String id : List.of("", "a b", "a/b", "a?b", "x".repeat(129), "\u0130d", "\u212a", "a\u0000", "id\n", "~")) {
            assertFalse(JobValidator.isId(id), id);
            assertFalse(JobValidator.ID.matcher(id).matches(), id);
        }
        assertFalse(JobValidator.isId(null));
    }

    /** Random strings over the rules' edges (first char, lengths 0..130, non-ASCII look-alikes). */
    @Test
    void randomStringsAsThePatterns() {
        Random random = new Random(36);
        for (int i = 0; i < 200_000; i++) {
            int length = switch (random.nextInt(4)) {
                case 0 -> random.nextInt(4);
                case 1 -> 62 + random.nextInt(5);
                case 2 -> 126 + random.nextInt(5);
                default -> random.nextInt(131);
            };
            StringBuilder b = new StringBuilder(length);
            for (int j = 0; j < length; j++) {
                // mostly valid characters, so that long strings that match are common too
                b.append(random.nextInt(40) == 0 ? ALPHABET.charAt(random.nextInt(ALPHABET.length()))
                        : "abcxyz0189._-:ABZ".charAt(random.nextInt(17)));
            }
            String s = b.toString();
            assertEquals(JobValidator.TOPIC.matcher(s).matches(), JobValidator.isTopic(s), s);
            assertEquals(JobValidator.ID.matcher(s).matches(), JobValidator.isId(s), s);
        }
    }

    @Test
    void checksNameTheFieldAndThePattern() {
        InvalidJobException e = assertThrows(InvalidJobException.class, () -> JobValidator.checkTopic("topic", "Bad"));
        assertTrue(e.getMessage().contains("topic must match " + JobValidator.TOPIC.pattern()), e.getMessage());
        e = assertThrows(InvalidJobException.class, () -> JobValidator.checkTopic("topic", ""));
        assertTrue(e.getMessage().contains("topic is required"), e.getMessage());
        e = assertThrows(InvalidJobException.class, () -> JobValidator.checkId("group", "a b"));
        assertTrue(e.getMessage().contains("group must match " + JobValidator.ID.pattern()), e.getMessage());
        e = assertThrows(InvalidJobException.class, () -> JobValidator.checkId("id", ".."));
        assertTrue(e.getMessage().contains("must not be"), e.getMessage());
        JobValidator.checkTopic("topic", "orders");
        JobValidator.checkId("id", "order:42");
    }
}
