package io.delayq.store;

import io.delayq.core.JobRetry;

/**
 * A job record as stored in the jobs hash:
 * {@code <runAt base36>[,<attempts>,<maxAttempts>[,<lastError>]]\n<payload>}, where a traced
 * job's lastError field starts with RS (0x1E) and its 50-digit trace context, and a job with lost
 * attempts has them next (after the trace context) as US (0x1F), the count in decimal, US, and a
 * job with its own retry backoff has it next as GS (0x1D), the initial delay ms, a comma, the max
 * delay ms (either empty when not given), GS, and a job of a group has it next as FS (0x1C), the
 * group, FS, and a job with its own limits has them next as ESC (0x1B), the timeout ms, a comma,
 * the expiresAt epoch ms (either empty when not given), ESC. A job whose priority is not the
 * default 3 has it as a prefix of the runAt: {@code 00} for 1, {@code 0} for 2, {@code +} for 4,
 * {@code +0} for 5 (the runAt parses the same with it, in every release: a leading '+' and
 * leading zeros are part of base 36 text); a record written before the prefix has it after the
 * limits instead, as SUB (0x1A), the digit 1..5, SUB (read still, a prefix wins). The Lua side of
 * the same format is {@code encode}/{@code decode} in {@code lib.lua}, which says why it is there.
 *
 * @param trace the W3C trace context of the enqueue as 32 + 16 + 2 hex digits (trace id, span
 *        id, flags), empty when the job was enqueued in no trace
 * @param maxAttempts 0 = the topic's default
 * @param lastError empty when none
 * @param payload the payload JSON as sent, empty when the job has none
 * @param lostAttempts leases of the job that expired in a row without an outcome (see
 *        {@code reclaim.lua}); not part of {@code attempts}
 * @param retry the job's own retry backoff, null when it follows its topic's (every record
 *        written before there was one)
 * @param timeoutMs the job's own attempt timeout (the enqueue's {@code timeoutMs}), null = its topic's
 * @param expiresAt the job's own expiresAt, epoch ms, null = none (every record written before
 *        there was one)
 * @param priority 1 (first) .. 5 (last); {@link #DEFAULT_PRIORITY} for a record with neither the
 *        prefix nor the mark (every record written before there were priorities, and every one a
 *        release before them rewrote)
 */
