package io.delayq.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** An HTTP target's JSON body, kept as its job's result: compacted, its numbers as they were sent. */
class CompactJsonTest {
    @Test
    void numbersKeepTheirTextAndWhitespaceGoes() {
        assertEquals("{\"a\":1e5,\"b\":12.50,\"c\":[-0.0,12345678901234567890123,1E-7],\"d\":{\"e\":\"x y\\n\"}}",
                HttpTargetHandler.compactJson(" {\n \"a\" : 1e5, \"b\": 12.50, \"c\": [ -0.0, 12345678901234567890123, 1E-7 ],"
                        + " \"d\": {\"e\": \"x y\\n\"} }\r\n"));
        assertEquals("42", HttpTargetHandler.compactJson(" 42 "));
        assertEquals("\"caf\u00e9\"", HttpTargetHandler.compactJson("\"caf\u00e9\""));
        assertEquals("null", HttpTargetHandler.compactJson("null"));
        assertEquals("[]", HttpTargetHandler.compactJson("[ ]"));
    }

    @Test
    void aBodyThatIsNotExactlyOneJsonValueIsNone() {
        assertNull(HttpTargetHandler.compactJson(""));
        assertNull(HttpTargetHandler.compactJson("   "));
        assertNull(HttpTargetHandler.compactJson("{\"a\":1"), "cut short");
        assertNull(HttpTargetHandler.compactJson("{\"a\":1} {\"b\":2}"), "two values");
        assertNull(HttpTargetHandler.compactJson("1 2"), "two values");
        assertNull(HttpTargetHandler.compactJson("{\"a\":NaN}"), "not JSON");
        assertNull(HttpTargetHandler.compactJson("{'a':1}"), "not JSON");
        assertNull(HttpTargetHandler.compactJson("[1,]"), "not JSON");
        assertNull(HttpTargetHandler.compactJson("{\"a\":1}}"), "a stray end");
    }
}
