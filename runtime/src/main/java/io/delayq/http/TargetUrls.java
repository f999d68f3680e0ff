package io.delayq.http;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Optional;

/**
 * What a person or a log may see of a configured target URL ({@code http.url}, {@code dead-url},
 * and any URL setting to come): the URL without its user info and without its query values, e.g.
 * {@code http://hookuser:pw@host/hook?sig=abc} is shown as {@code http://***@host/hook?sig=***}.
 * Webhook receivers often take their key in the query string, and a URL's user info is a
 * password: neither belongs in {@code GET /topics}, a job's {@code lastError}, the dashboard, the
 * Dev UI or the start-up log, which viewers and log readers see.
 *
 * <p>The user info is not dropped from the call: {@link #basicAuthorization} turns it into the
 * {@code Authorization: Basic} header the target receives (a URL's user info is never sent as
 * such by an HTTP client).
 */
public final class TargetUrls {
    private static final String HIDDEN = "***";

    private TargetUrls() {
    }

    /**
     * {@code url} as it may be shown: user info replaced by {@code ***}, each query parameter's
     * value replaced by {@code ***} (names kept: they say which secret it is), the fragment
     * dropped. A string that is not a valid URL is shown with whatever precedes its last {@code @}
     * and whatever follows its first {@code ?} or {@code #} hidden the same way, so a malformed
     * setting with a secret in it is not echoed either.
     */
    public static String redact(String url) {
        if (url == null) {
            return null;
        }
        URI uri;
        try {
            uri = new URI(url);
        } catch (java.net.URISyntaxException e) {
            return roughly(url);
        }
        if (uri.getScheme() == null || uri.isOpaque() || uri.getRawAuthority() == null) {
            return roughly(url);
        }
        StringBuilder s = new StringBuilder(uri.getScheme()).append("://");
        if (uri.getRawUserInfo() != null) {
            s.append(HIDDEN).append('@');
        }
        if (uri.getHost() != null) {
            s.append(uri.getHost().contains(":") && !uri.getHost().startsWith("[") ? "[" + uri.getHost() + "]" : uri.getHost());
            if (uri.getPort() >= 0) {
                s.append(':').append(uri.getPort());
            }
        } else {
            // A registry-based authority (no host parsed): only what follows its last '@'.
            String a = uri.getRawAuthority();
            s.append(a.substring(a.lastIndexOf('@') + 1));
        }
        s.append(uri.getRawPath() == null ? "" : uri.getRawPath());
        if (uri.getRawQuery() != null) {
            s.append('?').append(query(uri.getRawQuery()));
        }
        return s.toString();
    }

    /**
     * {@code url} parsed; a malformed one is refused with a message that names {@code setting}
     * and shows the URL redacted (the JDK's own message would repeat it whole).
     */
    public static URI parse(String setting, String url) {
        try {
            return new URI(url);
        } catch (java.net.URISyntaxException e) {
            throw new IllegalArgumentException(setting + " is not a valid URL: " + redact(url) + " (" + e.getReason()
                    + " at index " + e.getIndex() + ")");
        }
    }

    /** {@code a=1&b&c=2} → {@code a=***&b&c=***}. */
    private static String query(String raw) {
        StringBuilder s = new StringBuilder();
        for (String part : raw.split("&", -1)) {
            if (s.length() > 0) {
                s.append('&');
            }
            int eq = part.indexOf('=');
            s.append(eq < 0 ? part : part.substring(0, eq + 1) + HIDDEN);
        }
        return s.toString();
    }

    private static String roughly(String text) {
        int start = text.indexOf("://");
        String head = start < 0 ? "" : text.substring(0, start + 3);
        String rest = start < 0 ? text : text.substring(start + 3);
        int cut = rest.length();
        for (char c : new char[] { '?', '#' }) {
            int i = rest.indexOf(c);
            if (i >= 0 && i < cut) {
                cut = i;
            }
        }
        String kept = rest.substring(0, cut);
        int at = kept.lastIndexOf('@');
        return head + (at < 0 ? kept : HIDDEN + kept.substring(at)) + (cut < rest.length() ? "?" + HIDDEN : "");
    }

    /**
     * The {@code Authorization} header value for a URL with user info ({@code user:password@},
     * percent-encoded as URLs require: {@code %40} for an {@code @} in a password): {@code Basic}
     * and the Base64 of {@code user:password} (RFC 7617, UTF-8). Empty without user info.
     */
    public static Optional<String> basicAuthorization(URI uri) {
        String raw = uri.getRawUserInfo();
        if (raw == null || raw.isEmpty()) {
            return Optional.empty();
        }
        int colon = raw.indexOf(':');
        String user = decode(colon < 0 ? raw : raw.substring(0, colon));
        String password = colon < 0 ? "" : decode(raw.substring(colon + 1));
        return Optional.of("Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8)));
    }

    private static String decode(String s) {
        // URLDecoder would turn '+' into a space: in user info a '+' is itself.
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }
}
