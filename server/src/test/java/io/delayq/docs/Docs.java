package io.delayq.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The guides as the doc tests read them: {@code README.md} and {@code docs/*.md} (not the
 * generated {@code docs/config/}), their fenced blocks with the marker comment before each, their
 * links and their headings' anchors as GitHub makes them. Plain text parsing, enough for the
 * Markdown these files use: fences start a line (indented inside a list), links are inline.
 */
final class Docs {
    /** The repository: the tests run in {@code server/}. */
    static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    private static final Pattern FENCE = Pattern.compile("^(\\s*)```(\\S*)\\s*$");
    private static final Pattern MARKER = Pattern.compile("^\\s*<!--\\s*(.*?)\\s*-->\\s*$");
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
    private static final Set<String> SHELLS = Set.of("shell", "sh", "bash", "console", "zsh");

    private Docs() {
    }

    /** One fenced block: where it starts (1-based line of the fence), its language, the marker comment before it (or null). */
    record Block(Path file, int line, String lang, String marker, String body) {
        boolean isShell() {
            return SHELLS.contains(lang);
        }

        String where() {
            return ROOT.relativize(file) + ":" + line;
        }
    }

    /** One inline link outside code: the target as written and the line it is on. */
    record Link(Path file, int line, String target) {
        String where() {
            return ROOT.relativize(file) + ":" + line;
        }
    }

    /**
     * README.md, then the guides in the order the README lists them (its links into docs/), then
     * any guide it does not list, by name.
     */
    static List<Path> guides() {
        Path readme = ROOT.resolve("README.md");
        Set<Path> ordered = new LinkedHashSet<>();
        ordered.add(readme);
        for (Link l : links(readme)) {
            String path = l.target().split("#", 2)[0];
            if (path.matches("docs/[^/]+\\.md")) {
                ordered.add(ROOT.resolve(path).normalize());
            }
        }
        try (Stream<Path> s = Files.list(ROOT.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(ordered::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return List.copyOf(ordered);
    }

    /**
     * Every hand-written Markdown file of the repository (the guides and the other READMEs, such
     * as k8s/README.md), not what a build writes (target/, node_modules/) nor docs/config/.
     */
    static List<Path> allMarkdown() {
        return files(p -> p.toString().endsWith(".md") && !p.startsWith(ROOT.resolve("docs/config")));
    }

    /**
     * The files of the repository that match, sorted; what a build writes ({@code target/},
     * {@code node_modules/}) and hidden directories ({@code .git}, a local Maven repository) are
     * not walked.
     */
    static List<Path> files(Predicate<Path> wanted) {
        List<Path> found = new ArrayList<>();
        try {
            Files.walkFileTree(ROOT, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
                    String name = dir.getFileName() == null ? "" : dir.getFileName().toString();
                    boolean skip = !dir.equals(ROOT)
                            && (name.startsWith(".") || name.equals("target") || name.equals("node_modules"));
                    return skip ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                    if (wanted.test(file)) {
                        found.add(file);
                    }
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        found.sort(null);
        return found;
    }

    static List<String> lines(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Block> blocks(Path file) {
        List<String> lines = lines(file);
        List<Block> blocks = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            Matcher open = FENCE.matcher(lines.get(i));
            if (!open.matches()) {
                continue;
            }
            String marker = null;
            for (int j = i - 1; j >= 0; j--) {
                if (lines.get(j).isBlank()) {
                    continue;
                }
                Matcher m = MARKER.matcher(lines.get(j));
                marker = m.matches() ? m.group(1) : null;
                break;
            }
            String indent = open.group(1);
            StringBuilder body = new StringBuilder();
            int j = i + 1;
            while (j < lines.size() && !lines.get(j).strip().equals("```")) {
                String l = lines.get(j);
                body.append(l.startsWith(indent) ? l.substring(indent.length()) : l.strip()).append('\n');
                j++;
            }
            blocks.add(new Block(file, i + 1, open.group(2), marker, body.toString()));
            i = j;
        }
        return blocks;
    }

    /** The lines outside fenced blocks, blank in their place, so that line numbers stay. */
    private static List<String> prose(Path file) {
        List<String> out = new ArrayList<>();
        boolean fenced = false;
        for (String l : lines(file)) {
            if (FENCE.matcher(l).matches() || (fenced && l.strip().equals("```"))) {
                fenced = !fenced;
                out.add("");
            } else {
                out.add(fenced ? "" : l);
            }
        }
        return out;
    }

    static List<Link> links(Path file) {
        List<Link> links = new ArrayList<>();
        List<String> prose = prose(file);
        for (int i = 0; i < prose.size(); i++) {
            Matcher m = LINK.matcher(prose.get(i).replaceAll("`[^`]*`", ""));
            while (m.find()) {
                links.add(new Link(file, i + 1, m.group(1)));
            }
        }
        return links;
    }

    /** The anchors GitHub gives the headings of a Markdown file ({@code #flow-control-pause-rate-limits-reschedule}). */
    static Set<String> anchors(Path file) {
        Set<String> anchors = new LinkedHashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String l : prose(file)) {
            Matcher m = HEADING.matcher(l);
            if (m.matches()) {
                String slug = m.group(1).toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N}\\p{M} _-]", "")
                        .replace(' ', '-');
                int n = seen.merge(slug, 1, Integer::sum) - 1;
                anchors.add(n == 0 ? slug : slug + "-" + n);
            }
        }
        return anchors;
    }

    /**
     * The commands of a shell block: its lines with comments and blanks dropped and a trailing
     * backslash joined with the next line.
     */
    static List<String> commands(String body) {
        List<String> commands = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String l : body.split("\n")) {
            String s = l.replaceFirst("(^|\\s)#.*$", "").strip();
            if (s.isEmpty() && current.isEmpty()) {
                continue;
            }
            if (s.endsWith("\\")) {
                current.append(s, 0, s.length() - 1).append(' ');
                continue;
            }
            current.append(s);
            commands.add(current.toString().replaceAll("\\s+", " ").strip());
            current.setLength(0);
        }
        return commands;
    }
}
