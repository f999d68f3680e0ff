package io.delayq.dev;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A minimal blocking RESP2 client for tools around a real Redis: the tests' assertions (which
 * must look at the keys themselves, not through the code under test), the test clusters, the
 * benchmark's INFO readings. Not for delayq's own traffic.
 */
public final class Resp implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    public Resp(int port) {
        try {
            socket = new Socket("127.0.0.1", port);
            socket.setSoTimeout(10_000);
            in = new BufferedInputStream(socket.getInputStream());
            out = socket.getOutputStream();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Sends one command; returns String, Long, List&lt;Object&gt; or null. Error replies throw. */
    public synchronized Object call(Object... args) {
        try {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            b.write(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            for (Object a : args) {
                byte[] v = String.valueOf(a).getBytes(StandardCharsets.UTF_8);
                b.write(("$" + v.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
                b.write(v);
                b.write("\r\n".getBytes(StandardCharsets.US_ASCII));
            }
            out.write(b.toByteArray());
            out.flush();
            return read();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public String str(Object... args) {
        Object o = call(args);
        return o == null ? null : o.toString();
    }

    public long num(Object... args) {
        Object o = call(args);
        return o instanceof Long l ? l : Long.parseLong(o.toString());
    }

    @SuppressWarnings("unchecked")
    public List<Object> list(Object... args) {
        return (List<Object>) call(args);
    }

    /** Number of keys whose name matches the pattern (SCAN, so it never blocks Redis). */
    public long countKeys(String pattern) {
        long n = 0;
        String cursor = "0";
        do {
            List<Object> r = list("SCAN", cursor, "MATCH", pattern, "COUNT", 1000);
            cursor = r.get(0).toString();
            n += ((List<?>) r.get(1)).size();
        } while (!"0".equals(cursor));
        return n;
    }

    private Object read() throws IOException {
        int type = in.read();
        String line = line();
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new IllegalStateException(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int len = Integer.parseInt(line);
                if (len < 0) {
                    return null;
                }
                byte[] buf = in.readNBytes(len + 2);
                return new String(buf, 0, len, StandardCharsets.UTF_8);
            }
            case '*': {
                int len = Integer.parseInt(line);
                if (len < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(len);
                for (int i = 0; i < len; i++) {
                    items.add(read());
                }
                return items;
            }
            default:
                throw new IOException("unexpected RESP type " + (char) type);
        }
    }

    private String line() throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = in.read()) != '\r') {
            if (c < 0) {
                throw new IOException("connection closed");
            }
            sb.append((char) c);
        }
        in.read();
        return sb.toString();
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
