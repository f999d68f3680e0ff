package io.delayq.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import io.delayq.SignatureVerifier;

/** What delayq signs ({@link RequestSigner}) is what {@link SignatureVerifier} accepts, and nothing else. */
class SignatureVerifierTest {
    static final String OLD = "old-key-0123456789abcdef";
    static final String NEW = "new-key-fedcba9876543210";
    static final long T = 1_764_640_000_000L;
    static final byte[] BODY = "{\"order\":42,\"note\":\"é\"}".getBytes(StandardCharsets.UTF_8);
    static final Clock AT_T = Clock.fixed(Instant.ofEpochMilli(T), ZoneOffset.UTC);

    static String header(String keys) {
        return RequestSigner.of("orders", Optional.of(keys)).orElseThrow().sign(T, "orders", "order-42", 3, BODY);
    }

    @Test
    void aCallSignedWithTwoKeysVerifiesWithEitherKeyAlone() {
        String h = header(OLD + "," + NEW);
        assertEquals(2, h.split("v1=").length - 1, "one v1 per key: " + h);
        assertTrue(SignatureVerifier.of(AT_T, NEW).verify(h, "orders", "order-42", "3", BODY));
        assertTrue(SignatureVerifier.of(AT_T, OLD).verify(h, "orders", "order-42", "3", BODY));
        assertTrue(SignatureVerifier.of(AT_T, OLD, NEW).verify(h, "orders", "order-42", "3", BODY));
    }

    @Test
    void theHeaderIsTheContractsHmacOverTimeTopicIdAttemptAndBody() {
        String h = header(NEW);
        assertEquals("t=" + T + ",v1=" + SignatureVerifier.sign(NEW, T, "orders", "order-42", 3, BODY), h);
    }

    @Test
    void aTamperedBodyTopicIdOrAttemptIsRejected() {
        String h = header(OLD + "," + NEW);
        SignatureVerifier v = SignatureVerifier.of(AT_T, NEW);
        byte[] tampered = "{\"order\":43,\"note\":\"é\"}".getBytes(StandardCharsets.UTF_8);
        assertFalse(v.verify(h, "orders", "order-42", "3", tampered), "body");
        assertFalse(v.verify(h, "orders2", "order-42", "3", BODY), "topic");
        assertFalse(v.verify(h, "orders", "order-43", "3", BODY), "id");
        assertFalse(v.verify(h, "orders", "order-42", "4", BODY), "attempt");
        assertFalse(v.verify(h.replace("t=" + T, "t=" + (T + 1)), "orders", "order-42", "3", BODY), "t");
    }

    @Test
    void aStaleOrFutureTimeIsRejectedPastFiveMinutes() {
        String h = header(NEW);
        long fiveMin = 5 * 60_000;
        Clock late = Clock.fixed(Instant.ofEpochMilli(T + fiveMin + 1), ZoneOffset.UTC);
        Clock early = Clock.fixed(Instant.ofEpochMilli(T - fiveMin - 1), ZoneOffset.UTC);
        Clock justInTime = Clock.fixed(Instant.ofEpochMilli(T + fiveMin), ZoneOffset.UTC);
        assertFalse(SignatureVerifier.of(late, NEW).verify(h, "orders", "order-42", "3", BODY), "stale");
        assertFalse(SignatureVerifier.of(early, NEW).verify(h, "orders", "order-42", "3", BODY), "from the future");
        assertTrue(SignatureVerifier.of(justInTime, NEW).verify(h, "orders", "order-42", "3", BODY));
    }

    @Test
    void aWrongKeyOrAMalformedHeaderIsRejected() {
        String h = header(OLD);
        assertFalse(SignatureVerifier.of(AT_T, NEW).verify(h, "orders", "order-42", "3", BODY));
        SignatureVerifier v = SignatureVerifier.of(AT_T, OLD);
        assertFalse(v.verify(null, "orders", "order-42", "3", BODY));
        assertFalse(v.verify("", "orders", "order-42", "3", BODY));
        assertFalse(v.verify("t=" + T, "orders", "order-42", "3", BODY), "no v1");
        assertFalse(v.verify("t=x," + h.substring(h.indexOf(",") + 1), "orders", "order-42", "3", BODY), "t not a number");
        assertFalse(v.verify("t=" + T + ",v1=zz", "orders", "order-42", "3", BODY), "v1 not hex");
    }

    @Test
    void aVerifierGivenTheServersConfiguredValueReadsItsKeysAsTheServerDoes() {
        String configured = " " + OLD + " ,\n" + NEW + "\n"; // a Secret's value, as mounted: spaces, a newline
        String h = header(configured);
        SignatureVerifier v = SignatureVerifier.fromConfig(AT_T, configured);
        assertTrue(v.verify(h, "orders", "order-42", "3", BODY));
        assertTrue(v.verify(header(NEW), "orders", "order-42", "3", BODY), "the second key alone");
        assertTrue(v.verify(header(OLD), "orders", "order-42", "3", BODY), "the first key alone");
        assertTrue(SignatureVerifier.fromConfig(AT_T, NEW + "\n").verify(h, "orders", "order-42", "3", BODY),
                "a trailing newline is not part of the key");
        IllegalArgumentException shortKey = assertThrows(IllegalArgumentException.class,
                () -> SignatureVerifier.fromConfig(NEW + ", tooShortKey"));
        assertTrue(shortKey.getMessage().contains("key 2 of 2"), shortKey.getMessage());
        assertFalse(shortKey.getMessage().contains("tooShortKey") || shortKey.getMessage().contains(NEW), "no key in it");
        assertThrows(IllegalArgumentException.class, () -> SignatureVerifier.fromConfig(NEW + ","), "an empty key");
    }

    @Test
    void anEmptyOrShortKeyFailsNamingTheTopicButNotTheKey() {
        IllegalStateException shortKey = assertThrows(IllegalStateException.class,
                () -> RequestSigner.of("orders", Optional.of(NEW + ",tooShortKey")));
        assertTrue(shortKey.getMessage().contains("delayq.topics.orders.http.signing-keys"), shortKey.getMessage());
        assertTrue(shortKey.getMessage().contains("key 2 of 2"), shortKey.getMessage());
        assertFalse(shortKey.getMessage().contains("tooShortKey") || shortKey.getMessage().contains(NEW), "no key in it");
        IllegalStateException empty = assertThrows(IllegalStateException.class,
                () -> RequestSigner.of("orders", Optional.of(" ")));
        assertTrue(empty.getMessage().contains("empty"), empty.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SignatureVerifier.of("tooShortKey"));
        assertTrue(RequestSigner.of("orders", Optional.empty()).isEmpty(), "no keys: unsigned");
    }

    @Test
    void keysAreTrimmedAsASecretsTrailingNewlineIs() {
        String h = RequestSigner.of("orders", Optional.of(OLD + " ,\n" + NEW + "\n")).orElseThrow()
                .sign(T, "orders", "order-42", 3, BODY);
        assertTrue(SignatureVerifier.of(AT_T, NEW).verify(h, "orders", "order-42", "3", BODY));
        assertFalse(RequestSigner.of("orders", Optional.of(NEW)).orElseThrow().toString().contains(NEW));
        assertFalse(SignatureVerifier.of(NEW).toString().contains(NEW));
    }
}
