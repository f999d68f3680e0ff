package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;

import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/** The recurring schedules' part of the store, driven directly on topics no replica serves. */
class ScheduleStoreTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured();
    private final ScheduleStore schedules = new ScheduleStore(STORE.layer, STORE.queue);

    /** A tick an hour ahead (nothing takes it meanwhile), fired with the overlap check (skip). */
    private static ScheduleStore.TickOutcome fire(ScheduleStore schedules, Partition p, String name, long tick) {
        NewJob job = new NewJob(p.topic(), name + ":" + tick, false, tick, 0, "{}");
        return schedules.tick(p, name, tick, job, true);
    }

    @Test
    void aDeletedScheduleLeavesOnlyItsTickRecordWhileAPausedOneKeepsItsLastTicksJob() {
        String topic = HandBuiltStore.fresh("sched-fence");
        String paused = HandBuiltStore.fresh("paused"), deleted = HandBuiltStore.fresh("deleted");
        Partition p = STORE.queue.partitionsOf(topic).get(0);
        long tick = (System.currentTimeMillis() / 1000 + 3600) * 1000;
        assertTrue(fire(schedules, p, paused, tick).fired());
        assertTrue(fire(schedules, p, deleted, tick).fired());
        String ticks = HandBuiltStore.keysOf(topic) + "ticks";
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(Long.toString(tick), redis.str("HGET", ticks, deleted + ":job"));

            schedules.fenceTicks(paused, topic, tick + 1000); // as a pause does
            schedules.fenceTicks(deleted, topic, tick + 1000, true); // as a deletion does

            // Paused: the overlap check still finds its last tick's job when it is resumed.
            assertEquals(Long.toString(tick), redis.str("HGET", ticks, paused + ":job"));
            assertEquals(Long.toString(tick + 1000), redis.str("HGET", ticks, paused));
            // Deleted: only the record that fences its ticks off stays.
            assertNull(redis.str("HGET", ticks, deleted + ":job"));
            assertEquals(Long.toString(tick + 1000), redis.str("HGET", ticks, deleted));
            assertFalse(fire(schedules, p, deleted, tick + 1000).fired(), "a tick up to the fence is refused");
            assertNull(redis.str("HGET", ticks, deleted + ":job"));
            assertNotNull(redis.str("HGET", ticks, paused + ":job"));
        }
    }

    /**
     * Two replicas change one schedule at once, each reading the definition and writing its change
     * back (a PUT and a pause): the one whose read is stale writes nothing, reads again and writes
     * its change on top of the other's; neither change is lost. A create races the same way.
     */
    @Test
    void twoInterleavedWritersOfOneScheduleLoseNeitherChange() {
        String name = HandBuiltStore.fresh("sched-cas");
        String v1 = "{\"every\":\"1h\",\"topic\":\"t\"}";
        assertEquals(Optional.of(true), schedules.putScheduleIf(name, null, v1));
        // A second create that read no schedule: there is one now.
        assertEquals(Optional.empty(), schedules.putScheduleIf(name, null, "{\"every\":\"5m\",\"topic\":\"t\"}"));

        // Both read v1; the pause writes first.
        String readByPut = schedules.scheduleDefinition(name);
        String readByPause = schedules.scheduleDefinition(name);
        String paused = "{\"every\":\"1h\",\"topic\":\"t\",\"paused\":true}";
        assertEquals(Optional.of(false), schedules.putScheduleIf(name, readByPause, paused));
        // The PUT's read is stale: nothing written, the pause stays.
        assertEquals(Optional.empty(), schedules.putScheduleIf(name, readByPut, "{\"every\":\"2h\",\"topic\":\"t\"}"));
        assertEquals(paused, schedules.scheduleDefinition(name));
        // Read again, the PUT keeps the pause (as Schedules.put does) and is written.
        String again = schedules.scheduleDefinition(name);
        String changed = "{\"every\":\"2h\",\"topic\":\"t\",\"paused\":true}";
        assertEquals(Optional.of(false), schedules.putScheduleIf(name, again, changed));
        assertEquals(changed, schedules.scheduleDefinition(name));

        // A write that read the schedule after another replica deleted it: it was not there.
        schedules.deleteSchedule(name);
        assertEquals(Optional.empty(), schedules.putScheduleIf(name, changed, v1));
        assertNull(schedules.scheduleDefinition(name));
    }
}
