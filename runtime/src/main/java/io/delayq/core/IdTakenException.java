package io.delayq.core;

/**
 * An enqueue refused because its id is already a job of the topic in another partition: the job
 * lives where its group put it, and an id is one job per topic while it exists (see
 * {@link JobRequest#group}). Enqueuing the id with the group it has (or, for a job of no group,
 * with none) answers the existing job as usual; after the job ended, any group will do. The REST
 * API answers 409 naming {@code group} (in a batch, the item's). Nothing of the call was written.
 *
 * <p>{@link #retryable()}: the id was refused only because an enqueue of it with a group is on its
 * way elsewhere (a claim written at most 30 s ago whose job is not there yet, see the concepts
 * guide): the same call may be accepted later (when that enqueue never lands, once its window has
 * passed), so a caller that must not lose the job tries again rather than drop it.
 */
public class IdTakenException extends InvalidJobException {
    private static final long serialVersionUID = 1L;
    private final String id;
    private final String existingGroup;
    private final boolean retryable;

    /** {@code existingGroup}: the group of the job that has the id, "" for none. */
    public IdTakenException(String id, String existingGroup) {
        this("group", id, existingGroup, false);
    }

    /** As above; {@code retryable}: refused only by an enqueue of the id still on its way (no job has it yet). */
    public IdTakenException(String id, String existingGroup, boolean retryable) {
        this("group", id, existingGroup, retryable);
    }

    private IdTakenException(String field, String id, String existingGroup, boolean retryable) {
        super(field, retryable
                ? "job " + id + " is being enqueued with " + (existingGroup.isEmpty() ? "no group" : "group " + existingGroup)
                        + " elsewhere: an id is one job per topic, try again later"
                : "job " + id + " exists with " + (existingGroup.isEmpty() ? "no group" : "group " + existingGroup)
                        + ": an id is one job per topic, enqueue it " + (existingGroup.isEmpty() ? "with no group"
                                : "with group " + existingGroup) + " or once that job ended", 409);
        this.id = id;
        this.existingGroup = existingGroup;
        this.retryable = retryable;
    }

    /** The id refused. */
    public String id() {
        return id;
    }

    /** The group of the job that has the id ("" = none). */
    public String existingGroup() {
        return existingGroup;
    }

    /** Whether only an enqueue of the id still on its way refused it: the same call may be accepted later. */
    public boolean retryable() {
        return retryable;
    }

    @Override
    public IdTakenException inItem(String prefix) {
        return new IdTakenException(prefix + "." + field(), id, existingGroup, retryable);
    }
}
