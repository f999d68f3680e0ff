package io.delayq.api;

import java.time.format.DateTimeParseException;
import java.util.Iterator;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.delayq.core.InvalidJobException;
import io.delayq.core.JobValidator;
import io.delayq.store.JobListing;

/**
 * The body of {@code POST /topics/{t}/jobs/cancel} and {@code /reschedule}: the filter
 * {@code {"idPrefix"?, "group"?, "from"?, "to"?}} (none, blank or {@code {}}: every scheduled job),
 * a reschedule's {@code "delayMs"} or {@code "runAt"} under the PATCH's rules, checked field by
 * field: a bad one is a 400 naming it.
 */
public final class BulkBody {
    private static final Set<String> FILTER = new TreeSet<>(Set.of("idPrefix", "group", "from", "to"));
    private static final Set<String> MOVE = new TreeSet<>(Set.of("delayMs", "runAt"));

    /** A bulk action's filter, and for a reschedule its new time. */
    record Parsed(JobListing.Filter filter, JobValidator.Timing timing) {
    }

    private BulkBody() {
    }

    static Parsed cancel(String body, JobBodyParser parser) {
        return parse(body, parser, false);
    }

    static Parsed reschedule(String body, JobBodyParser parser) {
        return parse(body, parser, true);
    }

    private static Parsed parse(String body, JobBodyParser parser, boolean move) {
        JsonNode root = body == null || body.isBlank() ? null : parser.tree(body);
        if (root != null && !root.isObject()) {
            throw new InvalidJobException("body", "a filter is a JSON object: {\"idPrefix\", \"group\", \"from\", \"to\"}"
                    + (move ? " with \"delayMs\" or \"runAt\"" : " (all optional)"));
        }
        ObjectNode timing = parser.tree("{}").deepCopy();
        if (root != null) {
            for (Iterator<String> names = root.fieldNames(); names.hasNext();) {
                String name = names.next();
                if (move && MOVE.contains(name)) {
                    timing.set(name, root.get(name));
                } else if (!FILTER.contains(name)) {
                    throw new InvalidJobException(name, "unknown field " + name + "; the fields are " + FILTER
                            + (move ? " and one of " + MOVE : ""));
                }
            }
        }
        JobListing.Filter filter = filter(text(root, "idPrefix"), text(root, "group"), text(root, "from"),
                text(root, "to"));
        // The PATCH's rules and messages (exactly one of delayMs and runAt, the horizon).
        return new Parsed(filter, move ? parser.reschedule(timing.toString()) : null);
    }

    private static String text(JsonNode root, String field) {
        JsonNode n = root == null ? null : root.get(field);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isTextual()) {
            throw new InvalidJobException(field, field + " must be a string");
        }
        return n.asText();
    }

    /**
     * A filter from its parts as given (query parameters of the listing, or this body's fields),
     * each checked: a bad one is a 400 naming it. Empty means any.
     */
    public static JobListing.Filter filter(String idPrefix, String group, String from, String to) {
        if (idPrefix != null && !idPrefix.isEmpty() && !JobValidator.isId(idPrefix)) {
            throw new InvalidJobException("idPrefix", "idPrefix must match " + JobValidator.ID.pattern()
                    + " (the start of an id)");
        }
        if (group != null && !group.isEmpty() && !JobValidator.isId(group)) {
            throw new InvalidJobException("group", "group must match " + JobValidator.ID.pattern());
        }
        Long fromMs = instant("from", from), toMs = instant("to", to);
        if (fromMs != null && toMs != null && toMs < fromMs) {
            throw new InvalidJobException("to", "to must not be before from");
        }
        return new JobListing.Filter(empty(idPrefix), empty(group), fromMs, toMs);
    }

    private static Long instant(String field, String text) {
        if (text == null || text.isEmpty()) {
            return null;
        }
        try {
            return java.time.Instant.parse(text).toEpochMilli();
        } catch (DateTimeParseException | ArithmeticException e) {
            throw new InvalidJobException(field, field + " must be an ISO-8601 instant (2026-11-30T12:00:00Z)");
        }
    }

    private static String empty(String s) {
        return s == null || s.isEmpty() ? null : s;
    }
}
