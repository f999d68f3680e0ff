package io.delayq.ui;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

import jakarta.ws.rs.core.UriInfo;

import jakarta.enterprise.context.ApplicationScoped;

import io.delayq.security.AccessMode;
import io.delayq.security.DelayqRole;
import io.quarkus.qute.Engine;
import io.quarkus.qute.ReflectionValueResolver;
import io.quarkus.qute.Template;
import io.quarkus.qute.Variant;
import io.quarkus.security.identity.SecurityIdentity;

/**
 * The dashboard's Qute templates ({@code delayq-ui/*.html} among the runtime's resources),
 * parsed once as HTML by an engine of its own: Qute then escapes every value it writes into
 * them, so a payload holding {@code <script>} shows as text, and one holding a right-to-left
 * override shows {@code [U+202E]} instead of reordering the page ({@link BidiSafeHtmlEscaper}). They are registered under
 * {@code delayq/<name>} so that pages can include the layout.
 */
@ApplicationScoped
public class Pages {
    static final List<String> NAMES = List.of("layout", "overview", "topics", "topic", "topic-body", "dead-filter", "job", "find",
            "history", "jobs");
    private static final Variant HTML = Variant.forContentType(Variant.TEXT_HTML);
    private final Engine engine;

    public Pages() {
        // Values are read through reflection (the view records are registered for it, for a native
        // image); every value written into a text/html template is escaped, its bidirectional
        // controls shown as text.
        this.engine = Engine.builder().addDefaults().addValueResolver(new ReflectionValueResolver())
                .addResultMapper(new BidiSafeHtmlEscaper()).build();
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

    /**
     * What every page knows (see {@link Views.Page}): the REST root of the request ({@code uri} null:
     * "/"), the static files' root, and the viewer's roles as delayq's access policy reads them (each
     * includes those below it; mapped roles count); with nothing configured the API is open, and so
     * are the buttons.
     */
    static Views.Page page(UriInfo uri, String assets, AccessMode access, SecurityIdentity identity) {
        String root = uri == null ? "/" : uri.getBaseUri().getPath();
        if (!root.endsWith("/")) {
            root = root + "/";
        }
        Optional<DelayqRole> role = access.open() ? Optional.of(DelayqRole.OPERATOR) : DelayqRole.of(identity);
        return new Views.Page(root, assets, role.map(r -> r.includes(DelayqRole.PRODUCER)).orElse(false),
                role.map(r -> r.includes(DelayqRole.OPERATOR)).orElse(false));
    }

    /**
     * A job's priority as the job tables show it: null (nothing shown) for 3, the default, which
     * most jobs have; 1, 2, 4 or 5 shown beside the job's id. Null too for a job whose record went
     * between the page's reads.
     */
    static Integer priority(Integer priority) {
        return priority == null || priority == 3 ? null : priority;
    }

    /** The HTTP root path, where static files such as the htmx WebJar are (not under quarkus.rest.path). */
    static String assets() {
        String httpRoot = org.eclipse.microprofile.config.ConfigProvider.getConfig()
                .getOptionalValue("quarkus.http.root-path", String.class).orElse("/");
        return httpRoot.endsWith("/") ? httpRoot : httpRoot + "/";
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
