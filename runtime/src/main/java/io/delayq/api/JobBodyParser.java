package io.delayq.api;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

import jakarta.enterprise.context.ApplicationScoped;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.DelayqConfig;
import io.delayq.core.InvalidJobException;
import io.delayq.core.JobValidator;
import io.delayq.core.NewJob;

/**
 * Reads enqueue bodies field by field, so that every rule broken is reported with the field's
 * name (a generic JSON binding would answer "cannot deserialize" for a string delayMs).
 */
@ApplicationScoped
public class JobBodyParser {
    private static final Set<String> FIELDS = Set.of("topic", "id", "payload", "delayMs", "runAt", "maxAttempts");
    private final ObjectMapper mapper;
    private final JobValidator validator;
    private final int maxBatch;

    public JobBodyParser(ObjectMapper mapper, JobValidator validator, DelayqConfig config) {
        this.mapper = mapper;
        this.validator = validator;
        this.maxBatch = config.api().maxBatch();
    }

    public NewJob one(String body) {
        return job(tree(body), "");
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
        List<NewJob> jobs = new ArrayList<>(root.size());
        for (int i = 0; i < root.size(); i++) {
            jobs.add(job(root.get(i), prefix + "[" + i + "]"));
        }
        return jobs;
    }

    private JsonNode tree(String body) {
        if (body == null || body.isBlank()) {
            throw new InvalidJobException("body", "a JSON body is required");
        }
        try {
            return mapper.readTree(body);
        } catch (JsonProcessingException e) {
            throw new InvalidJobException("body", "malformed JSON: " + e.getOriginalMessage());
        }
    }

    private NewJob job(JsonNode node, String at) {
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
            Long delayMs = null;
            JsonNode d = node.get("delayMs");
            if (d != null && !d.isNull()) {
                if (!d.isIntegralNumber() || !d.canConvertToLong()) {
                    throw new InvalidJobException("delayMs", "delayMs must be an integer number of milliseconds");
                }
                delayMs = d.longValue();
            }
            Integer maxAttempts = null;
            JsonNode m = node.get("maxAttempts");
            if (m != null && !m.isNull()) {
                if (!m.isIntegralNumber() || !m.canConvertToInt()) {
                    throw new InvalidJobException("maxAttempts", "maxAttempts must be an integer");
                }
                maxAttempts = m.intValue();
            }
            JsonNode p = node.get("payload");
            String payload = p == null || p.isNull() ? null : mapper.writeValueAsString(p);
            return validator.validate(topic, id, delayMs, runAt, maxAttempts, payload);
        } catch (InvalidJobException e) {
            throw at.isEmpty() ? e : e.inItem(at);
        } catch (JsonProcessingException e) {
            throw new InvalidJobException(at.isEmpty() ? "payload" : at + ".payload", "payload cannot be written as JSON");
        }
    }

    private static String text(JsonNode node, String field) {
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
