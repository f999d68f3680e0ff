package io.delayq.ui;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.UriInfo;

import org.eclipse.microprofile.openapi.annotations.Operation;

import io.delayq.core.JobValidator;
import io.delayq.security.DelayqAccessPolicy;
import io.delayq.store.HistoryStore;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.qute.RawString;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.vertx.http.security.AuthorizationPolicy;

/**
 * The dashboard's history charts ({@code /delayq/history?topic=&minutes=}, a fragment the
 * overview and topic pages load and refresh): jobs enqueued / succeeded / failed per minute and
 * the lateness p99, over the last hour or 24 hours, as SVG drawn here (no script, no CDN). Each
 * minute with activity is a {@code rect.minute} with its figures in {@code data-*} attributes and
 * a {@code <title>} tooltip.
 */
@IfBuildProperty(name = "delayq.ui.enabled", stringValue = "true", enableIfMissing = true)
@Path("/delayq/history")
@Produces(MediaType.TEXT_HTML)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
public class HistoryCharts {
    private static final int W = 720, LEFT = 44, RIGHT = 8, TOP = 8, COUNTS_H = 150, LATENESS_H = 90, BOTTOM = 18;
    private static final DateTimeFormatter HM = DateTimeFormatter.ofPattern("HH:mm").withZone(ZoneOffset.UTC);
    private final HistoryStore store;
    private final Pages pages;

    public HistoryCharts(HistoryStore store, Pages pages) {
        this.store = store;
        this.pages = pages;
    }

    /** What history.html shows; {@code topic} null for all topics. */
    @RegisterForReflection
    public record View(String root, String topic, String query, int minutes, boolean day, RawString counts,
            RawString lateness, long enqueued, long succeeded, long failed) {
    }

    @GET
    @Operation(hidden = true)
    public String fragment(@QueryParam("topic") String topic, @QueryParam("minutes") String minutes,
            @Context UriInfo uri) {
        if (topic != null && !topic.isEmpty()) {
            JobValidator.checkTopic("topic", topic);
        } else {
            topic = null;
        }
        int n = "1440".equals(minutes) ? 1440 : 60;
        String root = uri.getBaseUri().getPath();
        root = root.endsWith("/") ? root : root + "/";
        List<HistoryStore.MinuteCounts> data = store.read(topic, n);
        long e = 0, s = 0, f = 0;
        for (HistoryStore.MinuteCounts m : data) {
            e += m.enqueued();
            s += m.succeeded();
            f += m.failed();
        }
        return pages.render("history", new View(root, topic, topic == null ? "" : "topic=" + topic + "&", n, n == 1440,
                new RawString(counts(data)), new RawString(lateness(data)), e, s, f));
    }

    private static double x(int i, int n) {
        return LEFT + (n <= 1 ? 0 : (double) i * (W - LEFT - RIGHT) / (n - 1));
    }

    private static String fmt(double d) {
        return String.format(Locale.ROOT, "%.1f", d);
    }

    /** The counts chart: three polylines over every minute, and a rect per minute with activity. */
    static String counts(List<HistoryStore.MinuteCounts> data) {
        int n = data.size();
        long max = 1;
        for (HistoryStore.MinuteCounts m : data) {
            max = Math.max(max, Math.max(m.enqueued(), Math.max(m.succeeded(), m.failed())));
        }
        int plot = COUNTS_H - TOP - BOTTOM;
        StringBuilder b = svgStart("counts", COUNTS_H, "jobs enqueued, succeeded and failed per minute", max, plot, data);
        String[] series = { "enqueued", "succeeded", "failed" };
        String[] colors = { "#2563eb", "#16a34a", "#dc2626" };
        for (int k = 0; k < 3; k++) {
            b.append("<polyline class=\"").append(series[k]).append("\" fill=\"none\" stroke=\"").append(colors[k])
                    .append("\" stroke-width=\"1.5\" points=\"");
            for (int i = 0; i < n; i++) {
                HistoryStore.MinuteCounts m = data.get(i);
                long v = k == 0 ? m.enqueued() : k == 1 ? m.succeeded() : m.failed();
                b.append(fmt(x(i, n))).append(',').append(fmt(TOP + plot - (double) v * plot / max)).append(' ');
            }
            b.append("\"/>");
        }
        minutes(b, data, plot);
        return b.append("</svg>").toString();
    }

