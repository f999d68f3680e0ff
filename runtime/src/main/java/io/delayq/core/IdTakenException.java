package io.delayq.core;

/**
 * An enqueue refused because its id is already a job of the topic in another partition: the job
 * lives where its group put it, and an id is one job per topic while it exists (see
 * {@link JobRequest#group}). Enqueuing the id with the group it has (or, for a job of no group,
 * with none) answers the existing job as usual; after the job ended, any group will do. The REST
 * API answers 409 naming {@code group} (in a batch, the item's). Nothing of the call was written.
 */
public class IdTakenException extends InvalidJobException {
    private static final long serialVersionUID = 1L;
    private final String id;
    private final String existingGroup;

    /** {@code existingGroup}: the group of the job that has the id, "" for none. */
    public IdTakenException(String id, String existingGroup) {
        this("group", id, existingGroup);
    }

    private IdTakenException(String field, String id, String existingGroup) {
        super(field, "job " + id + " exists with " + (existingGroup.isEmpty() ? "no group" : "group " + existingGroup)
                + ": an id is one job per topic, enqueue it " + (existingGroup.isEmpty() ? "with no group"
                        : "with group " + existingGroup) + " or once that job ended", 409);
        this.id = id;
        this.existingGroup = existingGroup;
    }

    /** The id refused. */
    public String id() {
        return id;
    }

    /** The group of the job that has the id ("" = none). */
    public String existingGroup() {
        return existingGroup;
    }

    @Override
    public IdTakenException inItem(String prefix) {
        return new IdTakenException(prefix + "." + field(), id, existingGroup);
    }
}
