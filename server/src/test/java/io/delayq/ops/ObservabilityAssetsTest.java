package io.delayq.ops;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.store.Inspection;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

/**
 * The dashboard and alerts of {@code k8s/observability/} are built on what the service really
 * exposes: every metric their queries name shows up in {@code /q/metrics} once jobs have run, and
 * every alert is complete and links to its own runbook section. A renamed meter otherwise leaves
 * an empty panel and an alert that can never fire, and nobody notices until the outage.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class ObservabilityAssetsTest {
    private static final Path DIR = Path.of("..", "k8s", "observability");
    private static final Path DASHBOARD = DIR.resolve("grafana-dashboard.json");
    private static final Path RULES = DIR.resolve("prometheus-rules.yaml");
    private static final Path README = DIR.resolve("README.md");
    private static final Path AUTOSCALING = Path.of("..", "k8s", "autoscaling");

    @Inject
    Jobs jobs;
    @Inject
    Inspection store;
    @Inject
    RedisMemory memory;

    /**
     * Runs a job that succeeds and one that fails its only attempt (so every counter, timer and
     * gauge has a series), then waits for each metric the assets use to be scraped. Topic "async":
     * its test observer fails on a "fail" payload, and no test counts its metrics.
     */
    @Test
    void everyMetricTheAssetsQueryIsExposed() throws IOException {
        Map<String, Set<String>> used = usedMetrics();
        assertTrue(used.keySet().containsAll(Set.of("delayq_jobs_enqueued_total", "delayq_queue_oldest_overdue_seconds",
                "delayq_queue_due_now")),
                "the expression parser found too little: " + used.keySet());

        String ok = jobs.schedule(JobRequest.topic("async").payload(Map.of("x", 1))).id();
        String bad = jobs.schedule(JobRequest.topic("async").payload(Map.of("fail", true)).maxAttempts(1)).id();
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> store.get("async", ok).isEmpty()
                && store.get("async", bad).map(j -> j.state() == JobState.DEAD).orElse(false));
        // The memory ratio exists only with a maxmemory, once a replica read it.
        try (io.delayq.dev.Resp redis = RedisTestResource.resp()) {
            redis.call("CONFIG", "SET", "maxmemory", "1000000000");
            redis.call("DEL", "dq:memory-read");
            memory.read();
            redis.call("CONFIG", "SET", "maxmemory", "0");
        }
        try {
            // Gauges read from Redis register their topics during a scrape and show from the next.
            Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
                Exposition exposed = Exposition.parse(scrape());
                Map<String, Set<String>> missing = new TreeMap<>(used);
                missing.keySet().removeIf(exposed::has);
                assertEquals(Map.of(), missing, "metrics the dashboard or the alerts use that /q/metrics does not expose"
                        + " (name = where used)");
            });
        } finally {
            store.purge("async", bad);
        }
    }

    /**
     * DelayqTopicNotServed relies on delayq_topic_served being 1 for a topic a replica serves and
     * absent (or 0) for one it does not, while the topic's queue gauges are there either way (on
     * a replica that configures it: "stalled" is, with no observer).
     */
    @Test
    void servedGaugeTellsServedTopicsFromOthers() {
        String unserved = "stalled";
        String id = jobs.schedule(JobRequest.topic(unserved).delay(Duration.ofHours(1))).id();
        try {
            Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500))
                    .until(() -> sample(scrape(), "delayq_queue_scheduled", unserved) == 1.0);
            String body = scrape();
            assertEquals(1.0, sample(body, "delayq_topic_served", "async"), "a topic with an observer is served");
            double served = sample(body, "delayq_topic_served", unserved);
            assertTrue(Double.isNaN(served) || served == 0.0, "a topic nobody observes reports served " + served);
        } finally {
            jobs.cancel(unserved, id);
        }
    }

    @Test
    void everyAlertIsCompleteAndLinksToItsRunbookSection() throws IOException {
        Map<String, String> anchors = headingAnchors(Files.readString(README));
        List<String> wrong = new ArrayList<>();
        Set<String> alerts = new LinkedHashSet<>();
        for (Map<String, Object> rule : rules()) {
            String alert = String.valueOf(rule.get("alert"));
            if (!alerts.add(alert)) {
                wrong.add(alert + ": defined twice");
            }
            for (String field : List.of("alert", "expr", "for", "labels.severity", "annotations.summary",
                    "annotations.runbook_url")) {
                Object value = ManifestsTest.get(rule, field.split("\\."));
                if (value == null || value.toString().isBlank()) {
                    wrong.add(alert + ": no " + field);
                }
            }
            Object forValue = rule.get("for");
            if (forValue != null && !forValue.toString().matches("(\\d+(ms|s|m|h|d|w|y))+")) {
                wrong.add(alert + ": for '" + forValue + "' is not a Prometheus duration");
            }
            Object url = ManifestsTest.get(rule, "annotations", "runbook_url");
            Matcher link = Pattern.compile("(.*)#(.+)").matcher(String.valueOf(url));
            if (url != null && !link.matches()) {
                wrong.add(alert + ": runbook_url " + url + " has no #anchor");
            } else if (url != null) {
                String page = link.group(1);
                String heading = anchors.get(link.group(2));
                if (!(page.isEmpty() || page.equals("README.md") || page.endsWith("/k8s/observability/README.md"))) {
                    wrong.add(alert + ": runbook_url " + url + " does not point at k8s/observability/README.md");
                } else if (heading == null) {
                    wrong.add(alert + ": runbook_url anchor #" + link.group(2) + " is no heading of " + README);
                } else if (!heading.contains(alert)) {
                    wrong.add(alert + ": runbook_url leads to the section '" + heading + "', not this alert's");
                }
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
        assertEquals(alerts, runbookSections(Files.readString(README)),
                "the Runbook section of README.md should have one ### heading per alert, no more");
    }

    /** An importable dashboard asks for its data source instead of naming one of the author's. */
    @Test
    void dashboardPanelsUseTheDataSourceVariable() throws IOException {
        JsonNode dashboard = new ObjectMapper().readTree(DASHBOARD.toFile());
        assertTrue(dashboard.path("templating").path("list").findValuesAsText("name").contains("datasource"),
                "no datasource variable");
        List<String> fixed = new ArrayList<>();
        for (JsonNode ds : dashboard.findValues("datasource")) {
            String uid = ds.isObject() ? ds.path("uid").asText() : ds.asText();
            if (!uid.equals("${datasource}") && !uid.equals("-- Grafana --")) {
                fixed.add(ds.toString());
            }
        }
        assertEquals(List.of(), fixed, "data sources other than ${datasource}");
    }

    @Test
    void expressionParserKeepsMetricNamesOnly() {
        assertEquals(Set.of("delayq_job_lateness_seconds_bucket"), PromQl.metricNames(
                "histogram_quantile(0.99, sum by (le, topic) (rate(delayq_job_lateness_seconds_bucket{topic=~\"$topic\"}[5m])))"));
        assertEquals(Set.of("delayq_queue_scheduled", "delayq_topic_served"), PromQl.metricNames(
                "max by (topic) (delayq_queue_scheduled) > 0\nunless on (topic)\nmax by (topic) (delayq_topic_served) > 0"));
        assertEquals(Set.of("http_requests_total", "up"), PromQl.metricNames(
                "SUM WITHOUT (code) (rate(http_requests_total{job=\"a}b\"}[$__rate_interval] offset 5m)) "
                        + "/ ignoring(code) group_left(instance) up # trailing comment_total"));
        assertEquals(Set.of("foo", "bar"), PromQl.metricNames(
                "label_replace(foo, \"dst\", \"$1\", \"src\", \"(.*)\") or {__name__=\"bar\", job='x'} * 1e3"));
        assertEquals(Set.of("delayq_topics"), PromQl.metricNames(PromQl.ofVariable("label_values(delayq_topics, instance)")));
        assertEquals(Set.of(), PromQl.metricNames(PromQl.ofVariable("label_values(topic)")));
    }

    // ---- what the assets use ------------------------------------------------------------------

    /** Metric name → where it is used (dashboard panel or variable, alert). */
    private static Map<String, Set<String>> usedMetrics() throws IOException {
        Map<String, String> expressions = new LinkedHashMap<>();
        JsonNode dashboard = new ObjectMapper().readTree(DASHBOARD.toFile());
        collectPanels(dashboard.path("panels"), expressions);
        for (JsonNode variable : dashboard.path("templating").path("list")) {
            if (variable.path("type").asText().equals("query")) {
                JsonNode query = variable.path("query");
                String text = query.isObject() ? query.path("query").asText() : query.asText();
                expressions.put("dashboard variable " + variable.path("name").asText(), PromQl.ofVariable(text));
            }
        }
        for (Map<String, Object> rule : rules()) {
            expressions.put("alert " + rule.get("alert"), String.valueOf(rule.get("expr")));
        }
        expressions.putAll(autoscalingExpressions());
        Map<String, Set<String>> used = new TreeMap<>();
        expressions.forEach((where, expr) -> PromQl.metricNames(expr)
                .forEach(name -> used.computeIfAbsent(name, k -> new TreeSet<>()).add(where)));
        return used;
    }

    /**
     * The queries of k8s/autoscaling/: the KEDA triggers', the prometheus-adapter rules' (their
     * template placeholders taken out), and the HPA's external metric names (the adapter serves
     * them under the series' own names; ManifestsTest checks that it does).
     */
    @SuppressWarnings("unchecked")
    private static Map<String, String> autoscalingExpressions() throws IOException {
        Map<String, String> expressions = new LinkedHashMap<>();
        Map<String, Object> keda = yaml(AUTOSCALING.resolve("keda-scaledobject.yaml"));
        int i = 0;
        for (Object trigger : (List<Object>) ManifestsTest.get(keda, "spec", "triggers")) {
            expressions.put("KEDA trigger " + i++, String.valueOf(ManifestsTest.get(trigger, "metadata", "query")));
        }
        Map<String, Object> adapter = yaml(AUTOSCALING.resolve("prometheus-adapter-rules.yaml"));
        for (Object rule : (List<Object>) ManifestsTest.get(adapter, "rules", "external")) {
            String series = String.valueOf(ManifestsTest.get(rule, "seriesQuery"));
            String name = series.replaceAll("\\{.*", "");
            expressions.put("adapter seriesQuery " + name, series);
            expressions.put("adapter metricsQuery " + name, String.valueOf(ManifestsTest.get(rule, "metricsQuery"))
                    .replace("{<<.LabelMatchers>>}", "").replace("<<.Series>>", name));
        }
        Map<String, Object> hpa = yaml(AUTOSCALING.resolve("hpa-external.yaml"));
        for (Object metric : (List<Object>) ManifestsTest.get(hpa, "spec", "metrics")) {
            String name = String.valueOf(ManifestsTest.get(metric, "external", "metric", "name"));
            expressions.put("HPA external metric " + name, name);
        }
        return expressions;
    }

    private static Map<String, Object> yaml(Path file) throws IOException {
        try (Reader in = Files.newBufferedReader(file)) {
            return new Yaml().load(in);
        }
    }

    /** Every target's expr, by "dashboard panel 'title' refId", rows' nested panels included. */
    private static void collectPanels(JsonNode panels, Map<String, String> into) {
        for (JsonNode panel : panels) {
            for (JsonNode target : panel.path("targets")) {
                if (target.hasNonNull("expr")) {
                    into.put("dashboard panel '" + panel.path("title").asText() + "' " + target.path("refId").asText(),
                            target.path("expr").asText());
                }
            }
            collectPanels(panel.path("panels"), into);
        }
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> rules() throws IOException {
        Map<String, Object> doc;
        try (Reader in = Files.newBufferedReader(RULES)) {
            doc = new Yaml().load(in);
        }
        assertEquals("monitoring.coreos.com/v1", doc.get("apiVersion"));
        assertEquals("PrometheusRule", doc.get("kind"));
        List<Map<String, Object>> rules = new ArrayList<>();
        for (Object group : (List<Object>) ManifestsTest.get(doc, "spec", "groups")) {
            rules.addAll((List<Map<String, Object>>) ((Map<String, Object>) group).get("rules"));
        }
        assertFalse(rules.isEmpty(), RULES + " has no rules");
        return rules;
    }

    /** Anchor → heading text, as GitHub renders them (duplicates get -1, -2, ...), outside code blocks. */
    static Map<String, String> headingAnchors(String markdown) {
        Map<String, String> anchors = new LinkedHashMap<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String heading : headings(markdown)) {
            String text = heading.replaceFirst("^#+\\s*", "").trim();
            String slug = text.toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
            int n = seen.merge(slug, 1, Integer::sum) - 1;
            anchors.put(n == 0 ? slug : slug + "-" + n, text);
        }
        return anchors;
    }

    /** The ### headings inside "## Runbook". */
    static Set<String> runbookSections(String markdown) {
        Set<String> sections = new LinkedHashSet<>();
        boolean inRunbook = false;
        for (String heading : headings(markdown)) {
            if (heading.startsWith("## ") || heading.startsWith("# ")) {
                inRunbook = heading.equals("## Runbook");
            } else if (inRunbook && heading.startsWith("### ")) {
                sections.add(heading.substring(4).trim());
            }
        }
        return sections;
    }

    private static List<String> headings(String markdown) {
        List<String> headings = new ArrayList<>();
        boolean fenced = false;
        for (String line : markdown.split("\n")) {
            if (line.startsWith("```")) {
                fenced = !fenced;
            } else if (!fenced && line.matches("#{1,6} .*")) {
                headings.add(line.trim());
            }
        }
        return headings;
    }

    // ---- what the service exposes -------------------------------------------------------------

    private static String scrape() {
        return given().get("/q/metrics").then().statusCode(200).extract().asString();
    }

    /** The value of {@code name{...topic="topic"...}}, NaN when there is no such sample. */
    private static double sample(String body, String name, String topic) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{[^}]*topic=\"" + Pattern.quote(topic)
                + "\"[^}]*\\} ([0-9.eE+-]+|NaN)$").matcher(body);
        return m.find() ? Double.parseDouble(m.group(1)) : Double.NaN;
    }

    /** The sample names of a Prometheus text exposition and the type of each family. */
    record Exposition(Set<String> samples, Map<String, String> types) {
        private static final List<String> SUFFIXES = List.of("_bucket", "_count", "_sum");

        static Exposition parse(String body) {
            Set<String> samples = new TreeSet<>();
            Map<String, String> types = new HashMap<>();
            for (String line : body.split("\n")) {
                if (line.startsWith("# TYPE ")) {
                    String[] parts = line.split(" ");
                    types.put(parts[2], parts[3]);
                } else if (!line.isBlank() && !line.startsWith("#")) {
                    samples.add(line.split("[{ ]", 2)[0]);
                }
            }
            return new Exposition(samples, types);
        }

        /**
         * As Prometheus stores them: a histogram or summary X is the series X_bucket, X_count,
         * X_sum (and X{quantile} for a summary), so X is there if any of them is, and X_count of a
         * family declared as X is there with it. X_bucket needs a histogram.
         */
        boolean has(String name) {
            if (samples.contains(name) || SUFFIXES.stream().anyMatch(s -> samples.contains(name + s))) {
                return true;
            }
            for (String suffix : SUFFIXES) {
                if (name.endsWith(suffix)) {
                    String type = types.get(name.substring(0, name.length() - suffix.length()));
                    return "histogram".equals(type) || (!suffix.equals("_bucket") && "summary".equals(type));
                }
            }
            return false;
        }
    }

    // ---- PromQL, just enough to find metric names ---------------------------------------------

    /**
     * Finds the metric names of a PromQL expression: every identifier that is not a function (it
     * is followed by '('), an aggregation, a keyword, a label list after by/without/on/ignoring/
     * group_left/group_right, a label inside {...}, a string, a number or duration, or a Grafana
     * variable; plus names given as {__name__="..."}.
     */
    static final class PromQl {
        private static final Set<String> AGGREGATIONS = Set.of("sum", "min", "max", "avg", "group", "stddev",
                "stdvar", "count", "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio");
        private static final Set<String> KEYWORDS = Set.of("and", "or", "unless", "atan2", "bool", "offset", "inf",
                "nan");
        private static final Set<String> LABEL_LISTS = Set.of("by", "without", "on", "ignoring", "group_left",
                "group_right");
        private static final Pattern NAME_MATCHER = Pattern.compile("__name__\\s*=\\s*[\"'`]([^\"'`]+)[\"'`]");

        /** The PromQL inside a Grafana variable query: label_values(expr, label), query_result(expr). */
        static String ofVariable(String query) {
            Matcher m = Pattern.compile("\\s*label_values\\((.*),\\s*\\w+\\s*\\)\\s*", Pattern.DOTALL).matcher(query);
            if (m.matches()) {
                return m.group(1);
            }
            m = Pattern.compile("\\s*query_result\\((.*)\\)\\s*", Pattern.DOTALL).matcher(query);
            return m.matches() ? m.group(1) : ""; // label_values(label), label_names(), metrics(re): no series
        }

        static Set<String> metricNames(String expr) {
            Set<String> names = new TreeSet<>();
            int i = 0;
            int n = expr.length();
            while (i < n) {
                char c = expr.charAt(i);
                if (c == '"' || c == '\'' || c == '`') {
                    i = skipString(expr, i);
                } else if (c == '#') {
                    while (i < n && expr.charAt(i) != '\n') {
                        i++;
                    }
                } else if (c == '{') {
                    int end = skipTo(expr, i, '}');
                    Matcher m = NAME_MATCHER.matcher(expr.substring(i, end));
                    while (m.find()) {
                        names.add(m.group(1));
                    }
                    i = end;
                } else if (c == '[') {
                    i = skipTo(expr, i, ']');
                } else if (c == '$') {
                    i++;
                    if (i < n && expr.charAt(i) == '{') {
                        i = skipTo(expr, i, '}');
                    } else {
                        while (i < n && isWord(expr.charAt(i))) {
                            i++;
                        }
                    }
                } else if (Character.isDigit(c)) {
                    while (i < n && (isWord(expr.charAt(i)) || expr.charAt(i) == '.'
                            || (expr.charAt(i) == '+' || expr.charAt(i) == '-') && "eE".indexOf(expr.charAt(i - 1)) >= 0)) {
                        i++;
                    }
                } else if (Character.isLetter(c) || c == '_' || c == ':') {
                    int start = i;
                    while (i < n && isWord(expr.charAt(i))) {
                        i++;
                    }
                    String word = expr.substring(start, i);
                    String keyword = word.toLowerCase(Locale.ROOT);
                    int next = i;
                    while (next < n && Character.isWhitespace(expr.charAt(next))) {
                        next++;
                    }
                    boolean call = next < n && expr.charAt(next) == '(';
                    if (LABEL_LISTS.contains(keyword)) {
                        i = call ? skipTo(expr, next, ')') : i;
                    } else if (!call && !AGGREGATIONS.contains(keyword) && !KEYWORDS.contains(keyword)) {
                        names.add(word);
                    }
                } else {
                    i++;
                }
            }
            return names;
        }

        private static boolean isWord(char c) {
            return Character.isLetterOrDigit(c) || c == '_' || c == ':';
        }

        /** Index after the string literal opening at {@code start}. */
        private static int skipString(String s, int start) {
            char quote = s.charAt(start);
            int i = start + 1;
            while (i < s.length() && s.charAt(i) != quote) {
                i += s.charAt(i) == '\\' && quote != '`' ? 2 : 1;
            }
            return Math.min(i + 1, s.length());
        }

        /** Index after the {@code close} that ends the group opening at {@code start}, strings skipped. */
        private static int skipTo(String s, int start, char close) {
            int i = start + 1;
            while (i < s.length() && s.charAt(i) != close) {
                char c = s.charAt(i);
                i = c == '"' || c == '\'' || c == '`' ? skipString(s, i) : i + 1;
            }
            if (i >= s.length()) {
                fail("unbalanced '" + s.charAt(start) + "' in " + s);
            }
            return i + 1;
        }
    }
}
