package io.delayq.support;

import static io.restassured.RestAssured.given;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.Error;
import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.dialect.OpenApi31;

import io.restassured.filter.Filter;
import io.restassured.response.Response;

/**
 * The OpenAPI document a running server serves at {@code /q/openapi}, as a checker of its answers:
 * which operation a request is, whether the status it answered is one the document lists for it, and
 * whether the body is of the media type and JSON Schema the document gives for that status (the
 * OpenAPI 3.1 dialect of com.networknt's validator, {@code $ref}s resolved inside the document).
 * A client generated from the document (TypeScript, Kotlin, Rust...) trusts exactly that: an answer
 * outside it is a bug in the document or in the server.
 */
public final class OpenApiDocument {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Where the document is registered for the validator: {@code $ref: '#/components/...'} resolve against it. */
    private static final String BASE = "https://delayq.test/openapi.json";

    /** One operation of the document: its method (upper case), its path template, and the regex of its paths. */
    public record Operation(String method, String template, Pattern pattern, JsonNode node) {
        public String id() {
            return node.path("operationId").asText(method + " " + template);
        }

        /** Path parameters of the template, in order. */
        public List<String> parameters() {
            List<String> names = new ArrayList<>();
            var m = Pattern.compile("\\{([^}]+)}").matcher(template);
            while (m.find()) {
                names.add(m.group(1));
            }
            return names;
        }

        /** The document's statuses for this operation. */
        public List<String> statuses() {
            List<String> statuses = new ArrayList<>();
            node.path("responses").fieldNames().forEachRemaining(statuses::add);
            return statuses;
        }

        /** The JSON media type of its request body, if it has one. */
        public boolean hasJsonBody() {
            return node.path("requestBody").path("content").has("application/json");
        }
    }

    private final JsonNode doc;
    private final List<Operation> operations = new ArrayList<>();
    private final SchemaRegistry registry;

    private OpenApiDocument(String text) throws Exception {
        doc = JSON.readTree(text);
        for (Iterator<Map.Entry<String, JsonNode>> paths = doc.path("paths").fields(); paths.hasNext();) {
            Map.Entry<String, JsonNode> path = paths.next();
            String regex = "^" + Pattern.quote(path.getKey()).replaceAll("\\{[^}]+}", "\\\\E[^/]+\\\\Q") + "$";
            for (String method : List.of("get", "put", "post", "delete", "patch", "head", "options")) {
                if (path.getValue().has(method)) {
                    operations.add(new Operation(method.toUpperCase(), path.getKey(), Pattern.compile(regex),
                            path.getValue().get(method)));
                }
            }
        }
        // A literal segment wins over a template ({@code /jobs/batch} is not {@code /jobs/{topic}}).
        operations.sort(Comparator.comparingInt(op -> op.parameters().size()));
        registry = SchemaRegistry.withDefaultDialect(OpenApi31.getInstance(),
                builder -> builder.schemas(Map.of(BASE, text)));
    }

    /** The document the application under test serves (its JSON form). */
    public static OpenApiDocument served() {
        String text = given().accept("application/json").get("/q/openapi?format=json").then().statusCode(200)
                .extract().asString();
        try {
            return new OpenApiDocument(text);
        } catch (Exception e) {
            throw new IllegalStateException("the served OpenAPI document is not JSON", e);
        }
    }

    public List<Operation> operations() {
        return List.copyOf(operations);
    }

    /** The operation a request is (its path without query, decoded), if the document has it. */
    public Optional<Operation> operation(String method, String path) {
        String p = URLDecoder.decode(path.replaceAll("[?#].*", ""), StandardCharsets.UTF_8);
        return operations.stream().filter(op -> op.method().equalsIgnoreCase(method) && op.pattern().matcher(p).matches())
                .findFirst();
    }

