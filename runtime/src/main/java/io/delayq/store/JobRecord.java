package io.delayq.store;

/**
 * A job record as stored in the jobs hash:
 * {@code <runAt base36>[;<trace>][,<attempts>,<maxAttempts>[,<lastError>]]\n<payload>}.
 * The Lua side of the same format is {@code encode}/{@code decode} in {@code lib.lua}.
 *
 * @param trace the W3C trace context of the enqueue as 32 + 16 + 2 hex digits (trace id, span
 *        id, flags), empty when the job was enqueued in no trace
 * @param maxAttempts 0 = the topic's default
 * @param lastError empty when none
 * @param payload compact JSON, empty when the job has none
 */
public record JobRecord(long runAt, String trace, int attempts, int maxAttempts, String lastError, String payload) {

    public static JobRecord decode(String record) {
        int nl = record.indexOf('\n');
        String head = record.substring(0, nl);
        String payload = record.substring(nl + 1);
        int c1 = head.indexOf(',');
        String first = c1 < 0 ? head : head.substring(0, c1);
        int sc = first.indexOf(';');
        long runAt = Long.parseLong(sc < 0 ? first : first.substring(0, sc), 36);
        String trace = sc < 0 ? "" : first.substring(sc + 1);
        if (c1 < 0) {
            return new JobRecord(runAt, trace, 0, 0, "", payload);
        }
        int c2 = head.indexOf(',', c1 + 1);
        int c3 = head.indexOf(',', c2 + 1);
        int attempts = Integer.parseInt(head.substring(c1 + 1, c2));
        int max = Integer.parseInt(c3 < 0 ? head.substring(c2 + 1) : head.substring(c2 + 1, c3));
        String error = c3 < 0 ? "" : head.substring(c3 + 1);
        return new JobRecord(runAt, trace, attempts, max, error, payload);
    }

    /** The payload as the API shows it: null when the job has none. */
    public String payloadOrNull() {
        return payload.isEmpty() ? null : payload;
    }
}
