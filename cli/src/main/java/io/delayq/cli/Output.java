package io.delayq.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * What a command prints on stdout. {@code table}: aligned columns for lists, {@code key  value}
 * lines for one object, times in UTC with how far they are from now ("in 5m", "3m ago").
 * {@code json}: the server's objects, one per line (a list is one line per element), for jq and
 * scripts.
 */
final class Output {
    private static final DateTimeFormatter UTC = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'")
            .withZone(ZoneOffset.UTC);

    /** A column of a table: its header and what it shows of a row. */
    record Column(String header, Function<JsonNode, String> value) {
        static Column of(String header, String field) {
            return new Column(header, row -> plain(row.get(field)));
        }

        static Column time(String header, String field) {
            return new Column(header, row -> when(row.get(field)));
        }
    }

    private final PrintWriter out;
    final boolean json;

    Output(PrintWriter out, boolean json) {
        this.out = out;
        this.json = json;
    }

    /** A list: a table with these columns, or one JSON object per line. */
    void list(JsonNode array, List<Column> columns) {
        if (json) {
            array.forEach(this::line);
            out.flush();
            return;
        }
        List<String[]> rows = new ArrayList<>();
        rows.add(columns.stream().map(Column::header).toArray(String[]::new));
        for (JsonNode row : array) {
            rows.add(columns.stream().map(c -> c.value().apply(row)).toArray(String[]::new));
        }
        table(rows);
    }

    /** One object: {@code key  value} lines (nested objects as {@code key.inner}), or one JSON line. */
    void object(JsonNode node) {
        if (json) {
            line(node);
            out.flush();
            return;
        }
        List<String[]> rows = new ArrayList<>();
        flatten("", node, rows);
        table(rows);
    }

    /** A sentence for people; in json the object it stands for. */
    void said(String sentence, JsonNode node) {
        if (json) {
            line(node);
        } else {
            out.println(sentence);
        }
        out.flush();
    }

    private void line(JsonNode node) {
        try {
            out.println(Api.JSON.writeValueAsString(node));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void flatten(String prefix, JsonNode node, List<String[]> rows) {
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> e = it.next();
            if (e.getValue().isObject()) {
                flatten(prefix + e.getKey() + ".", e.getValue(), rows);
            } else {
                rows.add(new String[] { prefix + e.getKey(), value(e.getValue()) });
            }
        }
    }

    /** Columns padded to their widest cell, two spaces apart; the last one not padded. */
    private void table(List<String[]> rows) {
        int n = rows.isEmpty() ? 0 : rows.get(0).length;
        int[] width = new int[n];
        for (String[] r : rows) {
            for (int i = 0; i < n; i++) {
                width[i] = Math.max(width[i], r[i].length());
            }
        }
        StringBuilder b = new StringBuilder();
        for (String[] r : rows) {
            b.setLength(0);
            for (int i = 0; i < n; i++) {
                b.append(r[i]);
                if (i < n - 1) {
                    b.append(" ".repeat(width[i] - r[i].length() + 2));
                }
            }
            out.println(b.toString().stripTrailing());
        }
        out.flush();
    }

    /** A cell: text as it is, a time as {@link #when}, none as "-". */
    static String value(JsonNode v) {
        if (v == null || v.isNull() || v.isMissingNode()) {
            return "-";
        }
        if (v.isTextual()) {
            String s = v.asText();
            return looksLikeInstant(s) ? when(v) : s;
        }
        if (v.isContainerNode()) {
            try {
                return Api.JSON.writeValueAsString(v);
            } catch (JsonProcessingException e) {
                return v.toString();
            }
        }
        return v.asText();
    }

    static String plain(JsonNode v) {
        return v == null || v.isNull() || v.isMissingNode() ? "-" : v.asText();
    }

    private static boolean looksLikeInstant(String s) {
        return s.length() >= 20 && s.length() <= 35 && s.charAt(4) == '-' && s.charAt(10) == 'T';
    }

    /** "2026-12-02 17:20:05Z (in 5m)"; "-" for none; the text itself if it is no instant. */
    static String when(JsonNode v) {
        if (v == null || v.isNull() || v.isMissingNode()) {
            return "-";
        }
        try {
            Instant t = Instant.parse(v.asText());
            return UTC.format(t) + " (" + relative(t, Instant.now()) + ")";
        } catch (DateTimeParseException e) {
            return v.asText();
        }
    }

    static String relative(Instant t, Instant now) {
        Duration d = Duration.between(now, t);
        if (Math.abs(d.toMillis()) < 1000) {
            return "now";
        }
        String s = Durations.text(d.abs().withNanos(0));
        return d.isNegative() ? s + " ago" : "in " + s;
    }

    /** Text cut to {@code max} characters, its first line only. */
    static String cut(String s, int max) {
        int nl = s.indexOf('\n');
        String first = nl < 0 ? s : s.substring(0, nl) + " ...";
        return first.length() <= max ? first : first.substring(0, max - 3) + "...";
    }
}
