package io.delayq.api;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

import jakarta.enterprise.context.ApplicationScoped;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.DelayqConfig;
import io.delayq.core.IfExists;
import io.delayq.core.InvalidJobException;
import io.delayq.core.JobValidator;
import io.delayq.core.NewJob;
import io.delayq.core.TopicControl;

/**
 * Reads enqueue bodies field by field, so that every rule broken is reported with the field's
 * name (a generic JSON binding would answer "cannot deserialize" for a string delayMs).
 */
@ApplicationScoped
public class JobBodyParser {
    /**
     * Standard JSON only, whatever the service's ObjectMapper allows (comments, single quotes,
     * NaN): the payload text is stored as it is and handed to consumers that expect JSON.
     */
    private static final JsonFactory STRICT = new JsonFactory();
    private static final Set<String> FIELDS = Set.of("topic", "id", "payload", "delayMs", "runAt", "maxAttempts",
            "ifExists", "retry", "group", "timeoutMs", "expiresAt");
    private static final Set<String> RETRY_FIELDS = new java.util.TreeSet<>(Set.of("initialMs", "maxMs"));
    private static final Set<String> RESCHEDULE_FIELDS = new java.util.TreeSet<>(Set.of("delayMs", "runAt"));
    private final ObjectMapper mapper;
    private final JobValidator validator;
    private final int maxBatch;

    public JobBodyParser(ObjectMapper mapper, JobValidator validator, DelayqConfig config) {
        this.mapper = mapper;
        this.validator = validator;
        this.maxBatch = config.api().maxBatch();
    }

    public NewJob one(String body) {
        JsonNode root = tree(body);
        return job(root, "", root.isObject() ? rawPayloads(body, false).get(0) : null);
    }

    /**
     * The {@code payload} of a JSON object body exactly as the body spells it (null when absent
     * or null); the body must already have been parsed as valid JSON.
     */
    public String rawPayload(String body) {
        return rawPayloads(body, false).get(0);
    }

    /** A batch: a JSON array of jobs, or {@code {"jobs": [...]}}. All valid, or none is written. */
    public List<NewJob> batch(String body) {
        JsonNode root = tree(body);
        String prefix = "jobs";
        if (root.isObject() && root.has("jobs")) {
            root = root.get("jobs");
        }
        if (!root.isArray()) {
            throw new InvalidJobException(prefix, "a batch is a JSON array of jobs (or {\"jobs\": [...]})");
        }
        if (root.isEmpty()) {
            throw new InvalidJobException(prefix, "a batch needs at least one job");
        }
        if (root.size() > maxBatch) {
            throw new InvalidJobException(prefix,
                    "a batch holds at most " + maxBatch + " jobs, not " + root.size(), 413);
        }
        List<String> raw = rawPayloads(body, true);
        List<NewJob> jobs = new ArrayList<>(root.size());
        for (int i = 0; i < root.size(); i++) {
            jobs.add(job(root.get(i), prefix + "[" + i + "]", i < raw.size() ? raw.get(i) : null));
        }
        return jobs;
    }