    /** The lateness chart: a bar per minute with attempts, its height the p99 (log scale). */
    static String lateness(List<HistoryStore.MinuteCounts> data) {
        int n = data.size();
        long max = 1;
        for (HistoryStore.MinuteCounts m : data) {
            Long p = m.latenessP99Ms();
            if (p != null) {
                max = Math.max(max, p);
            }
        }
        int plot = LATENESS_H - TOP - BOTTOM;
        StringBuilder b = svgStart("lateness", LATENESS_H, "lateness p99 per minute, ms (log scale)", max, plot, data);
        double step = n <= 1 ? 4 : (double) (W - LEFT - RIGHT) / (n - 1);
        double logMax = Math.log10(max + 1);
        for (int i = 0; i < n; i++) {
            Long p = data.get(i).latenessP99Ms();
            if (p == null) {
                continue;
            }
            double h = Math.max(1, Math.log10(p + 1) / logMax * plot);
            b.append("<rect class=\"p99\" fill=\"#9333ea\" x=\"").append(fmt(x(i, n) - Math.max(1, step * 0.8) / 2))
                    .append("\" y=\"").append(fmt(TOP + plot - h)).append("\" width=\"").append(fmt(Math.max(1, step * 0.8)))
                    .append("\" height=\"").append(fmt(h)).append("\"/>");
        }
        minutes(b, data, plot);
        return b.append("</svg>").toString();
    }

    private static StringBuilder svgStart(String cls, int height, String label, long max, int plot,
            List<HistoryStore.MinuteCounts> data) {
        StringBuilder b = new StringBuilder(8192);
        b.append("<svg class=\"chart ").append(cls).append("\" viewBox=\"0 0 ").append(W).append(' ').append(height)
                .append("\" width=\"100%\" role=\"img\" aria-label=\"").append(label).append("\" data-max=\"").append(max)
                .append("\" xmlns=\"http://www.w3.org/2000/svg\">");
        b.append("<line x1=\"").append(LEFT).append("\" y1=\"").append(TOP + plot).append("\" x2=\"").append(W - RIGHT)
                .append("\" y2=\"").append(TOP + plot).append("\" stroke=\"#cbd5e1\"/>");
        b.append("<line x1=\"").append(LEFT).append("\" y1=\"").append(TOP).append("\" x2=\"").append(LEFT)
                .append("\" y2=\"").append(TOP + plot).append("\" stroke=\"#cbd5e1\"/>");
        text(b, LEFT - 4, TOP + 8, "end", Long.toString(max));
        text(b, LEFT - 4, TOP + plot, "end", "0");
        if (!data.isEmpty()) {
            text(b, LEFT, TOP + plot + 13, "start", HM.format(Instant.ofEpochMilli(data.get(0).minute())));
            text(b, W - RIGHT, TOP + plot + 13, "end", HM.format(Instant.ofEpochMilli(data.get(data.size() - 1).minute()))
                    + " UTC");
        }
        return b;
    }

    private static void text(StringBuilder b, double x, double y, String anchor, String s) {
        b.append("<text x=\"").append(fmt(x)).append("\" y=\"").append(fmt(y)).append("\" font-size=\"10\" fill=\"#64748b\" text-anchor=\"")
                .append(anchor).append("\">").append(s).append("</text>");
    }

    /** A transparent rect over each minute with activity: its figures as data-* and a tooltip. */
    private static void minutes(StringBuilder b, List<HistoryStore.MinuteCounts> data, int plot) {
        int n = data.size();
        double step = n <= 1 ? 8 : (double) (W - LEFT - RIGHT) / (n - 1);
        for (int i = 0; i < n; i++) {
            HistoryStore.MinuteCounts m = data.get(i);
            Long p = m.latenessP99Ms();
            if (m.enqueued() == 0 && m.succeeded() == 0 && m.failed() == 0 && p == null) {
                continue;
            }
            String minute = Instant.ofEpochMilli(m.minute()).toString();
            b.append("<rect class=\"minute\" fill=\"transparent\" x=\"").append(fmt(x(i, n) - step / 2)).append("\" y=\"")
                    .append(TOP).append("\" width=\"").append(fmt(Math.max(1, step))).append("\" height=\"").append(plot)
                    .append("\" data-minute=\"").append(minute).append("\" data-enqueued=\"").append(m.enqueued())
                    .append("\" data-succeeded=\"").append(m.succeeded()).append("\" data-failed=\"").append(m.failed())
                    .append("\" data-lateness-p99-ms=\"").append(p == null ? "" : p.toString()).append("\"><title>")
                    .append(HM.format(Instant.ofEpochMilli(m.minute()))).append(" UTC: ").append(m.enqueued())
                    .append(" enqueued, ").append(m.succeeded()).append(" succeeded, ").append(m.failed()).append(" failed")
                    .append(p == null ? "" : ", lateness p99 ≤ " + p + " ms").append("</title></rect>");
        }
    }
}
