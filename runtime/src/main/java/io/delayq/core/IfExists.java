package io.delayq.core;

import com.fasterxml.jackson.annotation.JsonValue;

/**
 * What an enqueue does when its id exists ({@code "ifExists"} over REST,
 * {@link JobRequest#ifExists(IfExists)} from Java). A job in flight is never changed: with
 * {@link #REPLACE} or {@link #EXTEND} it is answered as it is, state {@link JobState#INFLIGHT}
 * (REST: 409). An id that is dead, or remembered by the topic's dedup window, is enqueued anew by
 * both (a new job, attempts 0).
 */
public enum IfExists {
    /** The default: the existing job is answered as it is, nothing changes (idempotent enqueue). */
    KEEP("k"),
    /** A scheduled job takes the new payload, runAt, maxAttempts and retry; its attempts so far stay. */
    REPLACE("r"),
    /**
     * As {@link #REPLACE}, but the runAt only ever moves later (a debounce: "30 minutes after the
     * last activity" is one {@code extend} with a 30-minute delay per activity).
     */
    EXTEND("e");

    private final String letter;

    IfExists(String letter) {
        this.letter = letter;
    }

    @JsonValue
    public String json() {
        return name().toLowerCase();
    }

    /** The letter the enqueue script takes. */
    public String letter() {
        return letter;
    }

    /** The value as the REST API spells it ({@code keep}, {@code replace}, {@code extend}), else null. */
    public static IfExists ofJson(String value) {
        for (IfExists v : values()) {
            if (v.json().equals(value)) {
                return v;
            }
        }
        return null;
    }
}
