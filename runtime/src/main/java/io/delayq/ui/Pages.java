package io.delayq.ui;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

import jakarta.enterprise.context.ApplicationScoped;

import io.quarkus.qute.Engine;
import io.quarkus.qute.Template;
import io.quarkus.qute.Variant;

/**
 * The dashboard's Qute templates ({@code delayq-ui/*.html} among the runtime's resources),
 * parsed once as HTML: Qute then escapes every value it writes into them, so a payload holding
 * {@code <script>} shows as text. They are registered under {@code delayq/<name>} so that pages
 * can include the layout.
 */
@ApplicationScoped
public class Pages {
    static final List<String> NAMES = List.of("layout", "overview", "topics", "topic", "topic-body", "job");
    private static final Variant HTML = Variant.forContentType(Variant.TEXT_HTML);
    private final Engine engine;

    public Pages(Engine engine) {
        this.engine = engine;
        for (String name : NAMES) {
            String id = "delayq/" + name;
            engine.putTemplate(id, engine.parse(read(name), HTML, id));
        }
    }

    /** Renders page {@code name} with its view as {@code v}. */
    String render(String name, Object view) {
        Template t = engine.getTemplate("delayq/" + name);
        return t.data("v", view).render();
    }

    private static String read(String name) {
        String path = "delayq-ui/" + name + ".html";
        try (InputStream in = Pages.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("dashboard template " + path + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
