package io.delayq.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * The guides cannot rot unnoticed: every shell block says how it is run (and what it names exists),
 * every fence names its language (so no command hides in an unmarked one), and every relative
 * link and anchor leads somewhere. Plain files, no application: a unit test. {@link DocCommandsIT}
 * runs the blocks marked runnable.
 */
class DocsTest {

    @Test
    void everyShellBlockSaysHowItIsRun() {
        List<String> wrong = new ArrayList<>();
        for (Path guide : Docs.guides()) {
            for (Docs.Block b : Docs.blocks(guide)) {
                if (!b.isShell()) {
                    continue;
                }
                String m = b.marker();
                if (m == null) {
                    wrong.add(b.where() + ": a shell block without <!-- runnable -->, <!-- covered-by: ... --> or <!-- not-run: ... --> on the line before it");
                } else if (!(m.equals("runnable") || m.matches("covered-by: \\S+") || m.matches("not-run: \\S.*"))) {
                    wrong.add(b.where() + ": unknown marker <!-- " + m + " --> (runnable, covered-by: NAME, not-run: reason)");
                }
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    @Test
    void coveredByNamesATestOrAScriptThatRunsTheBlock() {
        List<String> wrong = new ArrayList<>();
        int covered = 0;
        for (Path guide : Docs.guides()) {
            for (Docs.Block b : Docs.blocks(guide)) {
                if (!b.isShell() || b.marker() == null || !b.marker().startsWith("covered-by: ")) {
                    continue;
                }
                covered++;
                String name = b.marker().substring("covered-by: ".length()).strip();
                if (name.contains("/")) {
                    // A file of the repository (.ci/run): it must exist and run each command of the block.
                    Path script = Docs.ROOT.resolve(name).normalize();
                    if (!Files.isRegularFile(script)) {
                        wrong.add(b.where() + ": covered-by names " + name + ", which is no file of the repository");
                        continue;
                    }
                    String text = String.join("\n", Docs.lines(script)).replaceAll("[ \\t]+", " ");
                    for (String command : Docs.commands(b.body())) {
                        if (!text.contains(command)) {
                            wrong.add(b.where() + ": " + name + " does not run `" + command + "`");
                        }
                    }
                } else if (testClass(name).isEmpty()) {
                    wrong.add(b.where() + ": covered-by names " + name + ", but there is no " + name + ".java in a src/test");
                }
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
        assertTrue(covered > 0, "no covered-by marker found: is the block parser broken?");
    }

    @Test
    void everyFenceNamesItsLanguage() {
        List<String> wrong = new ArrayList<>();
        for (Path guide : Docs.guides()) {
            for (Docs.Block b : Docs.blocks(guide)) {
                if (b.lang().isEmpty()) {
                    wrong.add(b.where() + ": a fence without a language (```text for plain text)");
                }
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    @Test
    void everyRelativeLinkAndAnchorResolves() {
        List<String> wrong = new ArrayList<>();
        int checked = 0;
        for (Path md : Docs.allMarkdown()) {
            for (Docs.Link l : Docs.links(md)) {
                String target = l.target();
                if (target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*")) {
                    continue; // https:, mailto: — not ours to check offline
                }
                checked++;
                String[] parts = target.split("#", 2);
                Path file = parts[0].isEmpty() ? md : md.getParent().resolve(parts[0]).normalize();
                if (!Files.exists(file)) {
                    wrong.add(l.where() + ": " + target + " — no such file " + Docs.ROOT.relativize(file));
                } else if (parts.length == 2 && file.toString().endsWith(".md") && !Docs.anchors(file).contains(parts[1])) {
                    wrong.add(l.where() + ": " + target + " — no heading with anchor #" + parts[1] + " in "
                            + Docs.ROOT.relativize(file));
                }
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
        assertTrue(checked > 50, "only " + checked + " relative links found: is the link parser broken?");
    }

    @Test
    void theReadmeListsEveryGuide() {
        Path readme = Docs.ROOT.resolve("README.md");
        List<Path> listed = Docs.links(readme).stream().map(l -> l.target().split("#", 2)[0])
                .filter(p -> p.matches("docs/[^/]+\\.md")).map(p -> Docs.ROOT.resolve(p).normalize()).distinct().toList();
        List<Path> guides = Docs.guides().subList(1, Docs.guides().size());
        assertEquals(guides, listed, "README.md's guide list should link every docs/*.md, once each");
    }

    private static List<Path> testClass(String name) {
        return Docs.files(p -> p.getFileName().toString().equals(name + ".java")
                && p.toString().replace('\\', '/').contains("/src/test/"));
    }
}
