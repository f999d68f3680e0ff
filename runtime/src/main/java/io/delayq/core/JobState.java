package io.delayq.core;

import com.fasterxml.jackson.annotation.JsonValue;

/** Where a job is: waiting for its runAt, leased to a replica, or in the dead set. */
public enum JobState {
    SCHEDULED, INFLIGHT, DEAD;

    @JsonValue
    public String json() {
        return name().toLowerCase();
    }

    /** Decodes the one-letter state the Lua scripts return. */
    public static JobState ofLetter(String letter) {
        return switch (letter) {
            case "i" -> INFLIGHT;
            case "d" -> DEAD;
            default -> SCHEDULED;
        };
    }
}
