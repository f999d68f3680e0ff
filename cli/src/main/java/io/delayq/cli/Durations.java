package io.delayq.cli;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

/**
 * Durations as people write them ({@code 30s}, {@code 5m}, {@code 1h30m}, {@code 2d}, {@code 250ms},
 * or ISO-8601 {@code PT5M}) and instants in ISO-8601. Parsed here rather than by picocli
 * converters: a bad value is a usage error (exit 2) that names the option.
 */
final class Durations {
    private static final Pattern PART = Pattern.compile("(\\d+)(ms|s|m|h|d)");

    private Durations() {
    }

    static Duration parse(CommandLine cmd, String option, String text) {
        String s = text.strip();
        if (s.equals("0")) {
            return Duration.ZERO;
        }
        if (s.startsWith("P") || s.startsWith("p")) {
            try {
                Duration d = Duration.parse(s);
                if (!d.isNegative()) {
                    return d;
                }
            } catch (DateTimeParseException e) {
                // reported below
            }
            throw bad(cmd, option, text);
        }
        Matcher m = PART.matcher(s);
        Duration d = Duration.ZERO;
        int at = 0;
        while (at < s.length()) {
            if (!m.find(at) || m.start() != at) {
                throw bad(cmd, option, text);
            }
            long n;
            try {
                n = Long.parseLong(m.group(1));
                d = d.plus(switch (m.group(2)) {
                    case "ms" -> Duration.ofMillis(n);
                    case "s" -> Duration.ofSeconds(n);
                    case "m" -> Duration.ofMinutes(n);
                    case "h" -> Duration.ofHours(n);
                    default -> Duration.ofDays(n);
                });
            } catch (ArithmeticException | NumberFormatException e) {
                throw bad(cmd, option, text);
            }
            at = m.end();
        }
        if (at == 0) {
            throw bad(cmd, option, text);
        }
        return d;
    }

    private static ParameterException bad(CommandLine cmd, String option, String text) {
        return new ParameterException(cmd, option + " must be a duration like 30s, 5m, 1h30m or 2d, not '" + text + "'");
    }

    /** An ISO-8601 instant ({@code 2026-12-24T18:00:00Z}, or with an offset: {@code +01:00}). */
    static Instant instant(CommandLine cmd, String option, String text) {
        try {
            return Instant.parse(text.strip());
        } catch (DateTimeParseException e) {
            try {
                return OffsetDateTime.parse(text.strip()).toInstant();
            } catch (DateTimeParseException e2) {
                throw new ParameterException(cmd, option + " must be an ISO-8601 instant like 2026-12-24T18:00:00Z, not '"
                        + text + "'");
            }
        }
    }

    /** A duration the short way: 30s, 5m, 1h5m, 2d3h (two units at most), 250ms under a second. */
    static String text(Duration d) {
        long ms = Math.abs(d.toMillis());
        if (ms < 1000) {
            return ms + "ms";
        }
        long s = ms / 1000;
        long[] sizes = { 86400, 3600, 60, 1 };
        String[] units = { "d", "h", "m", "s" };
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < sizes.length && b.length() == 0; i++) {
            if (s >= sizes[i]) {
                b.append(s / sizes[i]).append(units[i]);
                long rest = (s % sizes[i]) / (i + 1 < sizes.length ? sizes[i + 1] : 1);
                if (i + 1 < sizes.length && rest > 0) {
                    b.append(rest).append(units[i + 1]);
                }
            }
        }
        return b.toString();
    }
}
