package io.delayq.store;

/**
 * A job record as stored in the jobs hash: {@code <runAt base36>[,<attempts>,<maxAttempts>[,<lastError>]]\n<payload>}.
 * The Lua side of the same format is {@code encode}/{@code decode} in {@code lib.lua}.
 *
 * @param maxAttempts 0 = the topic's default
 * @param lastError empty when none
 * @param payload compact JSON, empty when the job has none
 */
public record JobRecord(long runAt, int attempts, int maxAttempts, String lastError, String payload) {

    public static JobRecord decode(String record) {
        int nl = record.indexOf('\n');
        String head = record.substring(0, nl);
        String payload = record.substring(nl + 1);
        int c1 = head.indexOf(',');
        if (c1 < 0) {
            return new JobRecord(Long.parseLong(head, 36), 0, 0, "", payload);
        }
        int c2 = head.indexOf(',', c1 + 1);
        int c3 = head.indexOf(',', c2 + 1);
        int attempts = Integer.parseInt(head.substring(c1 + 1, c2));
        int max = Integer.parseInt(c3 < 0 ? head.substring(c2 + 1) : head.substring(c2 + 1, c3));
        String error = c3 < 0 ? "" : head.substring(c3 + 1);
        return new JobRecord(Long.parseLong(head.substring(0, c1), 36), attempts, max, error, payload);
    }

    /** The payload as the API shows it: null when the job has none. */
    public String payloadOrNull() {
        return payload.isEmpty() ? null : payload;
    }
}
