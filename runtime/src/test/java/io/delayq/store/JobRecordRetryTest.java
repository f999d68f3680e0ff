package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

import io.delayq.core.JobRetry;

/**
 * A job's own retry backoff in its record's error field (after the trace context and the lost
 * attempts), and the records written before it: they read as following their topic.
 */
class JobRecordRetryTest {
    private static final String TRACE = "0af7651916cd43dd8448eb211c80319c" + "b7ad6b7169203331" + "01";

    @Test
    void aRecordOfAReleaseBeforeTheOverrideReadsAsFollowingItsTopic() {
        JobRecord r = JobRecord.decode("kx2,2,5,\u001e" + TRACE + "\u001f1\u001fboom, again\n{\"a\":1}");
        assertNull(r.retry());
        assertEquals(TRACE, r.trace());
        assertEquals(1, r.lostAttempts());
        assertEquals("boom, again", r.lastError());
        assertNull(JobRecord.decode("kx2\n{}").retry());
        assertNull(JobRecord.decode("kx2,0,3\n{}").retry());
    }

    @Test
    void theOverrideRidesAfterTraceAndLostAttemptsAndBeforeTheError() {
        JobRecord r = JobRecord.decode("kx2,3,0,\u001e" + TRACE + "\u001f2\u001f\u001d200,400\u001dboom\n[1]");
        assertEquals(new JobRetry(200L, 400L), r.retry());
        assertEquals(TRACE, r.trace());
        assertEquals(2, r.lostAttempts());
        assertEquals("boom", r.lastError());
        assertEquals("[1]", r.payload());
        JobRecord fresh = JobRecord.decode("kx2,0,0,\u001d,400\u001d\n{}");
        assertEquals(new JobRetry(null, 400L), fresh.retry());
        assertEquals("", fresh.lastError());
        assertEquals(new JobRetry(200L, null), JobRecord.decode("kx2,0,0,\u001d200,\u001d\n{}").retry());
    }

    @Test
    void encodedAsTheEnqueueScriptTakesIt() {
        assertEquals("", JobRecord.encodeRetry(null));
        assertEquals("200,400", JobRecord.encodeRetry(new JobRetry(200L, 400L)));
        assertEquals(",400", JobRecord.encodeRetry(new JobRetry(null, 400L)));
        assertEquals("200,", JobRecord.encodeRetry(new JobRetry(200L, null)));
    }

    @Test
    void anUnreadableOverrideIsNoneAndTheErrorStaysReadable() {
        JobRecord r = JobRecord.decode("kx2,1,0,\u001dx,y\u001dboom\n{}");
        assertNull(r.retry());
        assertEquals("boom", r.lastError());
    }
}
