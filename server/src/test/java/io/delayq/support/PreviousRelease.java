package io.delayq.support;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The packaged server of an earlier release, built from this repository's git history, for the
 * rolling-upgrade tests: its tree at {@link #COMMIT} ({@code git archive}) is built with its own
 * Maven wrapper ({@code package -pl server -am -DskipTests}: nothing installed, so this build's
 * artifacts in the local repository stay as they are; MAVEN_ARGS, and with it the local
 * repository, are inherited) into {@code <cache>/previous-release/<commit>}, and kept there: a later
 * run, from this clone or another, reuses it (a few minutes the first time, nothing after), as the
 * local Maven repository is reused. The cache is {@code $DELAYQ_CACHE}, else {@code ~/.cache/delayq};
 * a file lock there keeps two builds (two clones' test runs at once) from writing the same tree. The
 * build is a pure function of the commit, so a kept one is the one a fresh machine would build.
 */
public final class PreviousRelease {
    /** The last release before priorities (lanes): its take serves the plain day shards only. */
    public static final String COMMIT = "7898d0f";
    private static final long BUILD_MINUTES = 20; // a cold build on a loaded 2-core machine

    private PreviousRelease() {
    }

    /** Its {@code quarkus-run.jar}, built first when not there yet. */
    public static synchronized Path jar() {
        String cache = System.getenv("DELAYQ_CACHE");
        Path home = (cache == null || cache.isBlank() ? Path.of(System.getProperty("user.home"), ".cache", "delayq")
                : Path.of(cache)).resolve("previous-release").toAbsolutePath();
        Path tree = home.resolve(COMMIT);
        Path jar = tree.resolve(Path.of("server", "target", "quarkus-app", "quarkus-run.jar"));
        if (Files.exists(jar)) {
            return jar;
        }
        try {
            Files.createDirectories(home);
        } catch (IOException e) {
            throw new IllegalStateException("building release " + COMMIT + ": " + e, e);
        }
        try (FileChannel lockFile = FileChannel.open(home.resolve(COMMIT + ".lock"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE); FileLock lock = lockFile.lock()) {
            if (Files.exists(jar)) { // built by another run while this one waited for the lock
                return jar;
            }
            Path building = home.resolve(COMMIT + ".building");
            deleteTree(building);
            Files.createDirectories(building);
            Path root = Path.of(run(Path.of("").toAbsolutePath(), home.resolve("git.log"), "git", "rev-parse", "--show-toplevel"));
            ensureCommit(root, home);
            Path archive = home.resolve(COMMIT + ".tar");
            run(root, home.resolve("git.log"), "git", "archive", "--format=tar", "-o", archive.toString(), COMMIT);
            run(building, home.resolve("tar.log"), "tar", "-xf", archive.toString());
            Files.delete(archive);
            run(building, home.resolve("build.log"), "./mvnw", "-B", "-q", "package", "-DskipTests", "-pl", "server", "-am");
            deleteTree(tree);
            Files.move(building, tree, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new IllegalStateException("building release " + COMMIT + ": " + e, e);
        }
        if (!Files.exists(jar)) {
            throw new IllegalStateException("the build of release " + COMMIT + " left no " + jar);
        }
        return jar;
    }

    /**
     * The commit in the clone, fetched when it is not: a shallow clone (CI checkouts often are) lacks
     * it. One try at each fetch (their failures only logged), then a failure that says what to do.
     */
    private static void ensureCommit(Path root, Path home) throws IOException {
        String commit = COMMIT + "^{commit}";
        Path log = home.resolve("git.log");
        if (exec(root, log, "git", "cat-file", "-e", commit) == 0) {
            return;
        }
        exec(root, home.resolve("fetch-unshallow.log"), "git", "fetch", "--unshallow");
        if (exec(root, log, "git", "cat-file", "-e", commit) == 0) {
            return;
        }
        exec(root, home.resolve("fetch-commit.log"), "git", "fetch", "origin", COMMIT);
        if (exec(root, log, "git", "cat-file", "-e", commit) != 0) {
            throw new IllegalStateException("release " + COMMIT + " is not in the clone at " + root + ", and neither `git fetch"
                    + " --unshallow` nor `git fetch origin " + COMMIT + "` brought it (their output: fetch-*.log in " + home
                    + "): clone the repository with its history (e.g. actions/checkout's fetch-depth: 0) to run the"
                    + " rolling-upgrade tests");
        }
    }

    /** Runs a command in dir, its output to log; its output's last line, or a failure with the log. */
    private static String run(Path dir, Path log, String... command) throws IOException {
        int exit = exec(dir, log, command);
        String out = Files.readString(log).strip();
        if (exit != 0) {
            throw new IllegalStateException(String.join(" ", command) + " in " + dir + " failed (" + exit + "):\n" + out);
        }
        int nl = out.lastIndexOf('\n');
        return nl < 0 ? out : out.substring(nl + 1);
    }

    /** Runs a command in dir, its output to log (replaced); its exit code. */
    private static int exec(Path dir, Path log, String... command) throws IOException {
        Files.createDirectories(log.getParent());
        Process p = new ProcessBuilder(List.of(command)).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        try {
            if (!p.waitFor(BUILD_MINUTES, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                throw new IllegalStateException(String.join(" ", command) + " took over " + BUILD_MINUTES + " min");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        return p.exitValue();
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (var paths = Files.walk(dir)) {
            paths.sorted(java.util.Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        }
    }
}
