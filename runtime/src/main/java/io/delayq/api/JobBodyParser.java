package io.delayq.api;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.ws.rs.core.MediaType;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

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
            "ifExists", "retry", "group", "timeoutMs", "expiresAt", "priority");
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

    /**
     * A job ({@code POST /jobs}), read from the request's bytes in one pass: what is held is the
     * payload's text and the other fields' values, never the body as text or a tree of it.
     */
    public NewJob one(InputStream body, MediaType type) {
        Parsed root = read(body, type, false).get(0);
        return job(root.fields(), "", root.payload());
    }

    /**
     * The {@code payload} of a JSON object body exactly as the body spells it (null when absent
     * or null); the body must already have been parsed as valid JSON.
     */
    public String rawPayload(String body) {
        return read(BodyText.of(body), false).get(0).payload();
    }

    /**
     * A batch: a JSON array of jobs, or {@code {"jobs": [...]}}. All valid, or none is written.
     * Read from the request's bytes in one pass, as {@link #one}: a maximum-size batch costs the
     * heap its payloads' text (kept, they are what is stored) beside the bytes being read.
     */
    public List<NewJob> batch(InputStream body, MediaType type) {
        List<Parsed> jobs = read(body, type, true);
        String prefix = "jobs";
        if (jobs == null) {
            throw new InvalidJobException(prefix, "a batch is a JSON array of jobs (or {\"jobs\": [...]})");
        }
        if (jobs.isEmpty()) {
            throw new InvalidJobException(prefix, "a batch needs at least one job");
        }
        if (jobs.size() > maxBatch) {
            throw new InvalidJobException(prefix,
                    "a batch holds at most " + maxBatch + " jobs, not " + jobs.size(), 413);
        }
        List<NewJob> out = new ArrayList<>(jobs.size());
        for (int i = 0; i < jobs.size(); i++) {
            out.add(job(jobs.get(i).fields(), prefix + "[" + i + "]", jobs.get(i).payload()));
        }
        return out;
    }

    /**
     * A job as read: its fields but the payload's value (an object, or null when it is no JSON
     * object), and its payload exactly as the body spells it (null when absent or null): a
     * payload is stored byte-for-byte as sent, never re-serialised (which would round
     * 12345678901234567.89, turn 1e400 into "Infinity" and a lone surrogate into '?').
     */
    private record Parsed(JsonNode fields, String payload) {
    }

    /**
     * The body's jobs: for a job, a list of one; for a batch, its jobs, or null when the body is
     * no array of jobs (nor {@code {"jobs": [...]}}). UTF-8 bytes (the default, and what JSON is)
     * are parsed as they are; a body declared in another charset, or bytes that are not UTF-8, as
     * the text a String reader makes of them (bad bytes replaced), as bodies always were.
     */
    private List<Parsed> read(InputStream body, MediaType type, boolean batch) {
        if (body == null) {
            throw new InvalidJobException("body", "a JSON body is required");
        }
        String charset = type == null ? null : type.getParameters().get(MediaType.CHARSET_PARAMETER);
        try {
            if (charset != null && !StandardCharsets.UTF_8.name().equalsIgnoreCase(charset)
                    && java.nio.charset.Charset.isSupported(charset)) {
                return read(BodyText.of(new String(body.readAllBytes(), charset)), batch);
            }
            BodyText.Bytes bytes = BodyText.of(body);
            try {
                return read(bytes, batch);
            } catch (NotUtf8 e) {
                if (!bytes.rereadable()) {
                    throw new InvalidJobException("body", "malformed JSON: " + e.getMessage());
                }
                return read(BodyText.of(bytes.reread()), batch);
            }
        } catch (IOException e) {
            throw new InvalidJobException("body", "malformed JSON: " + e.getMessage());
        }
    }

    /** Bytes the parser did not take for UTF-8: the body is read again as text. */
    private static final class NotUtf8 extends RuntimeException {
        NotUtf8(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * One pass over the body: it must be exactly one JSON value, and standard JSON (whatever the
     * service's ObjectMapper allows: the payload text is handed to consumers that expect JSON).
     * Every string is decoded on the way, so what the body holds is checked as a tree parse would,
     * and a malformed body is reported before any field of it. Anything after the value is a 400
     * too: a reader that stops at the end of the first value would take
     * {@code {"id":"1"}{"id":"2"}} as the first job alone and drop the rest without a word.
     */
    private List<Parsed> read(BodyText text, boolean batch) {
        try (JsonParser p = text.open(STRICT)) {
            JsonToken t;
            try {
                t = p.nextToken();
            } catch (JsonProcessingException e) {
                throw notUtf8(e, text);
            }
            if (t == null) {
                throw new InvalidJobException("body", "a JSON body is required");
            }
            if (text instanceof BodyText.Bytes && !BodyText.Bytes.utf8(p)) {
                throw new NotUtf8("not UTF-8");
            }
            List<Parsed> out;
            try {
                out = batch ? readBatch(p, text) : readRoot(p, text);
            } catch (JsonProcessingException e) {
                throw notUtf8(e, text);
            }
            nothingAfter(p);
            return out;
        } catch (IOException e) {
            throw new InvalidJobException("body", "malformed JSON: " + e.getMessage());
        }
    }

    /** At the end of the body's value: anything after it but whitespace is a 400 naming the body. */
    private static void nothingAfter(JsonParser p) throws IOException {
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
    }

    /** Bytes that are not UTF-8 are read again as text; any other parse error is the 400 it was. */
    private static RuntimeException notUtf8(JsonProcessingException e, BodyText text) {
        String message = e.getOriginalMessage();
        if (text instanceof BodyText.Bytes && message != null && message.startsWith("Invalid UTF-8")) {
            return new NotUtf8(message);
        }
        return new InvalidJobException("body", "malformed JSON: " + message);
    }

    private List<Parsed> readRoot(JsonParser p, BodyText text) throws IOException {
        if (p.currentToken() == JsonToken.START_OBJECT) {
            return List.of(readJob(p, text));
        }
        skip(p);
        return java.util.Collections.singletonList(new Parsed(null, null));
    }

    private List<Parsed> readBatch(JsonParser p, BodyText text) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.START_ARRAY) {
            return readJobs(p, text);
        }
        List<Parsed> jobs = null;
        if (t == JsonToken.START_OBJECT) {
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                if ("jobs".equals(name)) { // a repeated "jobs": the last one wins, as in a tree
                    jobs = value == JsonToken.START_ARRAY ? readJobs(p, text) : null;
                }
                if (jobs == null || !"jobs".equals(name)) {
                    skip(p);
                }
            }
        } else {
            skip(p);
        }
        return jobs;
    }

    private List<Parsed> readJobs(JsonParser p, BodyText text) throws IOException {
        List<Parsed> out = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
            if (p.currentToken() == JsonToken.START_OBJECT) {
                out.add(readJob(p, text));
            } else {
                skip(p);
                out.add(new Parsed(null, null));
            }
        }
        return out;
    }

    /**
     * At a job's START_OBJECT, to its END_OBJECT: its fields as a tree, but for the payload's
     * value, whose text is kept as the body spells it.
     */
    private Parsed readJob(JsonParser p, BodyText text) throws IOException {
        ObjectNode fields = mapper.createObjectNode();
        String raw = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            if ("payload".equals(name)) {
                text.keepFromToken(p);
                skip(p);
                String spelt = text.kept(p);
                raw = value == JsonToken.VALUE_NULL ? null : spelt;
                fields.set(name, value == JsonToken.VALUE_NULL ? NullNode.getInstance() : BooleanNode.TRUE);
            } else {
                fields.set(name, value == JsonToken.VALUE_NULL ? NullNode.getInstance() : mapper.readTree(p));
            }
        }
        return new Parsed(fields, raw);
    }

    /**
     * From the current token to the end of its value, every string decoded (so a bad escape or
     * byte is found, as a tree parse finds it); the parser is left past the value's text.
     */
    private static void skip(JsonParser p) throws IOException {
        int depth = 0;
        do {
            JsonToken t = p.currentToken();
            if (t.isStructStart()) {
                depth++;
            } else if (t.isStructEnd()) {
                depth--;
            } else if (t == JsonToken.VALUE_STRING) {
                p.finishToken();
            }
        } while (depth > 0 && p.nextToken() != null);
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
            nothingAfter(p);
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
            Integer maxAttempts = intField(node, "maxAttempts", "maxAttempts must be an integer");
            Integer priority = intField(node, "priority", "priority must be an integer between 1 (first) and 5 (last)");
            JsonNode p = node.get("payload");
            String payload = p == null || p.isNull() ? null : rawPayload;
            return validator.validate(topic, id, delayMs, runAt, maxAttempts, payload, ifExists(node), retry(node),
                    text(node, "group"), msField(node, "timeoutMs"), text(node, "expiresAt"), priority);
        } catch (InvalidJobException e) {
            throw at.isEmpty() ? e : e.inItem(at);
        }
    }

    /** An integer field of a job: null when absent or null; 400 naming it when it is not an int. */
    private static Integer intField(JsonNode node, String name, String rule) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw new InvalidJobException(name, rule);
        }
        return v.intValue();
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
