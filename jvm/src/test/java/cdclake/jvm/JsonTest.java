package cdclake.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The fast path's JSON reading, which must give the Python decoders' text for every value
 * (the equivalence over whole messages is tested from Python: tests/formats/test_jvm_properties.py).
 */
class JsonTest {
    private static Map<?, ?> object(String json) {
        return (Map<?, ?>) Json.parse(json.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void numbersKeepEveryDigit() {
        Map<?, ?> values = object("{\"big\": 18446744073709551616, \"dec\": 12345678901234567890.1234567890, "
                + "\"exp\": 1.5E+3, \"neg\": -0.000001}");
        Map<String, String> expected = new LinkedHashMap<>();
        expected.put("big", "18446744073709551616");
        expected.put("dec", "12345678901234567890.1234567890");
        expected.put("exp", "1500");
        expected.put("neg", "-0.000001");
        assertEquals(expected, Json.untypedImage(values));
    }

    @Test
    void aNegativeZeroDecimalIsDeclined() {
        assertNull(Json.untypedImage(object("{\"z\": -0.0}")));
    }

    @Test
    void nestedValuesBecomeCompactJsonAndStringsStayAsSent() {
        Map<?, ?> values = object("{\"doc\": {\"a\": [1, 2.50, \"x\"], \"b\": null}, \"s\": \"caf\\u00e9\"}");
        assertEquals("{\"a\":[1,2.50,\"x\"],\"b\":null}", Json.untypedText(values.get("doc")));
        assertEquals("café", Json.untypedText(values.get("s")));
    }

    @Test
    void textPythonWouldNotReadIsLeftToPython() {
        assertNull(Json.parse(new byte[] {'{', '"', 'a', '"', ':', '"', (byte) 0xff, '"', '}'}));
        assertNull(Json.parse("\ufeff{}".getBytes(StandardCharsets.UTF_8)));
        assertSame(Json.UNREADABLE, Json.parseValue("{\"a\": 1, \"a\": 2}"));
    }
}
