package io.delayq.cli;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.NullNode;

/**
 * The server's REST API, with the JDK's HTTP client. Every call is bounded: the connection by
 * the timeout, the whole exchange by the timeout again, so no command waits on a server that is
 * gone or frozen. A status that is not a success ends the command ({@link CliFailure}) with its
 * exit code and the problem body's detail.
 */
final class Api {
    static final ObjectMapper JSON = new ObjectMapper();

    /** A success: its status, its body as JSON (a {@link NullNode} for none) and its headers. */
    record Reply(int status, JsonNode body, java.net.http.HttpHeaders headers) {
    }

    private final String base;
    private final String authorization;
    private final Duration timeout;
    private final HttpClient http;

    Api(String url, String token, String user, Duration timeout) {
        this.base = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
        if (token != null && !token.isEmpty()) {
            authorization = "Bearer " + token;
        } else if (user != null && !user.isEmpty()) {
            authorization = "Basic " + Base64.getEncoder().encodeToString(user.getBytes(StandardCharsets.UTF_8));
        } else {
            authorization = null;
        }
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().connectTimeout(timeout).followRedirects(HttpClient.Redirect.NEVER).build();
    }

    /** One path segment or query value, encoded. */
    static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    Reply get(String path) {
        return send("GET", path, null);
    }

    Reply post(String path, String json) {
        return send("POST", path, json);
    }

    Reply put(String path, String json) {
        return send("PUT", path, json);
    }

    Reply patch(String path, String json) {
        return send("PATCH", path, json);
    }

    Reply delete(String path) {
        return send("DELETE", path, null);
    }

    Reply send(String method, String path, String json) {
        URI uri;
        try {
            uri = URI.create(base + path);
        } catch (IllegalArgumentException e) {
            throw new CliFailure(Exit.USAGE, "not a URL: " + base + path);
        }
        if (uri.getScheme() == null || !(uri.getScheme().equals("http") || uri.getScheme().equals("https"))
                || uri.getHost() == null) {
            throw new CliFailure(Exit.USAGE, "--url must be an http(s) URL with a host, not " + base);
        }
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(timeout).header("Accept", "application/json");
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        if (json != null) {
            b.header("Content-Type", "application/json");
            b.method(method, HttpRequest.BodyPublishers.ofString(json, StandardCharsets.UTF_8));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<String> r;
        try {
            r = http.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (HttpConnectTimeoutException e) {
            throw new CliFailure(Exit.UNAVAILABLE, "cannot connect to " + base + " within " + Durations.text(timeout));
        } catch (HttpTimeoutException e) {
            throw new CliFailure(Exit.UNAVAILABLE, "no answer from " + base + " within " + Durations.text(timeout));
        } catch (ConnectException e) {
            throw new CliFailure(Exit.UNAVAILABLE, "cannot connect to " + base + " (connection refused)");
        } catch (IOException e) {
            throw new CliFailure(Exit.UNAVAILABLE, "cannot reach " + base + ": " + describe(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliFailure(Exit.UNAVAILABLE, "interrupted");
        }
        JsonNode body = parse(r.body());
        if (r.statusCode() >= 200 && r.statusCode() < 300) {
            return new Reply(r.statusCode(), body, r.headers());
        }
        throw new CliFailure(Exit.of(r.statusCode()), problem(method, path, r.statusCode(), body, r.body()));
    }

    private static String describe(IOException e) {
        String m = e.getMessage();
        if (m == null && e.getCause() != null) {
            m = e.getCause().toString();
        }
        return m == null ? e.getClass().getSimpleName() : m;
    }

    private static JsonNode parse(String text) {
        if (text == null || text.isBlank()) {
            return NullNode.getInstance();
        }
        try {
            return JSON.readTree(text);
        } catch (IOException e) {
            return JSON.getNodeFactory().textNode(text);
        }
    }

    /** "404 Not Found: no job x in topic orders", with the field a 4xx names and a hint for 401. */
    private static String problem(String method, String path, int status, JsonNode body, String raw) {
        StringBuilder m = new StringBuilder().append(status);
        if (body.hasNonNull("title")) {
            m.append(' ').append(body.get("title").asText());
        }
        if (body.hasNonNull("detail")) {
            m.append(": ").append(body.get("detail").asText());
        } else if (body.isTextual() && !raw.isBlank() && !raw.strip().startsWith("<")) {
            m.append(": ").append(raw.strip());
        } else {
            m.append(" from ").append(method).append(' ').append(path);
        }
        if (body.hasNonNull("field") && status != 401) {
            m.append(" (field ").append(body.get("field").asText()).append(')');
        }
        if (status == 401) {
            m.append(" (give --token or --user NAME:PASSWORD)");
        }
        return m.toString();
    }
}