public record JobRecord(long runAt, String trace, int attempts, int maxAttempts, String lastError, String payload,
        int lostAttempts, JobRetry retry, String group, Long timeoutMs, Long expiresAt, int priority) {
    /** The priority of a job that was given none, and of every record without the mark. */
    public static final int DEFAULT_PRIORITY = 3;
    private static final char TRACE_MARK = 0x1E;
    private static final int TRACE_LENGTH = 50;
    private static final char LOST_MARK = 0x1F;
    private static final char RETRY_MARK = 0x1D;
    private static final char GROUP_MARK = 0x1C;
    private static final char LIMIT_MARK = 0x1B;
    private static final char PRIORITY_MARK = 0x1A;

    /** A record of the default priority. */
    public JobRecord(long runAt, String trace, int attempts, int maxAttempts, String lastError, String payload,
            int lostAttempts, JobRetry retry, String group, Long timeoutMs, Long expiresAt) {
        this(runAt, trace, attempts, maxAttempts, lastError, payload, lostAttempts, retry, group, timeoutMs, expiresAt,
                DEFAULT_PRIORITY);
    }

    /** A record without limits of its own. */
    public JobRecord(long runAt, String trace, int attempts, int maxAttempts, String lastError, String payload,
            int lostAttempts, JobRetry retry, String group) {
        this(runAt, trace, attempts, maxAttempts, lastError, payload, lostAttempts, retry, group, null, null);
    }

    /** A record of no group. */
    public JobRecord(long runAt, String trace, int attempts, int maxAttempts, String lastError, String payload,
            int lostAttempts, JobRetry retry) {
        this(runAt, trace, attempts, maxAttempts, lastError, payload, lostAttempts, retry, null);
    }

    /** A record with no lost attempt. */
    public JobRecord(long runAt, String trace, int attempts, int maxAttempts, String lastError, String payload) {
        this(runAt, trace, attempts, maxAttempts, lastError, payload, 0);
    }

    /** A record of a job that follows its topic's retry backoff. */
    public JobRecord(long runAt, String trace, int attempts, int maxAttempts, String lastError, String payload,
            int lostAttempts) {
        this(runAt, trace, attempts, maxAttempts, lastError, payload, lostAttempts, null);
    }

    public static JobRecord decode(String record) {
        int nl = record.indexOf('\n');
        String head = record.substring(0, nl);
        String payload = record.substring(nl + 1);
        int c1 = head.indexOf(',');
        int prefixed = prefixPriority(head, c1 < 0 ? head.length() : c1);
        if (c1 < 0) {
            return new JobRecord(Long.parseLong(head, 36), "", 0, 0, "", payload, 0, null, null, null, null,
                    prefixed > 0 ? prefixed : DEFAULT_PRIORITY);
        }
        int c2 = head.indexOf(',', c1 + 1);
        int c3 = head.indexOf(',', c2 + 1);
        int attempts = Integer.parseInt(head.substring(c1 + 1, c2));
        int max = Integer.parseInt(c3 < 0 ? head.substring(c2 + 1) : head.substring(c2 + 1, c3));
        String error = c3 < 0 ? "" : head.substring(c3 + 1);
        String trace = "";
        if (!error.isEmpty() && error.charAt(0) == TRACE_MARK && error.length() > TRACE_LENGTH) {
            trace = error.substring(1, 1 + TRACE_LENGTH);
            error = error.substring(1 + TRACE_LENGTH);
        }
        int lost = 0;
        int end = !error.isEmpty() && error.charAt(0) == LOST_MARK ? error.indexOf(LOST_MARK, 1) : -1;
        if (end > 1) {
            try {
                lost = Integer.parseInt(error, 1, end, 10);
                error = error.substring(end + 1);
            } catch (NumberFormatException e) {
                // not a count: the text stays the error, as a release before lost attempts read it
            }
        }
        JobRetry retry = null;
        end = !error.isEmpty() && error.charAt(0) == RETRY_MARK ? error.indexOf(RETRY_MARK, 1) : -1;
        if (end > 0) {
            retry = decodeRetry(error.substring(1, end));
            error = error.substring(end + 1);
        }
        String group = null;
        end = !error.isEmpty() && error.charAt(0) == GROUP_MARK ? error.indexOf(GROUP_MARK, 1) : -1;
        if (end > 0) {
            group = error.substring(1, end);
            error = error.substring(end + 1);
        }
        Long timeoutMs = null;
        Long expiresAt = null;
        end = !error.isEmpty() && error.charAt(0) == LIMIT_MARK ? error.indexOf(LIMIT_MARK, 1) : -1;
        int comma = end > 0 ? error.indexOf(',', 1) : -1;
        if (comma > 0 && comma < end) {
            timeoutMs = number(error.substring(1, comma));
            expiresAt = number(error.substring(comma + 1, end));
            error = error.substring(end + 1);
        }
        int priority = DEFAULT_PRIORITY;
        if (error.length() >= 3 && error.charAt(0) == PRIORITY_MARK && error.charAt(2) == PRIORITY_MARK
                && error.charAt(1) >= '1' && error.charAt(1) <= '5') {
            priority = error.charAt(1) - '0';
            error = error.substring(3);
        }
        return new JobRecord(Long.parseLong(head.substring(0, c1), 36), trace, attempts, max, error, payload, lost, retry,
                group, timeoutMs, expiresAt, prefixed > 0 ? prefixed : priority);
    }

    /**
     * The priority a head's prefix gives (see the class comment), 0 when it has none; its runAt's
     * text ends at {@code end}. A '0' that is the whole runAt text is the runAt 0, and a prefix
     * never takes the text's last digit (b36 writes no leading zero but for 0 itself).
     */
    private static int prefixPriority(String head, int end) {
        char first = head.charAt(0);
        if ((first != '+' && first != '0') || (first == '0' && end == 1)) {
            return 0;
        }
        boolean two = end > 2 && head.charAt(1) == '0';
        return first == '+' ? (two ? 5 : 4) : (two ? 1 : 2);
    }

    /** A limit's number as the record keeps it: null when empty, or not a number (read as none). */
    private static Long number(String text) {
        try {
            return text.isEmpty() ? null : Long.valueOf(text);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /**
     * A job's retry backoff as the record keeps it (and the enqueue script takes it):
     * {@code "<initial ms>,<max ms>"}, either left empty when not given; empty for none.
     */
    public static String encodeRetry(JobRetry retry) {
        if (retry == null) {
            return "";
        }
        return (retry.initialMs() == null ? "" : retry.initialMs().toString()) + ","
                + (retry.maxMs() == null ? "" : retry.maxMs().toString());
    }

    /**
     * The inverse of {@link #encodeRetry}; null for none, and for a text that is not two such
     * numbers (read as no override rather than fail a record that is otherwise sound).
     */
    public static JobRetry decodeRetry(String text) {
        int comma = text.indexOf(',');
        if (comma < 0) {
            return null;
        }
        try {
            Long initial = comma == 0 ? null : Long.valueOf(text.substring(0, comma));
            Long max = comma == text.length() - 1 ? null : Long.valueOf(text.substring(comma + 1));
            return JobRetry.of(initial, max);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** A trace context as a record can hold it: 50 lower-case hex digits, else none (empty). */
    public static String storableTrace(String trace) {
        return trace != null && trace.length() == TRACE_LENGTH && trace.chars()
                .allMatch(ch -> (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')) ? trace : "";
    }

    /** The payload as the API shows it: null when the job has none. */
    public String payloadOrNull() {
        return payload.isEmpty() ? null : payload;
    }
}
