package io.delayq.store;

/** A job held by this replica: its id and the token that proves the lease is still ours. */
public record Lease(String id, String token) {
}
