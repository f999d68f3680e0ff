package io.delayq.http;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import io.delayq.SignatureVerifier;

/**
 * Signs delayq's calls of a topic with {@code delayq.topics.<t>.http.signing-keys}: the value of
 * {@code X-Delayq-Signature}, {@code t=<epoch ms>,v1=<hex>[,v1=<hex>...]}, one {@code v1} per key
 * (see {@link SignatureVerifier}, which checks it).
 *
 * <p>Not thread-safe: each holds one initialised {@link Mac} per key, reused call after call (a
 * {@code Mac} resets itself after {@code doFinal}, keeping its key: no key schedule and no lookup
 * of the algorithm per call), so one signer serves one event loop (an HTTP target's, the dead-job
 * callbacks'). The keys are held only inside the Macs; {@link #toString()} never shows them.
 */
public final class RequestSigner {
    private static final HexFormat HEX = HexFormat.of();
    private final Mac[] macs;
    private final StringBuilder header = new StringBuilder(16 + 68 * 2);

    private RequestSigner(Mac[] macs) {
        this.macs = macs;
    }

    /**
     * The signer of a topic's configured keys, or empty when it has none. Keys are comma separated,
     * whitespace around each ignored (a Secret mounted as an env var often ends in a newline); a key
     * that is empty or shorter than {@link SignatureVerifier#MIN_KEY_BYTES} bytes fails start-up
     * naming the topic and the key's position, never its value.
     */
    public static Optional<RequestSigner> of(String topic, Optional<String> configured) {
        if (configured.isEmpty()) {
            requireUnset(topic);
            return Optional.empty();
        }
        List<byte[]> keys = parse(topic, configured.get());
        return Optional.of(new RequestSigner(macs(keys)));
    }

    /**
     * A property that is set but empty reads as no keys ({@code signing-keys=}, or
     * {@code ${DELAYQ_KEYS:}} with the variable unset, an env variable set to ""): the topic would
     * go out unsigned while its operator believes it signed. That fails the start, naming the topic.
     */
    private static void requireUnset(String topic) {
        io.smallrye.config.SmallRyeConfig config;
        try {
            config = (io.smallrye.config.SmallRyeConfig) org.eclipse.microprofile.config.ConfigProvider.getConfig();
        } catch (RuntimeException e) {
            return; // no SmallRye config here (a plain unit test): nothing configured to check
        }
        // Sources match names as written: the topic plain and quoted (the guide's spelling for a
        // topic with '-' or '.') are two names; a dotted topic can only be written quoted.
        List<String> names = topic.contains(".") ? List.of(nameOf('"' + topic + '"'))
                : List.of(nameOf(topic), nameOf('"' + topic + '"'));
        for (String name : names) {
            io.smallrye.config.ConfigValue value = config.getConfigValue(name);
            if (value.getSourceName() != null) {
                throw new IllegalStateException(name + " is set (in " + value.getSourceName() + ") but empty: the "
                        + "topic's calls would go out unsigned. Give it at least one key, or remove the property");
            }
        }
    }

    private static String nameOf(String topicSegment) {
        return "delayq.topics." + topicSegment + ".http.signing-keys";
    }

    /** A new signer with the same keys, for another event loop. */
    public RequestSigner copy() {
        try {
            Mac[] copies = new Mac[macs.length];
            for (int i = 0; i < macs.length; i++) {
                copies[i] = (Mac) macs[i].clone();
            }
            return new RequestSigner(copies);
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException(e);
        }
    }

    static List<byte[]> parse(String topic, String value) {
        String[] parts = value.split(",", -1);
        List<byte[]> keys = new ArrayList<>(parts.length);
        for (int i = 0; i < parts.length; i++) {
            byte[] key = parts[i].strip().getBytes(StandardCharsets.UTF_8);
            if (key.length < SignatureVerifier.MIN_KEY_BYTES) {
                throw new IllegalStateException("delayq.topics." + topic + ".http.signing-keys: key " + (i + 1) + " of "
                        + parts.length + " is " + (key.length == 0 ? "empty" : key.length + " bytes long")
                        + "; each key must have at least " + SignatureVerifier.MIN_KEY_BYTES
                        + " bytes (32 random bytes, e.g. openssl rand -hex 32, are recommended)");
            }
            keys.add(key);
        }
        return keys;
    }

    private static Mac[] macs(List<byte[]> keys) {
        try {
            Mac[] macs = new Mac[keys.size()];
            for (int i = 0; i < macs.length; i++) {
                macs[i] = Mac.getInstance("HmacSHA256");
                macs[i].init(new SecretKeySpec(keys.get(i), "HmacSHA256"));
            }
            return macs;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Number of keys, so of {@code v1} values per header. */
    public int keys() {
        return macs.length;
    }

    /** The {@code X-Delayq-Signature} value of one call sent at {@code t} (epoch ms) with {@code body}. */
    public String sign(long t, String topic, String id, int attempt, byte[] body) {
        byte[] prefix = (t + "." + topic + "." + id + "." + attempt + ".").getBytes(StandardCharsets.UTF_8);
        StringBuilder h = header;
        h.setLength(0);
        h.append("t=").append(t);
        for (Mac mac : macs) {
            mac.update(prefix);
            h.append(",v1=");
            HEX.formatHex(h, mac.doFinal(body));
        }
        return h.toString();
    }

    @Override
    public String toString() {
        return "RequestSigner[" + macs.length + " key(s)]";
    }
}
