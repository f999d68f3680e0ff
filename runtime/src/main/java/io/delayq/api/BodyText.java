package io.delayq.api;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;

/**
 * An enqueue body as a {@link JsonParser} reads it, and the text of the spans it is asked to keep
 * (the payloads, stored as they are spelt). Read from the request's bytes, it holds only the spans
 * asked for and the last bytes read: not the body as text, not a tree of it. Read from a String
 * (a schedule's body, a body in another charset, bytes that are not UTF-8), it cuts the spans out
 * of that String.
 */
abstract class BodyText {
    /** The parser, once; standard JSON only. */
    abstract JsonParser open(JsonFactory strict) throws IOException;

    /** From here on, keep the text from the start of the parser's current token. */
    abstract void keepFromToken(JsonParser p);

    /** The text kept since {@link #keepFromToken}, up to the parser's current location; stops keeping. */
    abstract String kept(JsonParser p);

    static BodyText of(String body) {
        return new Chars(body);
    }

    /** UTF-8 bytes, read as they arrive. */
    static Bytes of(InputStream body) {
        return new Bytes(body);
    }

    private static final class Chars extends BodyText {
        private final String body;
        private int start;

        Chars(String body) {
            this.body = body;
        }

        @Override
        JsonParser open(JsonFactory strict) throws IOException {
            return strict.createParser(body);
        }

        @Override
        void keepFromToken(JsonParser p) {
            start = (int) p.currentTokenLocation().getCharOffset();
        }

        @Override
        String kept(JsonParser p) {
            return body.substring(start, (int) p.currentLocation().getCharOffset());
        }
    }

    /**
     * The body's bytes through a stream that remembers the last {@link Recorder#WINDOW} bytes read
     * (the parser reads ahead up to 8,000 bytes, and a token, a number of up to 1,000 digits,
     * can begin reads before the one it ends in: the stream of a body still arriving returns what
     * has come, a few bytes at times) and, while a span is kept, everything from its start.
     */
    static final class Bytes extends BodyText {
        private final Recorder in;

        Bytes(InputStream body) {
            this.in = new Recorder(body);
        }

        @Override
        JsonParser open(JsonFactory strict) throws IOException {
            return strict.createParser(in);
        }

        /** False when the parser is not one over UTF-8 bytes (a body in UTF-16 or UTF-32). */
        static boolean utf8(JsonParser p) {
            return p instanceof com.fasterxml.jackson.core.json.UTF8StreamJsonParser;
        }

        @Override
        void keepFromToken(JsonParser p) {
            in.keepFrom(p.currentTokenLocation().getByteOffset());
        }

        @Override
        String kept(JsonParser p) {
            return in.take(p.currentLocation().getByteOffset());
        }

        /** Whether the stream can be read again from its start (for {@link #reread}). */
        boolean rereadable() {
            return in.in.markSupported();
        }

        /** The whole body as text (bytes that are not UTF-8 replaced, as a String reader does), read from its start. */
        String reread() throws IOException {
            in.in.reset();
            return new String(in.in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static final class Recorder extends InputStream {
        final InputStream in;
        /** Bytes [from, from + length) of the body. */
        private byte[] buf = new byte[16384];
        private long from;
        private int length;
        /** Bytes held back when no span is kept; the older ones are dropped. */
        static final int WINDOW = 65536;
        private boolean keeping;

        Recorder(InputStream in) {
            this.in = in;
            if (in.markSupported()) {
                in.mark(Integer.MAX_VALUE);
            }
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = in.read(b, off, len);
            if (n > 0) {
                if (!keeping && length > 2 * WINDOW) {
                    drop(from + length - WINDOW); // now and then: each drop moves WINDOW bytes
                }
                if (length + n > buf.length) {
                    buf = java.util.Arrays.copyOf(buf, Math.max(buf.length * 2, length + n));
                }
                System.arraycopy(b, off, buf, length, n);
                length += n;
            }
            return n;
        }

        /** Drops the bytes before {@code offset}. */
        private void drop(long offset) {
            int cut = (int) Math.min(length, Math.max(0, offset - from));
            if (cut > 0) {
                System.arraycopy(buf, cut, buf, 0, length - cut);
                length -= cut;
                from += cut;
            }
        }

        void keepFrom(long offset) {
            if (offset < from) {
                throw new IllegalStateException("byte " + offset + " of the body is no longer held (from " + from + ")");
            }
            drop(offset);
            keeping = true;
        }

        String take(long end) {
            keeping = false;
            return new String(buf, 0, (int) (end - from), StandardCharsets.UTF_8);
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
