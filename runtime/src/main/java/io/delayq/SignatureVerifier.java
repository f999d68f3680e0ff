package io.delayq;

import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Checks the {@code X-Delayq-Signature} of a call delayq made: an HTTP target's job call or a
 * dead-job callback of a topic with {@code delayq.topics.<t>.http.signing-keys}. For a receiver
 * written in Java:
 *
 * <pre>{@code
 * SignatureVerifier verifier = SignatureVerifier.of(System.getenv("DELAYQ_SIGNING_KEY"));
 * boolean genuine = verifier.verify(request.header("X-Delayq-Signature"), request.header("X-Delayq-Topic"),
 *         request.header("X-Delayq-Job-Id"), request.header("X-Delayq-Attempt"), bodyBytes);
 * if (!genuine) { answer 401 }
 * }</pre>
 *
 * <p>The header is {@code t=<epoch ms>,v1=<hex>[,v1=<hex>...]}, one {@code v1} per key the sender
 * holds, each {@code hex(HMAC-SHA256(key, t + "." + topic + "." + id + "." + attempt + "." + body))}
 * over the exact body bytes received. A call is genuine when any {@code v1} matches any of this
 * verifier's keys (compared in constant time) and {@code t} is within {@link #TOLERANCE} of this
 * host's clock, either way (a replayed call is refused after that). Rotation: the sender gets the
 * new key beside the old one, receivers move to the new key, then the sender drops the old one;
 * every call carries a {@code v1} for both meanwhile, so no call fails.
 *
 * <p>Thread-safe; keep one instance (a {@link Mac} is made per call, from the keys read once).
 */
public final class SignatureVerifier {
    /** How far {@code t} may be from now, before or after: 5 minutes. */
    public static final Duration TOLERANCE = Duration.ofMinutes(5);
    /** Shortest key delayq accepts, in bytes (UTF-8): 16. */
    public static final int MIN_KEY_BYTES = 16;
    private static final String ALGORITHM = "HmacSHA256";
    private final List<SecretKeySpec> keys;
    private final Clock clock;

    private SignatureVerifier(List<SecretKeySpec> keys, Clock clock) {
        this.keys = keys;
        this.clock = clock;
    }

    /**
     * A verifier that accepts calls signed with any of {@code keys}, one key each; whitespace around
     * a key is ignored, as delayq ignores it.
     */
    public static SignatureVerifier of(String... keys) {
        return of(Clock.systemUTC(), keys);
    }

    /**
     * A verifier of the keys in {@code configured} read exactly as delayq reads
     * {@code delayq.topics.<t>.http.signing-keys}: comma separated, whitespace around each ignored
     * (a Secret mounted as an environment variable often ends in a newline), each at least
     * {@link #MIN_KEY_BYTES} bytes. So a receiver can be given the very value the server has.
     *
     * @throws IllegalArgumentException naming the position of a key that is empty or too short (never its value)
     */
    public static SignatureVerifier fromConfig(String configured) {
        return fromConfig(Clock.systemUTC(), configured);
    }

    /** As {@link #fromConfig(String)}, with the clock {@code t} is compared to (for tests). */
    public static SignatureVerifier fromConfig(Clock clock, String configured) {
        if (configured == null) {
            throw new IllegalArgumentException("SignatureVerifier needs at least one key");
        }
        String[] parts = configured.split(",", -1);
        for (int i = 0; i < parts.length; i++) {
            int bytes = parts[i].strip().getBytes(StandardCharsets.UTF_8).length;
            if (bytes < MIN_KEY_BYTES) {
                throw new IllegalArgumentException("signing key " + (i + 1) + " of " + parts.length + " is "
                        + (bytes == 0 ? "empty" : bytes + " bytes long") + "; each key must have at least "
                        + MIN_KEY_BYTES + " bytes");
            }
        }
        return of(clock, parts);
    }

    /** As {@link #of(String...)}, with the clock {@code t} is compared to (for tests). */
    public static SignatureVerifier of(Clock clock, String... keys) {
        if (keys.length == 0) {
            throw new IllegalArgumentException("SignatureVerifier needs at least one key");
        }
        List<SecretKeySpec> specs = new ArrayList<>(keys.length);
        for (String k : keys) {
            if (k == null || k.strip().getBytes(StandardCharsets.UTF_8).length < MIN_KEY_BYTES) {
                throw new IllegalArgumentException("a signing key has at least " + MIN_KEY_BYTES + " bytes");
            }
            specs.add(new SecretKeySpec(k.strip().getBytes(StandardCharsets.UTF_8), ALGORITHM));
        }
        return new SignatureVerifier(List.copyOf(specs), clock);
    }

    /**
     * Whether the call is genuine: {@code header} is its {@code X-Delayq-Signature}, then its
     * {@code X-Delayq-Topic}, {@code X-Delayq-Job-Id} and {@code X-Delayq-Attempt} headers (as
     * received: they are part of what is signed) and its body bytes exactly as received. False for
     * a missing or malformed header, a {@code t} more than {@link #TOLERANCE} away, or no match.
     */
    public boolean verify(String header, String topic, String id, String attempt, byte[] body) {
        if (header == null || topic == null || id == null || attempt == null || body == null) {
            return false;
        }
        String t = null;
        List<byte[]> given = new ArrayList<>(2);
        for (String part : header.split(",")) {
            String p = part.trim();
            if (p.startsWith("t=")) {
                t = p.substring(2);
            } else if (p.startsWith("v1=")) {
                try {
                    given.add(HexFormat.of().parseHex(p.substring(3)));
                } catch (IllegalArgumentException e) {
                    // not hex: this one can match nothing
                }
            }
        }
        if (t == null || given.isEmpty() || !fresh(t)) {
            return false;
        }
        byte[] prefix = (t + "." + topic + "." + id + "." + attempt + ".").getBytes(StandardCharsets.UTF_8);
        boolean match = false;
        for (SecretKeySpec key : keys) {
            byte[] expected = hmac(key, prefix, body);
            for (byte[] g : given) {
                // Every pair compared, in constant time: how far a guess got must not show in the time taken.
                match |= MessageDigest.isEqual(expected, g);
            }
        }
        return match;
    }

    /** As {@link #verify(String, String, String, String, byte[])} with a UTF-8 text body. */
    public boolean verify(String header, String topic, String id, String attempt, String body) {
        return verify(header, topic, id, attempt, body == null ? null : body.getBytes(StandardCharsets.UTF_8));
    }

    private boolean fresh(String t) {
        long sent;
        try {
            sent = Long.parseLong(t);
        } catch (NumberFormatException e) {
            return false;
        }
        return Math.abs(clock.millis() - sent) <= TOLERANCE.toMillis();
    }

    /** The v1 of one key as delayq computes it (hex). */
    public static String sign(String key, long t, String topic, String id, int attempt, byte[] body) {
        byte[] prefix = (t + "." + topic + "." + id + "." + attempt + ".").getBytes(StandardCharsets.UTF_8);
        return HexFormat.of().formatHex(hmac(new SecretKeySpec(key.getBytes(StandardCharsets.UTF_8), ALGORITHM), prefix, body));
    }

    private static byte[] hmac(SecretKeySpec key, byte[] prefix, byte[] body) {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(key);
            mac.update(prefix);
            return mac.doFinal(body);
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String toString() {
        return "SignatureVerifier[" + keys.size() + " key(s)]"; // never the keys
    }
}
