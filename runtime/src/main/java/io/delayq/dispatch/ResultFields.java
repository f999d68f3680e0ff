package io.delayq.dispatch;

import java.io.IOException;
import java.io.Writer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.SerializationFeature;

import io.delayq.core.Job;
import io.delayq.store.ResultRetention;

/**
 * A succeeded job's result as the field its ack keeps ({@link ResultRetention}), at most the
 * payload limit in UTF-8 bytes of JSON: an observer's result larger than that is dropped (its
 * writing stops at the limit: a 100 MB result is never built in full), an HTTP body's text is cut
 * to fit once written as a JSON string (escaping may make it up to six times longer), and a result
 * whose serializer throws, or whose JSON is not one value (a raw value written unchecked), is
 * dropped. Never throws but a {@link VirtualMachineError}: the ack must
 * be queued whatever the result does.
 */
final class ResultFields {
    /** What the field of a job with no result is (see {@link ResultRetention}). */
    static final String NONE = "";

    private final ObjectWriter writer;
    private final int maxBytes;

    ResultFields(ObjectMapper mapper, int maxBytes) {
        // Compact whatever the application's mapper is told (a line break would need a parser of
        // the kept entry that knows JSON: see lib.lua's keep_results).
        this.writer = mapper.writer().without(SerializationFeature.INDENT_OUTPUT);
        this.maxBytes = maxBytes;
    }

    /** How a result was kept. */
    enum Kind {
        NONE, KEPT, CUT, DROPPED
    }

    /** The field, and how it was kept (a dropped or cut one is counted). */
    record Field(String field, Kind kind) {
    }

    /** The field of the job's result; {@code why} gets the reason of a result that could not be written. */
    Field of(Job job, java.util.function.Consumer<Throwable> why) {
        if (!job.hasResult()) {
            return new Field(NONE, Kind.NONE);
        }
        try {
            if (job.resultIsBody()) {
                return body((String) job.resultValue(), job.resultIsCut());
            }
            Bounded out = new Bounded(maxBytes);
            writer.writeValue(out, job.resultValue());
            String json = out.toString();
            requireOneValue(json);
            return new Field(ResultRetention.kept(json), Kind.KEPT);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) { // a LinkageError of a serializer too: the job succeeded all the same
            if (!tooLarge(e)) {
                why.accept(e);
            }
            return new Field(ResultRetention.dropped(), Kind.DROPPED);
        }
    }

    /** A body's text as a JSON string, cut to its longest start that fits when it does not. */
    private Field body(String text, boolean cut) throws IOException {
        String json = writer.writeValueAsString(text);
        int bytes = utf8(json);
        int n = text.length();
        // Each round keeps the share of the text that fitted (and at least one character less): it
        // ends in a few rounds.
        for (int round = 0; bytes > maxBytes && round < 64; round++) {
            cut = true;
            n = Math.max(0, Math.min(n - 1, (int) ((long) n * maxBytes / bytes)));
            if (n > 0 && Character.isHighSurrogate(text.charAt(n - 1))) {
                n--; // never half a character
            }
            json = writer.writeValueAsString(text.substring(0, n));
            bytes = utf8(json);
        }
        if (bytes > maxBytes) {
            return new Field(ResultRetention.dropped(), Kind.DROPPED); // a limit below two quotes
        }
        return cut ? new Field(ResultRetention.cut(json), Kind.CUT) : new Field(ResultRetention.kept(json), Kind.KEPT);
    }

    /** Strict JSON, whatever the application's mapper allows (GET and listings embed it raw). */
    private static final JsonFactory STRICT = new JsonFactory();

    /**
     * Throws unless {@code json} is exactly one JSON value: a raw value ({@code @JsonRawValue},
     * {@code writeRawValue}) is written unchecked, and a broken one would make every REST body that
     * shows the result invalid JSON. Reads tokens only (no tree), at most the payload limit of them.
     */
    private static void requireOneValue(String json) throws IOException {
        try (JsonParser p = STRICT.createParser(json)) {
            if (p.nextToken() == null) {
                throw new JsonParseException(p, "no JSON value");
            }
            p.skipChildren();
            if (p.nextToken() != null) {
                throw new JsonParseException(p, "more than one JSON value");
            }
        }
    }

    private static boolean tooLarge(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof TooLarge) {
                return true;
            }
        }
        return false;
    }

    /** UTF-8 bytes of a string: as {@link Bounded} counts them. */
    static int utf8(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            n += bytes(s.charAt(i));
        }
        return n;
    }

    /** UTF-8 bytes of one char; each half of a surrogate pair 2 (the pair is 4). */
    private static int bytes(char c) {
        return c < 0x80 ? 1 : c < 0x800 || Character.isSurrogate(c) ? 2 : 3;
    }

    /** Past the limit: the writing stops. */
    private static final class TooLarge extends IOException {
        private static final long serialVersionUID = 1L;

        TooLarge() {
            super("larger than the payload limit", null);
        }
    }

    /** A writer that keeps what it is given while it is at most max UTF-8 bytes, and throws past it. */
    private static final class Bounded extends Writer {
        private final StringBuilder text = new StringBuilder();
        private final int max;
        private int bytes;

        Bounded(int max) {
            this.max = max;
        }

        @Override
        public void write(char[] cbuf, int off, int len) throws IOException {
            take(new String(cbuf, off, len));
        }

        @Override
        public void write(String s, int off, int len) throws IOException {
            take(s.substring(off, off + len));
        }

        private void take(String s) throws IOException {
            bytes += utf8(s);
            if (bytes > max) {
                throw new TooLarge();
            }
            text.append(s);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }

        @Override
        public String toString() {
            return text.toString();
        }
    }
}
