package io.delayq.security;

import java.util.Optional;

import io.quarkus.security.identity.SecurityIdentity;

/**
 * delayq's roles, each including the ones before it: a producer may do what a viewer may, an
 * operator everything. Any Quarkus identity provider supplies them (embedded users, OIDC/JWT
 * claims, {@code delayq.api.token}); {@link AccessRules} says which one a request needs.
 */
public enum DelayqRole {
    /** Reads: jobs, topics, dead sets, schedules, the dashboard's pages. */
    VIEWER("delayq-viewer"),
    /** Also enqueues, batches, cancels and reschedules jobs. */
    PRODUCER("delayq-producer"),
    /** Everything: dead-set requeue and purge, pause and resume, rate limits, schedules. */
    OPERATOR("delayq-operator");

    private final String roleName;

    DelayqRole(String roleName) {
        this.roleName = roleName;
    }

    /** The role name an identity carries ({@code delayq-viewer}, ...). */
    public String roleName() {
        return roleName;
    }

    /** Whether holding this role is enough for a request that needs {@code required}. */
    public boolean includes(DelayqRole required) {
        return compareTo(required) >= 0;
    }

    /** The highest delayq role the identity holds; empty for an anonymous identity or one without any. */
    public static Optional<DelayqRole> of(SecurityIdentity identity) {
        if (identity == null || identity.isAnonymous()) {
            return Optional.empty();
        }
        DelayqRole[] all = values();
        for (int i = all.length - 1; i >= 0; i--) {
            if (identity.hasRole(all[i].roleName)) {
                return Optional.of(all[i]);
            }
        }
        return Optional.empty();
    }
}