    /**
     * The payloads exactly as the body spells them, one per job (null when absent or null): a
     * payload is stored byte-for-byte as sent, never re-serialised (which would round
     * 12345678901234567.89, turn 1e400 into "Infinity" and a lone surrogate into '?'). The tree
     * parse has already validated the JSON; this pass only finds where each payload starts and
     * ends in the text.
     */
    private List<String> rawPayloads(String body, boolean batch) {
        List<String> out = new ArrayList<>();
        try (JsonParser p = STRICT.createParser(body)) {
            JsonToken t = p.nextToken();
            if (!batch) {
                readJob(p, body, out);
            } else if (t == JsonToken.START_ARRAY) {
                readJobs(p, body, out);
            } else if (t == JsonToken.START_OBJECT) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    if (p.nextToken() == JsonToken.START_ARRAY && "jobs".equals(name)) {
                        out.clear(); // a repeated "jobs": the last one wins, as in the tree
                        readJobs(p, body, out);
                    } else {
                        p.skipChildren();
                    }
                }
            }
        } catch (IOException e) {
            throw new InvalidJobException("body", "malformed JSON: " + e.getMessage());
        }
        return out;
    }

    private static void readJobs(JsonParser p, String body, List<String> out) throws IOException {
        while (p.nextToken() != JsonToken.END_ARRAY) {
            if (p.currentToken() == JsonToken.START_OBJECT) {
                readJob(p, body, out);
            } else {
                out.add(null);
                p.skipChildren();
            }
        }
    }

    /** At a job's START_OBJECT: adds its payload's text (or null), and leaves it at END_OBJECT. */
    private static void readJob(JsonParser p, String body, List<String> out) throws IOException {
        String raw = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            if ("payload".equals(name)) {
                int start = (int) p.currentTokenLocation().getCharOffset();
                p.skipChildren();
                p.finishToken(); // a scalar's text is read lazily: read it, so the location is past it
                raw = value == JsonToken.VALUE_NULL ? null : body.substring(start, (int) p.currentLocation().getCharOffset());
            } else {
                p.skipChildren();
            }
        }
        out.add(raw);
    }

    /**
     * A reschedule body ({@code PATCH /jobs/{topic}/{id}}): exactly one of {@code delayMs} and
     * {@code runAt}, under the enqueue's rules.
     */
    public JobValidator.Timing reschedule(String body) {
        JsonNode root = tree(body);
        if (!root.isObject()) {
            throw new InvalidJobException("body", "a reschedule is a JSON object: {\"delayMs\": ...} or {\"runAt\": ...}");
        }
        for (Iterator<String> names = root.fieldNames(); names.hasNext();) {
            String name = names.next();
            if (!RESCHEDULE_FIELDS.contains(name)) {
                throw new InvalidJobException(name, "unknown field " + name + "; give exactly one of " + RESCHEDULE_FIELDS);
            }
        }
        Long delayMs = delayMs(root);
        String runAt = text(root, "runAt");
        if (delayMs == null && runAt == null) {
            throw new InvalidJobException("delayMs", "give exactly one of delayMs and runAt");
        }
        return validator.timing(delayMs, runAt == null ? null : JobValidator.parseRunAt(runAt));
    }

    /** A rate limit body ({@code PUT /topics/{topic}/rate-limit}): {@code {"perSecond": 50}}. */
    public double perSecond(String body) {
        JsonNode root = tree(body);
        if (!root.isObject()) {
            throw new InvalidJobException("body", "a rate limit is a JSON object: {\"perSecond\": 50}");
        }
        for (Iterator<String> names = root.fieldNames(); names.hasNext();) {
            String name = names.next();
            if (!"perSecond".equals(name)) {
                throw new InvalidJobException(name, "unknown field " + name + "; the only field is perSecond");
            }
        }
        JsonNode n = root.get("perSecond");
        if (n == null || n.isNull()) {
            throw new InvalidJobException("perSecond", "perSecond is required");
        }
        if (!n.isNumber()) {
            throw new InvalidJobException("perSecond", "perSecond must be a number of jobs per second");
        }
        TopicControl.checkRate("perSecond", n.doubleValue());
        return n.doubleValue();
    }

    /**
     * A concurrency cap body ({@code PUT /topics/{topic}/max-in-flight}): {@code {"max": 5}}, an
     * integer (checked against the partition count by {@link TopicControl#setMaxInFlight}).
     */
    public int maxInFlight(String body) {
        JsonNode root = tree(body);
        if (!root.isObject()) {
            throw new InvalidJobException("body", "a concurrency cap is a JSON object: {\"max\": 5}");
        }
        for (Iterator<String> names = root.fieldNames(); names.hasNext();) {
            String name = names.next();
            if (!"max".equals(name)) {
                throw new InvalidJobException(name, "unknown field " + name + "; the only field is max");
            }
        }
        JsonNode n = root.get("max");
        if (n == null || n.isNull()) {
            throw new InvalidJobException("max", "max is required");
        }
        if (!n.isIntegralNumber() || !n.canConvertToInt()) {
            throw new InvalidJobException("max", "max must be an integer number of jobs in flight at once");
        }
        if (n.intValue() < 1) {
            TopicControl.checkMaxInFlight("max", n.intValue(), 1);
        }
        return n.intValue();
    }

    private static Long delayMs(JsonNode node) {
        return msField(node, "delayMs");
    }

    /** An integer ms field of a job ({@code delayMs}, {@code timeoutMs}): null when absent or null. */
    private static Long msField(JsonNode node, String field) {
        JsonNode d = node.get(field);
        if (d == null || d.isNull()) {
            return null;
        }
        if (!d.isIntegralNumber() || !d.canConvertToLong()) {
            throw new InvalidJobException(field, field + " must be an integer number of milliseconds");
        }
        return d.longValue();
    }

    /**
     * The body as one JSON value, for every endpoint that takes one. Anything after that value is
     * a 400 too: a reader that stops at the end of the first value would take
     * {@code {"id":"1"}{"id":"2"}} as the first job alone and drop the rest without a word.
     */
    JsonNode tree(String body) {
        if (body == null || body.isBlank()) {
            throw new InvalidJobException("body", "a JSON body is required");
        }
        try (JsonParser p = mapper.createParser(body)) {
            JsonNode root = mapper.readTree(p);
            com.fasterxml.jackson.core.JsonLocation end = p.currentLocation();
            boolean more;
            try {
                more = p.nextToken() != null;
            } catch (JsonProcessingException e) {
                more = true; // garbage after the value
            }
            if (more) {
                throw new InvalidJobException("body", "the body must be exactly one JSON value; more follows it after"
                        + " line " + end.getLineNr() + ", column " + end.getColumnNr());
            }
            return root;
        } catch (JsonProcessingException e) {
            throw new InvalidJobException("body", "malformed JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new InvalidJobException("body", "malformed JSON: " + e.getMessage());
        }
    }

    private NewJob job(JsonNode node, String at, String rawPayload) {
        try {
            if (node == null || !node.isObject()) {
                throw new InvalidJobException("(job)", "a job is a JSON object");
            }
            for (Iterator<String> names = node.fieldNames(); names.hasNext();) {
                String name = names.next();
                if (!FIELDS.contains(name)) {
                    throw new InvalidJobException(name, "unknown field " + name + "; known fields are " + FIELDS);
                }
            }
            String topic = text(node, "topic");
            String id = text(node, "id");
            String runAt = text(node, "runAt");
            Long delayMs = delayMs(node);
            Integer maxAttempts = null;
            JsonNode m = node.get("maxAttempts");
            if (m != null && !m.isNull()) {
                if (!m.isIntegralNumber() || !m.canConvertToInt()) {
                    throw new InvalidJobException("maxAttempts", "maxAttempts must be an integer");
                }
                maxAttempts = m.intValue();
            }
            JsonNode p = node.get("payload");
            String payload = p == null || p.isNull() ? null : rawPayload;
            return validator.validate(topic, id, delayMs, runAt, maxAttempts, payload, ifExists(node), retry(node),
                    text(node, "group"), msField(node, "timeoutMs"), text(node, "expiresAt"));
        } catch (InvalidJobException e) {
            throw at.isEmpty() ? e : e.inItem(at);
        }
    }

    /**
     * The {@code retry} of a job ({@code {"initialMs": 200, "maxMs": 400}}, either may be left
     * out): null when absent or null; 400 naming {@code retry.<field>} for a field it does not
     * know or a value that is not an integer. The validator checks the ranges.
     */
    private static io.delayq.core.JobRetry retry(JsonNode node) {
        JsonNode r = node.get("retry");
        if (r == null || r.isNull()) {
            return null;
        }
        if (!r.isObject()) {
            throw new InvalidJobException("retry", "retry must be an object: {\"initialMs\": ..., \"maxMs\": ...}");
        }
        for (Iterator<String> names = r.fieldNames(); names.hasNext();) {
            String name = names.next();
            if (!RETRY_FIELDS.contains(name)) {
                throw new InvalidJobException("retry." + name, "unknown field retry." + name + "; known fields are "
                        + RETRY_FIELDS);
            }
        }
        return io.delayq.core.JobRetry.of(millis(r, "initialMs"), millis(r, "maxMs"));
    }

    /** An integer ms field of {@code retry}: null when absent or null. */
    private static Long millis(JsonNode retry, String field) {
        JsonNode v = retry.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            throw new InvalidJobException("retry." + field, "retry." + field + " must be an integer number of milliseconds");
        }
        return v.longValue();
    }

    /** The {@code ifExists} of a job: null when absent or null (keep), 400 naming it when not a known value. */
    private static IfExists ifExists(JsonNode node) {
        String v = text(node, "ifExists");
        if (v == null) {
            return null;
        }
        IfExists mode = IfExists.ofJson(v);
        if (mode == null) {
            throw new InvalidJobException("ifExists", "ifExists must be one of keep, replace, extend");
        }
        return mode;
    }

    /** A string field of a JSON body: null when absent or null, 400 naming it when not a string. */
    static String text(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw new InvalidJobException(field, field + " must be a string");
        }
        return v.textValue();
    }
}
