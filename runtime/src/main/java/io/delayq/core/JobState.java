package io.delayq.core;

import com.fasterxml.jackson.annotation.JsonValue;

/**
 * Where a job is: waiting for its runAt, leased to a replica, in the dead set, or (on a topic with
 * a dedup window, {@code delayq.topics.<t>.dedup-window}) succeeded within that window.
 */
public enum JobState {
    SCHEDULED, INFLIGHT, DEAD, SUCCEEDED;

    @JsonValue
    public String json() {
        return name().toLowerCase();
    }

    /** Decodes the one-letter state the Lua scripts return ("x": in flight, cancelling). */
    public static JobState ofLetter(String letter) {
        return switch (letter) {
            case "i", "x" -> INFLIGHT;
            case "d" -> DEAD;
            case "c" -> SUCCEEDED;
            default -> SCHEDULED;
        };
    }

    /** Whether a state letter the Lua scripts return says "in flight, its cancel asked". */
    public static boolean cancellingLetter(String letter) {
        return "x".equals(letter);
    }
}
