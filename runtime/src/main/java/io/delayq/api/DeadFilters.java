package io.delayq.api;

import java.util.Iterator;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;

import io.delayq.core.InvalidJobException;
import io.delayq.core.JobValidator;
import io.delayq.store.DeadSweep;

/**
 * The filter of the dead-set endpoints ({@code GET /topics/{t}/dead?idPrefix=&error=}, and the
 * body {@code {"idPrefix": .., "error": ..}} of {@code POST /topics/{t}/dead/requeue} and
 * {@code /purge}), checked field by field: an id prefix is made of the characters an id may
 * hold (at most as long as one), an error text is a string of at most {@value #MAX_ERROR}
 * characters (a stored lastError is at most 500). Empty or absent means "any".
 */
public final class DeadFilters {
    static final int MAX_ERROR = 500;
    private static final Set<String> FIELDS = new TreeSet<>(Set.of("idPrefix", "error"));

    private DeadFilters() {
    }

    /** From the query parameters of the list. */
    public static DeadSweep.Filter of(String idPrefix, String error) {
        checkPrefix(idPrefix);
        checkError(error);
        return new DeadSweep.Filter(idPrefix, error);
    }

    /** From a request body: none, blank or {@code {}} mean every dead job. */
    static DeadSweep.Filter of(String body, JobBodyParser parser) {
        if (body == null || body.isBlank()) {
            return DeadSweep.Filter.ALL;
        }
        JsonNode root = parser.tree(body);
        if (!root.isObject()) {
            throw new InvalidJobException("body", "a filter is a JSON object: {\"idPrefix\": \"...\", \"error\": \"...\"}"
                    + " (both optional; {} means every dead job)");
        }
        for (Iterator<String> names = root.fieldNames(); names.hasNext();) {
            String name = names.next();
            if (!FIELDS.contains(name)) {
                throw new InvalidJobException(name, "unknown field " + name + "; the fields are " + FIELDS);
            }
        }
        return of(text(root, "idPrefix"), text(root, "error"));
    }

    private static String text(JsonNode root, String field) {
        JsonNode n = root.get(field);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isTextual()) {
            throw new InvalidJobException(field, field + " must be a string");
        }
        return n.asText();
    }

    private static void checkPrefix(String idPrefix) {
        if (idPrefix != null && !idPrefix.isEmpty() && !JobValidator.isId(idPrefix)) {
            throw new InvalidJobException("idPrefix", "idPrefix must match " + JobValidator.ID.pattern()
                    + " (the start of an id)");
        }
    }

    private static void checkError(String error) {
        if (error != null && error.length() > MAX_ERROR) {
            throw new InvalidJobException("error", "error must be at most " + MAX_ERROR + " characters");
        }
    }
}
