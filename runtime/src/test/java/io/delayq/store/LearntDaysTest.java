package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

/** What a taker keeps of a take's shard codes for the next take (JobQueue.keepLearnt). */
class LearntDaysTest {

    private static final Set<Integer> AROUND = Set.of(20261206, 20261207, 20261208);

    @Test
    void keepsOlderPlainDaysAndTheLaneCodesOfTheDaysAroundNow() {
        Set<Integer> days = new TreeSet<>(AROUND);
        days.add(20261120); // a plain backlog day a script named
        days.add(Keys.laneCode(1, 20261207)); // today's, added to a grouped topic's steps
        days.add(Keys.laneCode(5, 20261208)); // tomorrow's, named under a group rate limit
        days.add(Keys.laneCode(2, 20261206));
        JobQueue.keepLearnt(days, AROUND);
        assertEquals(new TreeSet<>(Set.of(20261120, Keys.laneCode(1, 20261207), Keys.laneCode(5, 20261208),
                Keys.laneCode(2, 20261206))), days);
    }

    @Test
    void dropsLaneCodesOfDaysBeforeYesterdaySoThatTheyDoNotPileUpDayAfterDay() {
        Set<Integer> days = new TreeSet<>(AROUND);
        for (int d = 20261101; d <= 20261205; d++) {
            for (int lane : new int[] { 1, 2, 4, 5 }) {
                days.add(Keys.laneCode(lane, d));
            }
        }
        days.add(20261101);
        JobQueue.keepLearnt(days, AROUND);
        assertEquals(Set.of(20261101), days);
    }

    @Test
    void clearsTheSetAboveItsBound() {
        Set<Integer> days = new TreeSet<>();
        for (int i = 0; i <= JobQueue.MAX_OLDER_DAYS; i++) {
            days.add(20200101 + i);
        }
        JobQueue.keepLearnt(days, AROUND);
        assertEquals(Set.of(), days);
    }
}
