package io.delayq.security;

import static io.delayq.security.DelayqRole.OPERATOR;
import static io.delayq.security.DelayqRole.PRODUCER;
import static io.delayq.security.DelayqRole.VIEWER;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Which role each of delayq's requests needs: the one table of the access rules, by method and
 * path (relative to the REST root). The first rule that matches decides; a request no rule
 * matches needs {@link DelayqRole#OPERATOR}, so an endpoint added without a rule is closed rather
 * than open. In a pattern {@code *} is one path segment and {@code **} any number of them.
 * <p>
 * A new endpoint that a viewer or a producer may call gets its line here (a dashboard form action
 * too: it needs the role of the API call it makes); one for operators only needs none.
 */
public final class AccessRules {
    /** Reads, for a viewer; OPTIONS answers what a path allows, no more. */
    private static final Set<String> READS = Set.of("GET", "HEAD", "OPTIONS");

    private static final List<Rule> RULES = List.of(
            rule(READS, "/**", VIEWER),
            // the API: enqueue, batch, cancel, reschedule
            rule("POST", "/jobs", PRODUCER),
            rule("POST", "/jobs/batch", PRODUCER),
            rule("DELETE", "/jobs/*/*", PRODUCER),
            rule("PATCH", "/jobs/*/*", PRODUCER),
            // forgetting a topic is an operator's, said here because deleting a job is a producer's
            rule("DELETE", "/topics/*", OPERATOR),
            // the dashboard's actions for the same (they POST); every other one is an operator's
            rule("POST", "/delayq/topics/*/jobs/*/cancel", PRODUCER),
            rule("POST", "/delayq/topics/*/jobs/*/run-now", PRODUCER));

    private AccessRules() {
    }

    /**
     * The role a request needs.
     *
     * @param method the HTTP method
     * @param path the request path relative to the REST root ({@code /jobs/order-close/42})
     */
    public static DelayqRole required(String method, String path) {
        String m = method.toUpperCase(Locale.ROOT);
        String[] segments = segments(path);
        for (Rule r : RULES) {
            if (r.methods().contains(m) && matches(r.pattern(), 0, segments, 0)) {
                return r.role();
            }
        }
        return OPERATOR;
    }

    private record Rule(Set<String> methods, String[] pattern, DelayqRole role) {
    }

    private static Rule rule(String method, String pattern, DelayqRole role) {
        return rule(Set.of(method), pattern, role);
    }

    private static Rule rule(Set<String> methods, String pattern, DelayqRole role) {
        return new Rule(methods, segments(pattern), role);
    }

    /** Path segments, empty ones dropped: {@code //jobs/} is {@code /jobs}, as the router sees it. */
    private static String[] segments(String path) {
        return Arrays.stream(path.split("/")).filter(s -> !s.isEmpty()).toArray(String[]::new);
    }

    private static boolean matches(String[] pattern, int p, String[] path, int i) {
        if (p == pattern.length) {
            return i == path.length;
        }
        if (pattern[p].equals("**")) {
            return true;
        }
        return i < path.length && (pattern[p].equals("*") || pattern[p].equals(path[i]))
                && matches(pattern, p + 1, path, i + 1);
    }
}
