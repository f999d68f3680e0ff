package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.Job;

/**
 * A result's field is measured in UTF-8 bytes of its JSON against the payload limit: non-ASCII
 * and escaped text count as what they become; an observer's result past the limit is dropped
 * without being written in full; an HTTP body's text is cut after escaping, to fit; a serializer
 * that throws an Error drops the result and lets the job succeed.
 */
class ResultFieldsTest {
    private static final int LIMIT = 1000;
    private final ObjectMapper mapper = new ObjectMapper();
    private final ResultFields fields = new ResultFields(mapper, LIMIT);
    private final List<Throwable> why = new ArrayList<>();

    private Job job() {
        return new Job("id", "topic", 1, Instant.EPOCH, null, mapper);
    }

    private ResultFields.Field of(Job job) {
        return fields.of(job, why::add);
    }

    private static int bytes(String field) {
        return field.substring(1).getBytes(StandardCharsets.UTF_8).length;
    }

    @Test
    void aNonAsciiResultWithinTheLimitInCharactersButNotInBytesIsDropped() {
        Job job = job();
        job.result("é".repeat(600)); // 602 characters of JSON, 1,202 bytes
        assertEquals(ResultFields.Kind.DROPPED, of(job).kind());
        job.result("é".repeat(400)); // 802 bytes
        ResultFields.Field kept = of(job);
        assertEquals(ResultFields.Kind.KEPT, kept.kind());
        assertEquals(802, bytes(kept.field()));
        assertEquals(List.of(), why, "too large is no error of the serializer");
    }

    @Test
    void aResultLargerThanTheLimitIsNotWrittenInFull() {
        Job job = job();
        // Endless: only a writer that stops at the limit ends.
        job.result(new Iterator<String>() {
            @Override
            public boolean hasNext() {
                return true;
            }

            @Override
            public String next() {
                return "more";
            }
        });
        assertEquals(ResultFields.Kind.DROPPED,
                assertTimeoutPreemptively(Duration.ofSeconds(60), () -> of(job)).kind());
    }

    @Test
    void aBodyThatGrowsWhenEscapedIsCutAfterEscapingToFit() {
        Job job = job();
        // 900 bytes as read, 1,802 as a JSON string: kept cut, not dropped.
        job.resultBody("\"".repeat(900), false);
        ResultFields.Field cut = of(job);
        assertEquals(ResultFields.Kind.CUT, cut.kind());
        assertTrue(bytes(cut.field()) <= LIMIT, "within the limit: " + bytes(cut.field()));
        assertTrue(bytes(cut.field()) >= LIMIT - 4, "its longest start that fits: " + bytes(cut.field()));
        // Non-ASCII text and control characters (\u0001 becomes six characters) too.
        job.resultBody("ü\u0001".repeat(400), false);
        ResultFields.Field mixed = of(job);
        assertEquals(ResultFields.Kind.CUT, mixed.kind());
        assertTrue(bytes(mixed.field()) <= LIMIT, "within the limit: " + bytes(mixed.field()));
        // A body that fits stays whole, a cut one stays flagged.
        job.resultBody("ok", false);
        assertEquals("=\"ok\"", of(job).field());
        job.resultBody("ok", true);
        assertEquals("~\"ok\"", of(job).field());
    }

    /** A value whose serializer fails with an Error (as a class missing at run time would). */
    public static final class Broken {
        public String getValue() {
            throw new NoClassDefFoundError("com/example/Gone");
        }
    }

    @Test
    void aSerializerThrowingAnErrorDropsTheResult() {
        Job job = job();
        job.result(new Broken());
        assertEquals(ResultFields.Kind.DROPPED, of(job).kind());
        assertEquals(1, why.size(), "the reason, for the WARN");
    }

    /** A raw value ({@code @JsonRawValue}) that is not JSON: kept, it would make GET's body invalid JSON. */
    public record Raw(@com.fasterxml.jackson.annotation.JsonRawValue String value) {
    }

    @Test
    void aResultThatIsNotOneJsonValueIsDroppedAndTheJobStillSucceeds() {
        for (String raw : new String[] { "{\"broken\":", "1 2", "[1,]", "{\"a\":1}}" }) {
            Job job = job();
            job.result(new Raw(raw));
            assertEquals(ResultFields.Kind.DROPPED, of(job).kind(), raw);
        }
        assertEquals(4, why.size(), "each logged: " + why);
        Job fine = job();
        fine.result(new Raw("{\"ok\": [1, 2]}"));
        ResultFields.Field kept = of(fine);
        assertEquals(ResultFields.Kind.KEPT, kept.kind());
        assertEquals("={\"value\":{\"ok\": [1, 2]}}", kept.field());
    }
}