    /**
     * What is wrong with an answer to {@code method path}, by the document: nothing (an empty list),
     * or each departure as a sentence naming the operation.
     */
    public List<String> check(String method, String path, int status, String contentType, String body) {
        List<String> wrong = new ArrayList<>();
        String call = method + " " + path + " -> " + status;
        Optional<Operation> found = operation(method, path);
        if (found.isEmpty()) {
            wrong.add(call + ": no such operation in the document");
            return wrong;
        }
        Operation op = found.get();
        JsonNode response = op.node().path("responses").path(Integer.toString(status));
        if (response.isMissingNode()) {
            wrong.add(call + ": " + op.id() + " lists only " + op.statuses());
            return wrong;
        }
        boolean empty = body == null || body.isEmpty();
        JsonNode content = response.path("content");
        if (content.isMissingNode() || content.isEmpty()) {
            if (!empty) {
                wrong.add(call + ": " + op.id() + " documents no body for " + status + ", the server sent " + abbrev(body));
            }
            return wrong;
        }
        if (empty) {
            wrong.add(call + ": " + op.id() + " documents a body " + names(content) + " for " + status
                    + ", the server sent none");
            return wrong;
        }
        String media = contentType == null ? "" : contentType.replaceAll(";.*", "").trim().toLowerCase();
        if (!content.has(media)) {
            wrong.add(call + ": " + op.id() + " documents " + names(content) + " for " + status + ", the server sent "
                    + (media.isEmpty() ? "no Content-Type" : media));
            return wrong;
        }
        if (content.path(media).has("schema") && media.contains("json")) {
            String pointer = "/paths/" + escape(op.template()) + "/" + op.method().toLowerCase() + "/responses/" + status
                    + "/content/" + escape(media) + "/schema";
            List<Error> errors = validate(pointer, body);
            if (!errors.isEmpty()) {
                wrong.add(call + ": " + op.id() + " body " + abbrev(body) + " breaks the document's schema ("
                        + errors.size() + " errors): " + errors.subList(0, Math.min(3, errors.size())));
            }
        }
        return wrong;
    }

    /** What is wrong with a JSON request body by the operation's request schema (a valid request must fit it). */
    public List<String> checkRequest(Operation op, String body) {
        if (!op.hasJsonBody() || body == null || body.isEmpty()) {
            return List.of();
        }
        String pointer = "/paths/" + escape(op.template()) + "/" + op.method().toLowerCase()
                + "/requestBody/content/application~1json/schema";
        List<Error> errors = validate(pointer, body);
        return errors.isEmpty() ? List.of() : List.of(op.id() + " request " + abbrev(body) + " is valid for the server"
                + " but breaks the document (" + errors.size() + " errors): " + errors.subList(0, Math.min(3, errors.size())));
    }

    /**
     * A REST Assured filter that fails a test on any answer the document does not describe (for a
     * request of one of its operations; others pass untouched).
     */
    public Filter filter() {
        return (request, response, ctx) -> {
            Response r = ctx.next(request, response);
            String path = URI.create(request.getURI()).getRawPath();
            if (operation(request.getMethod(), path).isPresent()) {
                List<String> wrong = check(request.getMethod(), path, r.getStatusCode(), r.getContentType(), r.asString());
                if (!wrong.isEmpty()) {
                    throw new AssertionError(String.join("\n", wrong));
                }
            }
            return r;
        };
    }

    private List<Error> validate(String pointer, String json) {
        Schema schema = registry.getSchema(SchemaLocation.of(BASE + "#" + pointer));
        return schema.validate(json, InputFormat.JSON);
    }

    private static String escape(String segment) {
        return segment.replace("~", "~0").replace("/", "~1");
    }

    private static String names(JsonNode content) {
        List<String> names = new ArrayList<>();
        content.fieldNames().forEachRemaining(names::add);
        return names.toString();
    }

    private static String abbrev(String body) {
        return body.length() > 300 ? body.substring(0, 300) + "..." : body;
    }
}
