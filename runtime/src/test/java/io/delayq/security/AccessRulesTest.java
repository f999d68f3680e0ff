package io.delayq.security;

import static io.delayq.security.DelayqRole.OPERATOR;
import static io.delayq.security.DelayqRole.PRODUCER;
import static io.delayq.security.DelayqRole.VIEWER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

/** The rule table, endpoint by endpoint: the API of today, the flow-control and dashboard endpoints to come. */
class AccessRulesTest {
    @Test
    void eachEndpointNeedsItsRole() {
        Map<String, DelayqRole> expected = new LinkedHashMap<>();
        expected.put("POST /jobs", PRODUCER);
        expected.put("POST /jobs/batch", PRODUCER);
        expected.put("GET /jobs/order-close/order-42", VIEWER);
        expected.put("DELETE /jobs/order-close/order-42", PRODUCER);
        expected.put("PATCH /jobs/order-close/order-42", PRODUCER);
        expected.put("GET /topics", VIEWER);
        expected.put("GET /topics/order-close/dead", VIEWER);
        expected.put("POST /topics/order-close/dead/order-42/requeue", OPERATOR);
        expected.put("DELETE /topics/order-close/dead/order-42", OPERATOR);
        expected.put("POST /topics/order-close/pause", OPERATOR);
        expected.put("POST /topics/order-close/resume", OPERATOR);
        expected.put("PUT /topics/order-close/rate-limit", OPERATOR);
        expected.put("DELETE /topics/order-close/rate-limit", OPERATOR);
        expected.put("GET /schedules", VIEWER);
        expected.put("GET /schedules/nightly", VIEWER);
        expected.put("PUT /schedules/nightly", OPERATOR);
        expected.put("DELETE /schedules/nightly", OPERATOR);
        expected.put("POST /schedules/nightly/trigger", OPERATOR);
        expected.put("POST /schedules/nightly/pause", OPERATOR);
        expected.put("POST /schedules/nightly/resume", OPERATOR);
        expected.put("POST /schedules/nightly/backfill", OPERATOR);
        expected.put("POST /delayq/schedules/nightly/pause", OPERATOR);
        expected.put("POST /delayq/schedules/nightly/resume", OPERATOR);
        expected.put("GET /delayq", VIEWER);
        expected.put("GET /delayq/topics/order-close", VIEWER);
        expected.put("GET /delayq/job", VIEWER);
        expected.put("HEAD /delayq/fragments/topics", VIEWER);
        expected.put("POST /delayq/topics/order-close/jobs/order-42/cancel", PRODUCER);
        expected.put("POST /delayq/topics/order-close/jobs/order-42/run-now", PRODUCER);
        expected.put("POST /delayq/topics/order-close/dead/requeue-all", OPERATOR);
        expected.put("POST /delayq/topics/order-close/dead/order-42/purge", OPERATOR);
        expected.put("POST /delayq/schedules/nightly/trigger", OPERATOR);
        expected.put("POST /delayq/topics/order-close/dead/order-42/requeue", OPERATOR);
        expected.put("POST /delayq/topics/order-close/pause", OPERATOR);
        expected.forEach((request, role) -> {
            String[] r = request.split(" ");
            assertEquals(role, AccessRules.required(r[0], r[1]), request);
        });
    }

    @Test
    void anythingUnlistedThatChangesStateNeedsAnOperator() {
        assertEquals(OPERATOR, AccessRules.required("POST", "/jobs/order-close/order-42"));
        assertEquals(OPERATOR, AccessRules.required("DELETE", "/jobs/order-close"));
        assertEquals(OPERATOR, AccessRules.required("POST", "/jobs/batch/more"));
        assertEquals(OPERATOR, AccessRules.required("PUT", "/jobs/order-close/order-42"));
        assertEquals(OPERATOR, AccessRules.required("POST", "/delayq/topics/order-close/jobs/order-42/cancel/now"));
    }

    @Test
    void pathsAreMatchedSegmentBySegment() {
        assertEquals(PRODUCER, AccessRules.required("post", "//jobs/"));
        assertEquals(PRODUCER, AccessRules.required("DELETE", "/jobs/order-close/order-42/"));
        assertEquals(OPERATOR, AccessRules.required("POST", "/jobsx"));
    }

    @Test
    void rolesIncludeTheOnesBelow() {
        assertTrue(OPERATOR.includes(PRODUCER) && OPERATOR.includes(VIEWER) && PRODUCER.includes(VIEWER));
        assertFalse(VIEWER.includes(PRODUCER) || PRODUCER.includes(OPERATOR));
        assertEquals("delayq-operator", OPERATOR.roleName());
    }
}
